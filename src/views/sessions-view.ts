/**
 * `mcpguard sessions`: one row per session log, newest first, read from each
 * log's two ends (views.ts), filtered as `git log -n --since` filters.
 */
import { jsonLine } from '../mask/escape.js';
import { formatDuration, StreamingTable, type Colour, type Column } from './format.js';
import { liveness, type Liveness } from '../records/live.js';
import { describe } from '../records/location.js';
import { failedBecause, passes, type Predicate } from './filters.js';
import { emit, skipped, warnUnreadable, type ViewContext } from './view-kit.js';
import { sessionRow, summarizeLog, type SessionRow } from './views.js';

/**
 * The columns, and how each gives way on a narrow terminal: COMMAND is cut
 * in its middle first (its end names the server's script), then START loses
 * its year, NAME its end; then whole columns are left out, RESTARTS first (it
 * matters only for sessions run with --restart), then COMMAND, then START (the
 * session id holds its start, in UTC), CALLS last. END, the end reason, is cut
 * only when nothing else is left: `signal_SI…` hides which signal.
 */
function columns(zone: string): Column[] {
  return [
    { header: 'SESSION' },
    { header: 'NAME', clip: 'end', min: 8, soft: 16, shrink: 3 },
    { header: `START ${zone}`, clip: 'year', shrink: 1, drop: 6 },
    { header: 'DURATION', drop: 3 },
    { header: 'COMMAND', clip: 'middle', min: 16, soft: 32, shrink: 0, drop: 5 },
    { header: 'PROTOCOL', drop: 1 },
    { header: 'END', clip: 'end', min: 10, soft: 14, shrink: 2, last: true },
    { header: 'EXIT' },
    { header: 'RESTARTS', drop: 0 },
    { header: 'CALLS', drop: 7 },
    { header: 'REJECTED', drop: 2 },
    { header: 'SEALED', drop: 4 },
  ];
}

/**
 * List the sessions that pass `filters`, newest first, at most `limit` of
 * them; `why` (--failed): each row's reasons for counting as failed on an
 * indented line under it.
 */
export async function sessionsView(
  ctx: ViewContext,
  filters: Array<Predicate<SessionRow>>,
  limit: number | null,
  runningOnly = false,
  why = false,
): Promise<number> {
  const grid = new StreamingTable(columns(ctx.clock.zone), ctx.style);
  let shown = 0;
  for (let i = ctx.logs.length - 1; i >= 0 && (limit === null || shown < limit); i--) {
    const ref = ctx.logs[i]!;
    let r: SessionRow;
    let live: Liveness | null;
    try {
      const log = summarizeLog(ref.file);
      warnUnreadable(ref.file, log.unreadable, ctx.io);
      live = log.sealed ? null : liveness(log.start);
      r = { ...sessionRow(log), liveness: live }; // --failed counts a crashed mcpguard
    } catch (error) {
      skipped(ctx.io, ref.file, describe(error)); // gone or changed since it was listed
      continue;
    }
    if (runningOnly && live !== 'running') continue;
    if (!passes(r, filters)) continue;
    shown++;
    if (!(await emit(ctx.output, ctx.json ? `${jsonLine(r)}\n` : sessionLine(grid, r, live, ctx, why)))) return 0;
  }
  if (!ctx.json) ctx.output.write(grid.end());
  return 0;
}

function sessionLine(grid: StreamingTable, r: SessionRow, live: Liveness | null, ctx: ViewContext, why: boolean): string {
  const reasons = failedBecause(r);
  const red: Colour | undefined = reasons.length > 0 ? 'red' : undefined;
  return grid.add(
    [
      r.session_id,
      r.name,
      ctx.clock.date(r.started_at),
      formatDuration(r.duration_ms),
      r.command.join(' ') || '-',
      r.protocol_version ?? (r.era !== null && r.era !== 'unknown' ? r.era : '-'),
      live === null ? endText(r) : liveText(live, r),
      r.exit_code !== null ? String(r.exit_code) : (r.signal ?? '-'),
      r.restarts === null ? '-' : String(r.restarts),
      String(r.calls),
      String(r.rejected),
      r.torn ? 'torn' : r.sealed ? 'yes' : 'no',
    ],
    {
      colours: [
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        red,
        red,
        (r.restarts ?? 0) > 0 ? 'yellow' : undefined,
        (r.failed_calls ?? 0) > 0 ? 'red' : undefined,
        undefined,
        r.torn ? 'red' : r.sealed ? undefined : 'yellow',
      ],
      notes: why && reasons.length > 0 ? [`failed: ${reasons.join('; ')}`] : [],
    },
  );
}

/** An unsealed session: `running` while its mcpguard lives, else `crashed` (after its end reason, if it wrote one); `unknown` when that cannot be told. */
function liveText(live: Liveness, r: SessionRow): string {
  return live === 'running' ? 'running' : r.end_reason === null ? live : `${r.end_reason} (${live === 'crashed' ? 'crashed before the seal' : 'unsealed'})`;
}

/** A probe session's end says so; its exit was not waited for (the EXIT column then shows '-'). */
function endText(r: SessionRow): string {
  return r.probe ? `${r.end_reason ?? '-'} (probe)` : (r.end_reason ?? '-');
}
