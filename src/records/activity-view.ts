/**
 * `mcpguard activity [SESSION]`: one session's calls and rejected frames,
 * newest first (activity-newest.ts streams them from the end of the log),
 * filtered by state, tool, failure and time.
 */
import type { ActivityRow } from './activity.js';
import { activityRowsNewestFirst } from './activity-newest.js';
import { FAILED_STATES, passes, type Predicate } from './filters.js';
import { formatDuration, StreamingTable, type Colour, type Column } from './format.js';
import { emit, notFound, pickSession, titleLine, warnUnreadable, type ViewContext } from './view-kit.js';
import { logEnds, sessionRow } from './views.js';

function columns(zone: string): Column[] {
  return [
    { header: 'CALL' },
    { header: `TIME ${zone}` },
    { header: 'METHOD', clip: 'end', min: 10, shrink: 0 },
    { header: 'TOOL', clip: 'end', min: 12, shrink: 1 },
    { header: 'STATE', clip: 'end', min: 16, shrink: 2 },
    { header: 'STDERR SEEN/KEPT', drop: 1 },
    { header: 'DURATION', drop: 2 },
  ];
}

const SINCE_SLACK_MS = 1000;

/** What `activity` was asked for besides the session. */
export interface ActivityQuery {
  session: string | undefined;
  filters: Array<Predicate<ActivityRow>>;
  limit: number | null;
  /** --since as milliseconds: rows come newest first, so the first row well before it ends the listing (the filters hold the exact test). */
  since: number | null;
}

export async function activityView(ctx: ViewContext, q: ActivityQuery): Promise<number> {
  const ref = pickSession(ctx.logs, q.session, ctx.dir);
  if (typeof ref === 'string') return notFound(ctx.io, ref);
  const ends = logEnds(ref.file);
  const ended = ends.seal !== undefined || ends.end !== undefined;
  const unreadable: number[] = [];
  const rows = activityRowsNewestFirst(ref.file, ref.sessionId, ended, !ctx.json, (line) => unreadable.push(line));
  let grid: StreamingTable | null = null;
  if (!ctx.json) {
    const start = sessionRow({ ...ends, unreadable: [], sealed: ends.seal !== undefined, records: 0, calls: 0, rejected: 0 });
    ctx.output.write(titleLine(`session ${ref.sessionId}  ${start.name}${start.probe ? ' (probe)' : ''}  ${ctx.clock.full(start.started_at)}`, ref.file, ctx.style.width));
    grid = new StreamingTable(columns(ctx.clock.zone), ctx.style);
  }
  let shown = 0;
  try {
    for (const row of rows) {
      if (q.limit !== null && shown >= q.limit) break;
      // A record written at once goes ahead of deferred ones a few milliseconds older: stop a second past --since.
      if (q.since !== null && row.time !== null && Date.parse(row.time) < q.since - SINCE_SLACK_MS) break;
      if (!passes(row, q.filters)) continue;
      shown++;
      const text = grid === null ? `${JSON.stringify(row)}\n` : grid.add(...activityCells(row, ctx));
      if (!await emit(ctx.output, text)) return 0;
    }
  } finally {
    rows.return(undefined); // closes the log when the listing stops early
  }
  if (grid !== null) ctx.output.write(grid.end());
  warnUnreadable(ref.file, unreadable, ctx.io);
  return 0;
}

/** A row's cells, its colours, and its reason on a line of its own (a long reason would widen every row). */
function activityCells(r: ActivityRow, ctx: ViewContext): [string[], { colours: Array<Colour | undefined>; notes: string[] }] {
  const time = ctx.clock.clock(r.time);
  if (r.kind === 'reject') {
    const code = r.code !== null ? ` (${String(r.code)})` : '';
    return [['(rejected)', time, '-', '-', `from ${r.direction ?? '?'}`, '-', '-'],
      { colours: [undefined, undefined, undefined, undefined, 'yellow'], notes: [`${r.reason ?? '?'}${code}`] }];
  }
  const state = r.legs !== undefined && r.legs > 1 ? `${r.state} → ${r.chain_state!} (${r.legs} legs)` : r.state;
  const failed = FAILED_STATES.has(r.state) || (r.chain_state !== undefined && FAILED_STATES.has(r.chain_state));
  const notes = r.detail !== null && r.state !== 'tool_error' && (failed || r.state.startsWith('cancelled_'))
    ? [r.detail.split('\n')[0]!] : [];
  return [[
    r.leg !== null && r.leg > 1 ? `  ↳ ${r.call_id}` : r.call_id, time, r.method ?? '-', r.tool ?? '-', state,
    r.stderr_bytes_seen === null ? '-' : `${r.stderr_bytes_seen}/${r.stderr_bytes_retained ?? '-'}${r.stderr_truncated ? ' truncated' : ''}`,
    formatDuration(r.duration_ms),
  ], { colours: [undefined, undefined, undefined, undefined, failed ? 'red' : r.state === 'open' ? 'yellow' : undefined], notes }];
}
