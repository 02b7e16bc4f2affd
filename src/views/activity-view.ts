/**
 * `mcpguard activity [SESSION]`: one session's calls and rejected frames,
 * newest first (activity-newest.ts streams them from the end of the log),
 * filtered by state, tool, failure and time.
 */
import { statSync } from 'node:fs';
import { activityRows, type ActivityRow, type Plan } from './activity.js';
import { activityRowsNewestFirst } from './activity-newest.js';
import { liveness } from '../records/live.js';
import { FAILED_STATES, passes, type Predicate } from './filters.js';
import { jsonLine } from '../mask/escape.js';
import { formatDuration, StreamingTable, type Colour, type Column } from './format.js';
import { emit, notFound, pickSession, titleLine, warnUnreadable, type ViewContext } from './view-kit.js';
import { logEnds, sessionRow } from './views.js';
import { approvalNote } from './approval-facts.js';

/** The columns; GEN (the server generation a call went to) only for a session whose server was restarted. */
function columns(zone: string, restarted: boolean): Column[] {
  return [
    { header: 'CALL' },
    { header: `TIME ${zone}` },
    ...(restarted ? [{ header: 'GEN', drop: 3 }] : []),
    { header: 'METHOD', clip: 'end', min: 10, shrink: 0 },
    { header: 'TOOL', clip: 'end', min: 12, shrink: 1 },
    { header: 'STATE', clip: 'end', min: 16, shrink: 2, last: true }, // the word a person looks for: other columns give way first
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
  /** --follow: after the table, a row for each record as it is written, until the session ends. */
  follow: boolean;
}

export async function activityView(ctx: ViewContext, q: ActivityQuery): Promise<number> {
  const ref = pickSession(ctx.logs, q.session, ctx.dir);
  if (typeof ref === 'string') return notFound(ctx.io, ref);
  const ends = logEnds(ref.file);
  // A session whose mcpguard is gone has ended too (crashed): its open calls never got a final record.
  const live = ends.seal !== undefined || ends.end !== undefined ? null : liveness(ends.start);
  const ended = live === null || live === 'crashed';
  const now = live === 'running' ? Date.now() : null;
  // --follow: the table covers the log as it is now, oldest first (so that followed rows continue it); the follower goes on from there.
  const snapshot = q.follow && !ended ? statSync(ref.file).size : null;
  const unreadable: number[] = [];
  // The table's columns wait for the first pass over the log: it says whether the server was restarted.
  let grid: StreamingTable | null = null;
  let restarted = false;
  const planned = (p: Plan): void => {
    restarted = p.generations > 1;
    if (!ctx.json) grid = new StreamingTable(columns(ctx.clock.zone, restarted), ctx.style);
  };
  const rows =
    snapshot === null
      ? activityRowsNewestFirst(ref.file, ref.sessionId, ended, !ctx.json, (line) => unreadable.push(line), planned)
      : lastOf(
          activityRows(ref.file, ref.sessionId, ended, !ctx.json, (line) => unreadable.push(line), snapshot, planned),
          q,
        );
  if (!ctx.json) {
    const start = sessionRow({ ...ends, unreadable: [], sealed: ends.seal !== undefined, records: 0, calls: 0, rejected: 0 });
    ctx.output.write(
      titleLine(`session ${ref.sessionId}  ${start.name}${start.probe ? ' (probe)' : ''}  ${ctx.clock.full(start.started_at)}`, ref.file, ctx.style.width),
    );
  }
  const table = (): StreamingTable => grid ?? (grid = new StreamingTable(columns(ctx.clock.zone, restarted), ctx.style));
  const line = (row: ActivityRow, at: number | null): string =>
    ctx.json ? `${jsonLine(withAge(row, at))}\n` : table().add(...activityCells(row, ctx, at, restarted));
  let shown = 0;
  try {
    for (const row of rows) {
      if (q.limit !== null && shown >= q.limit) break;
      // A record written at once goes ahead of deferred ones a few milliseconds older: stop a second past --since.
      if (snapshot === null && q.since !== null && row.time !== null && Date.parse(row.time) < q.since - SINCE_SLACK_MS) break;
      if (!passes(row, q.filters)) continue;
      shown++;
      if (!(await emit(ctx.output, line(row, now)))) return 0;
    }
  } finally {
    rows.return(undefined); // closes the log when the listing stops early
  }
  if (!ctx.json) ctx.output.write(table().end()); // with --follow too: later rows are written as they come
  warnUnreadable(ref.file, unreadable, ctx.io);
  if (snapshot === null) return 0;
  await ctx.output.flush();
  const how = await (await import('./activity-follow.js')).followActivity(ref.file, ref.sessionId, snapshot, ends.start, async (row) => {
    if (!passes(row, q.filters)) return !ctx.output.closed;
    const going = await emit(ctx.output, line(row, null));
    await ctx.output.flush();
    return going && !ctx.output.closed;
  });
  if (how === 'crashed')
    ctx.io.stderr.write(
      `mcpguard activity: the session's mcpguard (pid ${String(ends.start?.mcpguard_pid ?? '?')}) is gone without a session record: it crashed\n`,
    );
  return 0;
}

/**
 * The rows of the log up to the follower's snapshot, oldest first; with -n,
 * only the last N that pass the filters (as `tail -n N -f`).
 */
function* lastOf(rows: Generator<ActivityRow>, q: ActivityQuery): Generator<ActivityRow> {
  if (q.limit === null) {
    yield* rows;
    return;
  }
  const kept: ActivityRow[] = [];
  for (const row of rows) {
    if (!passes(row, q.filters)) continue;
    kept.push(row);
    if (kept.length > q.limit) kept.shift();
  }
  yield* kept;
}

/** An open call of a running session, in --json: how long it has been open (`open_ms`). */
function withAge(row: ActivityRow, now: number | null): ActivityRow {
  if (now === null || row.kind !== 'call' || row.state !== 'open') return row;
  const since = row.time === null ? NaN : Date.parse(row.time);
  return Number.isFinite(since) ? ({ ...row, open_ms: now - since } as ActivityRow) : row;
}

/** An open call's age in a running session: `12.30s+` (it is still going). */
function openAge(r: ActivityRow & { kind: 'call' }, now: number | null): string | null {
  if (now === null || r.state !== 'open' || r.time === null) return null;
  const since = Date.parse(r.time);
  return Number.isFinite(since) ? `${formatDuration(Math.max(0, now - since))}+` : null;
}

/** A row's cells, its colours, and its reason on a line of its own (a long reason would widen every row). */
function activityCells(
  r: ActivityRow,
  ctx: ViewContext,
  now: number | null,
  restarted: boolean,
): [string[], { colours: Array<Colour | undefined>; notes: string[] }] {
  const time = ctx.clock.clock(r.time);
  // With a GEN column, the cells after TIME (and their colours) move one to the right.
  const gen = (cells: Array<string>, colours: Array<Colour | undefined>, value: string): [string[], Array<Colour | undefined>] =>
    restarted
      ? [
          [...cells.slice(0, 2), value, ...cells.slice(2)],
          [...colours.slice(0, 2), undefined, ...colours.slice(2)],
        ]
      : [cells, colours];
  if (r.kind === 'reject') {
    const code = r.code !== null ? ` (${String(r.code)})` : '';
    const [cells, colours] = gen(
      ['(rejected)', time, '-', '-', `from ${r.direction ?? '?'}`, '-', '-'],
      [undefined, undefined, undefined, undefined, 'yellow'],
      '-',
    );
    return [cells, { colours, notes: [`${r.reason ?? '?'}${code}`] }];
  }
  const state = r.legs !== undefined && r.legs > 1 ? `${r.state} → ${r.chain_state!} (${r.legs} legs)` : r.state;
  const failed = (FAILED_STATES.has(r.state) && r.probe_declined !== true) || (r.chain_state !== undefined && FAILED_STATES.has(r.chain_state));
  const notes = r.detail !== null && r.state !== 'tool_error' && (failed || r.state.startsWith('cancelled_')) ? [r.detail.split('\n')[0]!] : [];
  if (r.probe_declined === true) notes.push('era probe declined: a legacy server answered "method not found"; not a failure');
  if (r.approval !== undefined) notes.push(approvalNote(r.approval));
  const [cells, colours] = gen(
    [
      r.leg !== null && r.leg > 1 ? `  ↳ ${r.call_id}` : r.call_id,
      time,
      r.method ?? '-',
      r.tool ?? '-',
      state,
      r.stderr_bytes_seen === null ? '-' : `${r.stderr_bytes_seen}/${r.stderr_bytes_retained ?? '-'}${r.stderr_truncated ? ' truncated' : ''}`,
      openAge(r, now) ?? formatDuration(r.duration_ms),
    ],
    [undefined, undefined, undefined, undefined, failed ? 'red' : r.state === 'open' ? 'yellow' : undefined],
    r.generation === null ? '-' : String(r.generation),
  );
  return [cells, { colours, notes }];
}
