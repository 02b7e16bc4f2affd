/**
 * `mcpguard show SESSION`: what a session's start and end records hold, as a
 * block for a person (how it ran, how it ended, what the server printed last,
 * what became of its calls), or the records themselves with `--json`.
 */
import type { LogRecord } from '../records/chain.js';
import { fieldLine, formatDuration, printable } from './format.js';
import { jsonLine } from '../mask/escape.js';
import type { Liveness } from '../records/live.js';
import { commandOf, sessionRow, str, type LogSummary } from './views.js';
import { titleLine } from './view-kit.js';
import { Clock } from './when.js';
import { bytes } from '../session/summary.js';

/** The session block (or, with `json`, its session_start and session_end records, one per line); times as `clock` shows them. */
export function showSession(log: LogSummary, json: boolean, clock = new Clock(false), columns: number | null = null, live: Liveness | null = null): string {
  if (json)
    return [log.start, log.end]
      .filter((r) => r !== undefined)
      .map((r) => `${jsonLine(r)}\n`)
      .join('');
  const row = sessionRow(log);
  const start = log.start ?? {};
  const end = log.end;
  const lines: Array<[string, string]> = [
    ['name', `${row.name}${row.name_source === 'option' ? ' (--name)' : row.name_source === 'server' ? " (the server's serverInfo)" : ' (the command)'}`],
    ['command', commandOf(log.start).join(' ') || '-'],
    ['cwd', str(start.cwd) ?? '-'],
    ['mcpguard pid', numText(start.mcpguard_pid)],
    ['started', clock.full(row.started_at)],
  ];
  if (end === undefined) {
    lines.push(['ended', log.sealed ? 'sealed without a session record' : endless(live, start.mcpguard_pid)]);
    // Before the session record, the version its calls' final records carry (views.ts), once one has ended.
    if (row.protocol_version !== null) lines.push(['protocol', row.protocol_version]);
  } else {
    lines.push(
      ['ended', `${clock.full(str(end.ended_at))}  (after ${formatDuration(row.duration_ms)})`],
      ['end reason', `${str(end.end_reason) ?? '-'}${end.probe === true ? ' (probe: sealed before the server exited)' : ''}`],
      ['exit', exitText(end)],
      [
        'protocol',
        [str(end.era), str(end.protocol_version), str(end.era_decided_by) === null ? null : `decided by ${str(end.era_decided_by)!}`]
          .filter((p) => p !== null)
          .join(', ') || '-',
      ],
      ['server pid', numText(end.pid)],
      ['signals sent', list(end.signals_sent) || 'none'],
      ['forced kill', `${yesNo(end.forced_kill)}${end.unkillable === true ? ' (unkillable: the server outlived SIGKILL)' : ''}`],
      ['survivors', survivors(end.survivors)],
      ['trigger to exit', end.trigger_to_exit_ms === undefined || end.trigger_to_exit_ms === null ? '-' : formatDuration(Number(end.trigger_to_exit_ms))],
      ['stderr', stderrText(end)],
      ['calls', callsText(end.calls, row.calls, end.era_probes_declined)],
      ['rejected', rejectedText(end.rejected, row.rejected)],
    );
    // Only a session run with --restart has these fields.
    if (typeof end.restarts === 'number')
      lines.splice(lines.findIndex(([k]) => k === 'exit') + 1, 0, [
        'restarts',
        `${end.restarts} (${numText(end.generations)} server generations)${typeof end.restarts_stopped_by === 'string' ? `; stopped: ${end.restarts_stopped_by}` : ''}`,
      ]);
    lines.push(...resourceLines(end.resources));
  }
  lines.push(['records', `${log.records}, ${log.torn ? 'torn (the last line is cut)' : log.sealed ? 'sealed' : 'not sealed'}`]);
  const width = Math.max(...lines.map(([k]) => k.length));
  let text = titleLine(`session ${printable(log.sessionId)}`, log.file, columns);
  for (const [key, value] of lines) text += fieldLine(key, width, value, columns);
  const tail = stderrTail(end);
  if (tail !== '') {
    text += `  stderr tail:\n`;
    for (const line of tail.replace(/\n$/, '').split('\n')) text += `    | ${printable(line)}\n`;
  }
  return text;
}

/** An unsealed session without a session record: running or crashed, by its mcpguard's pid and start time (records/live.ts). */
function endless(live: Liveness | null, pid: unknown): string {
  if (live === 'running') return `not yet: running (mcpguard pid ${numText(pid)} is alive)`;
  if (live === 'crashed') return `crashed: mcpguard (pid ${numText(pid)}) is gone and wrote no session record`;
  return 'no session record; whether its mcpguard still runs cannot be told from here';
}

function exitText(end: LogRecord): string {
  const parts: string[] = [];
  if (typeof end.exit_code === 'number') parts.push(`code ${end.exit_code}`);
  if (typeof end.signal === 'string') parts.push(`signal ${end.signal}`);
  if (typeof end.status === 'number') parts.push(`mcpguard exit status ${end.status}`);
  if (typeof end.spawn_error === 'string') parts.push(`spawn failed: ${end.spawn_error}`);
  if (end.child_exit === 'not_awaited') parts.push('not awaited');
  return parts.join(', ') || '-';
}

