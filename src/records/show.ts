/**
 * `mcpguard show SESSION`: what a session's start and end records hold, as a
 * block for a person (how it ran, how it ended, what the server printed last,
 * what became of its calls), or the records themselves with `--json`.
 */
import type { LogRecord } from './chain.js';
import { formatDate, formatDuration, printable } from './format.js';
import { commandOf, sessionRow, str, type LogSummary } from './views.js';

/** The session block (or, with `json`, its session_start and session_end records, one per line). */
export function showSession(log: LogSummary, json: boolean): string {
  if (json) return [log.start, log.end].filter((r) => r !== undefined).map((r) => `${JSON.stringify(r)}\n`).join('');
  const row = sessionRow(log);
  const start = log.start ?? {};
  const end = log.end;
  const lines: Array<[string, string]> = [
    ['command', commandOf(log.start).join(' ') || '-'],
    ['cwd', str(start.cwd) ?? '-'],
    ['mcpguard pid', numText(start.mcpguard_pid)],
    ['started', formatDate(row.started_at)],
  ];
  if (end === undefined) {
    lines.push(['ended', log.sealed ? 'sealed without a session record' : 'no session record: still running, or mcpguard was killed']);
  } else {
    lines.push(
      ['ended', `${formatDate(str(end.ended_at))}  (after ${formatDuration(row.duration_ms)})`],
      ['end reason', `${str(end.end_reason) ?? '-'}${end.probe === true ? ' (probe: sealed before the server exited)' : ''}`],
      ['exit', exitText(end)],
      ['protocol', [str(end.era), str(end.protocol_version), str(end.era_decided_by) === null ? null : `decided by ${str(end.era_decided_by)!}`].filter((p) => p !== null).join(', ') || '-'],
      ['server pid', numText(end.pid)],
      ['signals sent', list(end.signals_sent) || 'none'],
      ['forced kill', `${yesNo(end.forced_kill)}${end.unkillable === true ? ' (unkillable: the server outlived SIGKILL)' : ''}`],
      ['survivors', survivors(end.survivors)],
      ['trigger to exit', end.trigger_to_exit_ms === undefined || end.trigger_to_exit_ms === null ? '-' : formatDuration(Number(end.trigger_to_exit_ms))],
      ['stderr', stderrText(end)],
      ['calls', callsText(end.calls, row.calls)],
      ['rejected', rejectedText(end.rejected, row.rejected)],
    );
    // Only a session run with --restart has these fields.
    if (typeof end.restarts === 'number') lines.splice(lines.findIndex(([k]) => k === 'exit') + 1, 0, ['restarts', `${end.restarts} (${numText(end.generations)} server generations)${typeof end.restarts_stopped_by === 'string' ? `; stopped: ${end.restarts_stopped_by}` : ''}`]);
  }
  lines.push(['records', `${log.records}, ${log.torn ? 'torn (the last line is cut)' : log.sealed ? 'sealed' : 'not sealed'}`]);
  const width = Math.max(...lines.map(([k]) => k.length));
  let text = `session ${printable(log.sessionId)}  ${log.file}\n`;
  for (const [key, value] of lines) text += `  ${key.padEnd(width)}  ${printable(value)}\n`;
  const tail = stderrTail(end);
  if (tail !== '') {
    text += `  stderr tail:\n`;
    for (const line of tail.replace(/\n$/, '').split('\n')) text += `    | ${printable(line)}\n`;
  }
  return text;
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
  if (typeof s.bytes_retained === 'number') parts.push(`${s.bytes_retained} kept${s.truncated === true ? ' (truncated)' : ''}`);
  if (typeof s.mirrored_bytes === 'number') parts.push(`${s.mirrored_bytes} mirrored`);
  if (typeof s.suppressed_bytes === 'number' && s.suppressed_bytes > 0) parts.push(`${s.suppressed_bytes} not mirrored`);
  if (typeof s.redactions === 'number') parts.push(`${s.redactions} redaction${s.redactions === 1 ? '' : 's'}`);
  return parts.join(', ');
}

function stderrTail(end: LogRecord | undefined): string {
  const s = end?.stderr;
  return typeof s === 'object' && s !== null && typeof (s as { tail?: unknown }).tail === 'string' ? (s as { tail: string }).tail : '';
}

/** `12: completed 10, error 2`, from the session record's per-state counts. */
function callsText(value: unknown, total: number): string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return String(total);
  const states = Object.entries(value as Record<string, unknown>).filter(([, n]) => typeof n === 'number' && n > 0);
  return states.length === 0 ? '0' : `${total}: ${states.map(([state, n]) => `${state} ${String(n)}`).join(', ')}`;
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
