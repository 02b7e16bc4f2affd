/**
 * The session summary at exit (`--session-summary`): one JSON line for tools,
 * or a few lines for a person at a terminal. `auto` picks by whether
 * mcpguard's stderr is a terminal, so a host that keeps stderr in a log file
 * or parses it still gets the one JSON line, byte for byte as before.
 */
import { isatty } from 'node:tty';
import { processMasker } from '../mask/mask.js';
import { clipMiddle } from '../base/values.js';

export type SummaryMode = 'auto' | 'human' | 'json' | 'on' | 'off';

/** What `--session-summary` means for this run: `on` is the old spelling of `json`. */
export function summaryFormat(mode: SummaryMode, stderrIsTerminal: boolean = isatty(2)): 'human' | 'json' | 'off' {
  if (mode === 'on') return 'json';
  if (mode === 'auto') return stderrIsTerminal ? 'human' : 'json';
  return mode;
}

/** Where the session's record went, for the last line of the human summary. */
export interface SummaryPlace {
  sessionId: string;
  command: string;
  args: readonly string[];
  /** The record file, or null when the session kept none. */
  logPath: string | null;
  /** Why there are no records (null when there are). */
  recordsOff: string | null;
}

/**
 * The human summary: a few short lines (without the `mcpguard: ` prefix, which
 * the caller's Diagnostics adds and masks). `record` is the masked session
 * record, the same object the JSON line and the audit log carry.
 */
export function humanSummary(record: Record<string, unknown>, place: SummaryPlace): string[] {
  const lines: string[] = [];
  // Masked before it is cut: half a secret is no longer recognisable as one.
  const command = clipMiddle(processMasker().text([place.command, ...place.args].join(' ')), 100, 0.5);
  lines.push(`session ${place.sessionId} ended after ${duration(num(record.duration_ms))}`);
  lines.push(`  command ${command}`);
  lines.push(`  ended by ${str(record.end_reason) ?? 'unknown'}; ${exitText(record)}`);
  lines.push(`  calls ${callsText(record.calls)}; rejected ${rejectedText(record.rejected)}`);
  const stderr = stderrText(record.stderr);
  if (stderr !== null) lines.push(`  stderr ${stderr}`);
  const used = resourcesText(record.resources);
  if (used !== null) lines.push(`  resources ${used}`);
  const otlp = otlpText(record.otlp);
  if (otlp !== null) lines.push(`  otlp ${otlp}`);
  if (place.logPath !== null) lines.push(`  log ${place.logPath}  (mcpguard show ${place.sessionId})`);
  else lines.push(`  no records${place.recordsOff === null ? '' : `: ${place.recordsOff}`}`);
  // A command or a reason may hold control characters: a terminal must not act on them.
  return lines.map(visible);
}

function visible(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

function exitText(r: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof r.spawn_error === 'string') return `the server did not start: ${r.spawn_error}`;
  if (r.child_exit === 'not_awaited') parts.push('server exit not awaited (probe)');
  else if (typeof r.signal === 'string') parts.push(`server killed by ${r.signal}`);
  else if (typeof r.exit_code === 'number') parts.push(`server exit code ${r.exit_code}`);
  const signals = Array.isArray(r.signals_sent) ? r.signals_sent.map(String) : [];
  if (signals.length > 0) parts.push(`sent ${signals.join(', ')}`);
  if (r.forced_kill === true) parts.push('forced kill');
  if (r.unkillable === true) parts.push('the server outlived SIGKILL');
  const survivors = Array.isArray(r.survivors) ? r.survivors.length : 0;
  if (survivors > 0) parts.push(`${survivors} survivor${survivors === 1 ? '' : 's'}`);
  return parts.join(', ') || 'no exit status';
}

/** `12 (completed 10, error 2)` from the per-state counts. */
function callsText(value: unknown): string {
  const states =
    typeof value === 'object' && value !== null ? Object.entries(value as Record<string, unknown>).filter(([, n]) => typeof n === 'number' && n > 0) : [];
  const total = states.reduce((sum, [, n]) => sum + (n as number), 0);
  return states.length === 0 ? '0' : `${total} (${states.map(([state, n]) => `${state} ${String(n)}`).join(', ')})`;
}

function rejectedText(value: unknown): string {
  const r = (typeof value === 'object' && value !== null ? value : {}) as { client?: unknown; child?: unknown };
  const client = num(r.client) ?? 0;
  const child = num(r.child) ?? 0;
  return client + child === 0 ? '0' : `${client + child} (client ${client}, server ${child})`;
}

function stderrText(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const s = value as Record<string, unknown>;
  const seen = num(s.bytes_seen);
  if (seen === null) return null;
  // Stderr written during a call is kept with that call's record; only what came outside calls is the session's tail.
  const outside = num(s.tail_bytes_seen);
  const parts =
    outside === null
      ? [`${bytes(seen)} seen`, `${bytes(num(s.bytes_retained) ?? 0)} kept${s.truncated === true ? ' (truncated)' : ''}`]
      : [
          `${bytes(seen)} seen: ${bytes(seen - outside)} during calls (kept with each call)`,
          `${bytes(outside)} outside calls${outside > 0 ? `, ${bytes(num(s.bytes_retained) ?? 0)} of it kept as the session's tail` : ''}${s.truncated === true ? ' (truncated)' : ''}`,
        ];
  const suppressed = num(s.suppressed_bytes) ?? 0;
  if (suppressed > 0) parts.push(`${bytes(suppressed)} not mirrored`);
  const redactions = num(s.redactions) ?? 0;
  if (redactions > 0) parts.push(`${redactions} redaction${redactions === 1 ? '' : 's'}`);
  return parts.join(', ');
}

/** `cpu 1.20s user + 0.30s sys, peak rss 52.1 MiB (4 processes)`; null without figures. */
export function resourcesText(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const r = value as Record<string, unknown>;
  if (r.method === 'unavailable') return 'not measured on this platform';
  const user = num(r.cpu_user_ms);
  const sys = num(r.cpu_system_ms);
  const peak = num(r.peak_rss_bytes);
  if (user === null || sys === null) return null;
  const seen = num(r.processes_seen) ?? 0;
  return `cpu ${seconds(user)} user + ${seconds(sys)} sys, peak rss ${peak === null ? '-' : bytes(peak)} (${seen} process${seen === 1 ? '' : 'es'} seen)`;
}

function duration(ms: number | null): string {
  if (ms === null) return '?';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(2)}s`;
}

/** `512 B`, `14.2 KiB`, `1.0 MiB`, `2.3 GiB`. */
export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = n / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]!}`;
}

/** Keep both ends of a long command: its program and the argument that names the server. */

function num(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** What the OpenTelemetry export delivered: `sent 12 spans, 30 logs; dropped 0; failed 0`; null when export was off. */
function otlpText(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return null;
  const v = value as Record<string, Record<string, unknown> | undefined>;
  const n = (group: string, signal: string): number => (typeof v[group]?.[signal] === 'number' ? (v[group]![signal] as number) : 0);
  const sum = (group: string): number => n(group, 'spans') + n(group, 'logs') + n(group, 'metrics');
  return `sent ${n('sent', 'spans')} spans, ${n('sent', 'logs')} logs, ${n('sent', 'metrics')} metrics; dropped ${sum('dropped')}; failed ${sum('failed')}`;
}