function survivors(value: unknown): string {
  if (!Array.isArray(value) || value.length === 0) return 'none';
  return value.map((s: { pid?: unknown; comm?: unknown }) => `${String(s.pid ?? '?')}${typeof s.comm === 'string' ? ` (${s.comm})` : ''}`).join(', ');
}

function stderrText(end: LogRecord): string {
  const s = (typeof end.stderr === 'object' && end.stderr !== null ? end.stderr : {}) as Record<string, unknown>;
  const seen = typeof s.bytes_seen === 'number' ? s.bytes_seen : typeof end.stderr_bytes_seen === 'number' ? end.stderr_bytes_seen : null;
  if (seen === null) return '-';
  const parts = [`${seen} bytes seen`];
  // During a call, stderr is kept with that call's record (mcpguard logs); outside calls, in the session's tail below.
  if (typeof s.tail_bytes_seen === 'number') {
    parts[0] = `${seen} bytes seen: ${seen - s.tail_bytes_seen} during calls`;
    parts.push(
      `${s.tail_bytes_seen} outside calls${typeof s.bytes_retained === 'number' && s.tail_bytes_seen > 0 ? ` (${s.bytes_retained} kept)` : ''}${s.truncated === true ? ' (truncated)' : ''}`,
    );
  } else if (typeof s.bytes_retained === 'number') parts.push(`${s.bytes_retained} kept${s.truncated === true ? ' (truncated)' : ''}`);
  if (typeof s.mirrored_bytes === 'number') parts.push(`${s.mirrored_bytes} mirrored`);
  if (typeof s.suppressed_bytes === 'number' && s.suppressed_bytes > 0) parts.push(`${s.suppressed_bytes} not mirrored`);
  if (typeof s.redactions === 'number') parts.push(`${s.redactions} redaction${s.redactions === 1 ? '' : 's'}`);
  return parts.join(', ');
}

function stderrTail(end: LogRecord | undefined): string {
  const s = end?.stderr;
  return typeof s === 'object' && s !== null && typeof (s as { tail?: unknown }).tail === 'string' ? (s as { tail: string }).tail : '';
}

/**
 * `12: completed 10, error 2`, from the session record's per-state counts;
 * errors that were declined era probes (`era_probes_declined`) are said to be
 * no failure, as `sessions --failed` counts them.
 */
function callsText(value: unknown, total: number, declined: unknown): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return String(total);
  const states = Object.entries(value as Record<string, unknown>).filter(([, n]) => typeof n === 'number' && n > 0);
  const probes = typeof declined === 'number' && declined > 0 ? declined : 0;
  const stateText = ([state, n]: [string, unknown]): string =>
    `${state} ${String(n)}${state === 'error' && probes > 0 ? ` (${probes} ${probes === 1 ? 'a declined era probe' : 'declined era probes'}, not a failure)` : ''}`;
  return states.length === 0 ? '0' : `${total}: ${states.map(stateText).join(', ')}`;
}

function rejectedText(value: unknown, total: number): string {
  if (typeof value !== 'object' || value === null) return String(total);
  const r = value as { client?: unknown; child?: unknown };
  return `${total} (from the client ${String(r.client ?? 0)}, from the server ${String(r.child ?? 0)})`;
}

function list(value: unknown): string {
  return Array.isArray(value) ? value.map(String).join(', ') : '';
}

function numText(value: unknown): string {
  return typeof value === 'number' ? String(value) : '-';
}

function yesNo(value: unknown): string {
  return value === true ? 'yes' : value === false ? 'no' : '-';
}

/** The server tree's CPU and memory (src/process/resources.ts); nothing for a record that predates them. */
function resourceLines(value: unknown): Array<[string, string]> {
  if (typeof value !== 'object' || value === null) return [];
  const r = value as Record<string, unknown>;
  if (r.method === 'unavailable') return [['resources', 'not measured (no /proc on this platform)']];
  const secs = (ms: unknown): string => (typeof ms === 'number' ? `${(ms / 1000).toFixed(2)}s` : '-');
  const pair = (p: unknown): string => {
    const o = (typeof p === 'object' && p !== null ? p : {}) as { user?: unknown; system?: unknown };
    return `${secs(o.user)} + ${secs(o.system)}`;
  };
  const peak = (typeof r.peak_process === 'object' && r.peak_process !== null ? r.peak_process : null) as {
    pid?: unknown;
    comm?: unknown;
    rss_bytes?: unknown;
  } | null;
  const largest =
    peak !== null && typeof peak.rss_bytes === 'number'
      ? `; largest process ${bytes(peak.rss_bytes)}, pid ${String(peak.pid)}${typeof peak.comm === 'string' ? ` (${peak.comm})` : ''}`
      : '';
  return [
    [
      'cpu',
      `${secs(r.cpu_user_ms)} user + ${secs(r.cpu_system_ms)} sys (sampled ${pair(r.sampled_cpu_ms)}, reaped ${r.reaped_cpu_ms === null ? '-' : pair(r.reaped_cpu_ms)})`,
    ],
    ['peak rss', `${typeof r.peak_rss_bytes === 'number' ? bytes(r.peak_rss_bytes) : '-'}${largest}`],
    ['processes', `${numText(r.processes_seen)} seen in ${numText(r.samples)} samples`],
  ];
}
