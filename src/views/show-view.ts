/**
 * `mcpguard show SESSION|CALL`: a session (any unique prefix of its id, or
 * its log file's path) as show.ts describes it, or every record a call left,
 * field by field. Session ids and call ids have different prefixes (`s_`,
 * `c_`), so a prefix names sessions first. `last` is the newest session.
 */
import type { LogRecord } from '../records/chain.js';
import { jsonLine } from '../mask/escape.js';
import { fieldLine, printable } from './format.js';
import { liveness } from '../records/live.js';
import { showSession } from './show.js';
import { emit, looksLikePath, NEWEST, notFound, pickSession, titleLine, warnUnreadable, type ViewContext } from './view-kit.js';
import { findCall, summarizeLog } from './views.js';
import type { Clock } from './when.js';
import { isObject } from '../base/values.js';

export async function showView(ctx: ViewContext, wanted: string): Promise<number> {
  const { logs, output, io, dir, json } = ctx;
  if (looksLikePath(wanted) || wanted === NEWEST || wanted.startsWith('s_') || (!wanted.startsWith('c_') && logs.some((l) => l.sessionId.startsWith(wanted)))) {
    const ref = pickSession(logs, wanted, dir);
    if (typeof ref === 'string') return notFound(io, ref);
    const log = summarizeLog(ref.file);
    warnUnreadable(ref.file, log.unreadable, io);
    output.write(showSession(log, json, ctx.clock, ctx.style.width, log.sealed ? null : liveness(log.start)));
    return 0;
  }
  const found = findCall(logs, wanted);
  if ('none' in found) return notFound(io, `no ${wanted.startsWith('c_') ? 'call' : 'session or call'} '${printable(wanted)}' in '${dir}'`);
  if ('ambiguous' in found) {
    return notFound(
      io,
      `'${printable(wanted)}' matches ${found.ambiguous.length >= 20 ? 'many' : found.ambiguous.length} calls (${found.ambiguous.slice(0, 3).join(', ')}${found.ambiguous.length > 3 ? ', ...' : ''}); give more of the id`,
    );
  }
  if (json) {
    for (const r of found.records) if (!(await emit(output, `${jsonLine(r)}\n`))) return 0;
    return 0;
  }
  output.write(titleLine(`call ${printable(found.callId)} in session ${found.log.sessionId}`, found.log.file, ctx.style.width));
  for (const record of found.records) {
    output.write(`\n#${String(record.seq)}  ${ctx.clock.fullMs(typeof record.ts === 'string' ? record.ts : null)}  ${printable(String(record.type))}\n`);
    if (!(await emit(output, fields(record, ctx.clock, ctx.style.width)))) return 0;
  }
  return 0;
}

const CHAIN_ONLY = new Set(['seq', 'ts', 'type', 'prev', 'hash', 'call_id']);

/**
 * One line per field, names aligned; times (`*_at`) in the view's zone, to
 * the millisecond (a call's times are often within one second). Fields
 * without a value (null, '', [] or {}) are left out: --json has them all.
 * The decision is spread into its own fields, its policy rule counted from 1
 * as the refusal text counts it (the record keeps the 0-based index), a
 * session grant that allowed the call in words. A value
 * too long for the terminal goes on its own lines below its name, wrapped,
 * rather than past the right edge.
 */
function fields(record: LogRecord, clock: Clock, width: number | null): string {
  const shown: Array<[string, unknown]> = [];
  for (const k of Object.keys(record)
    .filter((key) => !CHAIN_ONLY.has(key))
    .sort()) {
    const v = record[k];
    if (k === 'decision' && isObject(v)) {
      for (const [dk, dv] of Object.entries(v))
        shown.push([
          `decision.${dk}`,
          dk === 'rule' && typeof dv === 'number' ? `policy rule ${dv + 1}` : dk === 'grant' && isObject(dv) ? grantText(dv, clock) : dv,
        ]);
    } else shown.push([k, v]);
  }
  const kept = shown.filter(([, v]) => !empty(v));
  const pad = Math.max(0, ...kept.map(([k]) => k.length));
  return kept
    .map(([k, v]) =>
      fieldLine(
        k,
        pad,
        k.endsWith('_at') && typeof v === 'string' && !Number.isNaN(Date.parse(v)) ? clock.fullMs(v) : typeof v === 'string' ? v : JSON.stringify(v),
        width,
      ),
    )
    .join('');
}

/** A session grant that allowed the call, in words: `session-tool grant of call c_… (elicitation, 2026-…)`. */
function grantText(grant: Record<string, unknown>, clock: Clock): string {
  const at = typeof grant.granted_at === 'string' ? clock.fullMs(grant.granted_at) : '?';
  return `${String(grant.scope)} grant of call ${String(grant.call_id)} (${String(grant.channel)}, ${at})`;
}

function empty(v: unknown): boolean {
  return v === null || v === undefined || v === '' || (Array.isArray(v) && v.length === 0) || (isObject(v) && Object.keys(v).length === 0);
}
