/**
 * The record subcommands: `sessions`, `activity [SESSION]`, `show SESSION|CALL_ID`
 * and `verify`. Tables for people, `--json` (one object per line) for tools.
 * These are not the relay, so they write to process.stdout, through an Output
 * that waits for a slow reader and is drained before the command returns.
 *
 * Exit codes: 0 success; 1 nothing found, or (verify) a chain that does not
 * verify: tampering, a wrong or missing key, an unreadable file; 2 (verify)
 * every chain is intact but some log is unsealed or torn (a running session, a
 * crash or a cut tail; `--allow-unsealed` makes that 0); 125 bad options.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { EXIT_USAGE, GuardError } from '../errors.js';
import type { LogRecord } from './chain.js';
import { activityRows, type ActivityRow } from './activity.js';
import { clip, formatClock, formatDate, formatDuration, printable, StreamingTable, table } from './format.js';
import { loadAuditKey } from './key.js';
import { describe, recordDirFor, resolveRecordDir } from './location.js';
import { Output, settle } from './output.js';
import { showSession } from './show.js';
import { isIntact, verifyDir, type VerifyResult } from './verify.js';
import { liveness, type Liveness } from './live.js';
import { statSync as sizeOf } from 'node:fs';
import { findCall, listLogs, logEnds, sessionRow, summarizeLog, logRef, type LogRef, type SessionRow } from './views.js';

export type RecordsCommandName = 'sessions' | 'activity' | 'show' | 'verify';

/** Where a command writes; tests pass their own. */
export interface CommandIO {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

type Values = { 'record-dir'?: string; json?: boolean; 'audit-key-file'?: string; 'allow-unsealed'?: boolean; running?: boolean; follow?: boolean };

const COMMON = { 'record-dir': { type: 'string' }, json: { type: 'boolean' } } as const;
const VERIFY = { ...COMMON, 'audit-key-file': { type: 'string' }, 'allow-unsealed': { type: 'boolean' } } as const;
// Live sessions (records/live.ts): only the running ones; follow one as it writes.
const SESSIONS = { ...COMMON, running: { type: 'boolean' } } as const;
const ACTIVITY = { ...COMMON, follow: { type: 'boolean', short: 'f' } } as const;
const POSITIONALS: Record<RecordsCommandName, [number, number]> = { sessions: [0, 0], activity: [0, 1], show: [1, 1], verify: [0, 0] };

/**
 * Run one record subcommand with its arguments (after the subcommand name);
 * resolves to the exit code once all of its output has been taken by the
 * reader (or the reader has gone away: that is not an error).
 */
export async function runRecordsCommand(
  name: RecordsCommandName | 'logs' | 'prune', argv: string[], io: CommandIO = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  if (io.stdout === process.stdout) tolerateEpipe();
  if (name === 'logs') return (await import('./logs.js')).runLogsCommand(argv, io);
  if (name === 'prune') {
    const out = new Output(io.stdout);
    const pruned = await (await import('./prune-command.js')).runPruneCommand(argv, { stdout: out, stderr: io.stderr });
    await out.end();
    await settle(io.stderr);
    return pruned;
  }
  const output = new Output(io.stdout);
  let code: number;
  try {
    code = await runCommand(name, argv, io, output);
  } finally {
    await output.end();
  }
  if (output.failure !== null) {
    io.stderr.write(`mcpguard ${name}: cannot write the output: ${describe(output.failure)}\n`);
    code = code === 0 ? 1 : code;
  }
  await settle(io.stderr);
  return code;
}

async function runCommand(name: RecordsCommandName, argv: string[], io: CommandIO, output: Output): Promise<number> {
  const fail = (message: string, code: number): number => { io.stderr.write(`mcpguard ${name}: ${message}\n`); return code; };
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: name === 'verify' ? VERIFY : name === 'sessions' ? SESSIONS : name === 'activity' ? ACTIVITY : COMMON, allowPositionals: true, strict: true }));
  } catch (error) {
    return fail(optionError(error as Error, argv), EXIT_USAGE);
  }
  const [min, max] = POSITIONALS[name];
  if (positionals.length > max) return fail(`unexpected argument '${positionals[max]}'`, EXIT_USAGE);
  if (positionals.length < min) return fail('expects a SESSION or CALL_ID (a unique prefix), or a log file', EXIT_USAGE);
  if (values['record-dir'] === '') return fail("--record-dir expects a directory, got ''", EXIT_USAGE);
  const configured = resolveRecordDir(values['record-dir']);
  let dir: string;
  try {
    dir = recordDirFor(configured); // where the relay writes for it: the sticky-directory rule lives there
  } catch (error) {
    return fail((error as Error).message, EXIT_USAGE);
  }
  const kind = statKind(dir);
  // A missing default directory, or no own subdirectory yet in a shared one, only means nothing was recorded yet.
  if (kind === 'other' || (kind === 'none' && values['record-dir'] !== undefined && dir === configured)) {
    const problem = kind === 'none' ? 'does not exist' : 'not a directory';
    return fail(values['record-dir'] === undefined ? `record directory '${dir}': ${problem}` : `--record-dir expects a directory, got '${values['record-dir']}' (${problem})`, EXIT_USAGE);
  }
  // Text for stdout goes through `output`, which the caller drains before the process may exit.
  const out = (text: string): void => { output.write(text); };
  const json = values.json === true;
  try {
    if (name === 'verify') return verify(dir, configured, kind === 'dir', values, out, io);
    const logs = kind === 'dir' ? listLogs(dir, (file, reason) => skipped(io, file, reason)) : [];
    if (name === 'sessions') return await sessions(logs, json, output, io, values.running === true);
    if (name === 'activity') return await activity(logs, positionals[0], json, output, io, dir, values.follow === true);
    return await show(logs, positionals[0]!, json, output, io, dir);
  } catch (error) {
    if (error instanceof GuardError) return fail(error.message, error.exitCode);
    return fail((error as Error).message, 1);
  }
}

function skipped(io: CommandIO, file: string, reason: string): void {
  io.stderr.write(`mcpguard: ${file}: skipped: ${reason}\n`);
}

/** Queue `text`; wait for the reader when enough is queued. False once the reader has gone: stop producing. */
async function emit(output: Output, text: string): Promise<boolean> {
  if (output.write(text)) await output.flush();
  return !output.closed;
}

async function sessions(logs: LogRef[], json: boolean, output: Output, io: CommandIO, runningOnly = false): Promise<number> {
  const grid = new StreamingTable(['SESSION', 'START', 'DURATION', 'COMMAND', 'PROTOCOL', 'END', 'EXIT', 'CALLS', 'REJECTED', 'SEALED']);
  for (const ref of logs) {
    let r: SessionRow;
    let live: Liveness | null;
    try {
      const log = summarizeLog(ref.file);
      warnUnreadable(ref.file, log.unreadable, io);
      r = sessionRow(log);
      live = log.sealed ? null : liveness(log.start);
    } catch (error) {
      skipped(io, ref.file, describe(error)); // gone or changed since it was listed
      continue;
    }
    if (runningOnly && live !== 'running') continue;
    const text = json ? `${JSON.stringify({ ...r, liveness: live })}\n` : grid.add([
      r.session_id, formatDate(r.started_at), formatDuration(r.duration_ms), clip(r.command.join(' ') || '-', 40),
      r.protocol_version ?? (r.era !== null && r.era !== 'unknown' ? r.era : '-'), live === null ? endText(r) : liveText(live, r),
      r.exit_code !== null ? String(r.exit_code) : r.signal ?? '-', String(r.calls), String(r.rejected), r.torn ? 'torn' : r.sealed ? 'yes' : 'no',
    ]);
    if (!await emit(output, text)) return 0;
  }
  if (!json) output.write(grid.end());
  return 0;
}

/** An unsealed session: `running` while its mcpguard lives, else `crashed` (after its end reason, if it wrote one); `unknown` when that cannot be told. */
function liveText(live: Liveness, r: SessionRow): string {
  return live === 'running' ? 'running' : r.end_reason === null ? live : `${r.end_reason} (${live === 'crashed' ? 'crashed before the seal' : 'unsealed'})`;
}

/** A probe session's end says so; its exit was not waited for (the EXIT column then shows '-'). */
function endText(r: SessionRow): string {
  return r.probe ? `${r.end_reason ?? '-'} (probe)` : r.end_reason ?? '-';
}

async function activity(logs: LogRef[], wanted: string | undefined, json: boolean, output: Output, io: CommandIO, dir: string, follow = false): Promise<number> {
  const ref = pickSession(logs, wanted, dir);
  if (typeof ref === 'string') return notFound(io, ref);
  const ends = logEnds(ref.file);
  // A session whose mcpguard is gone has ended too (crashed): its open calls never got a final record.
  const live = ends.seal !== undefined || ends.end !== undefined ? null : liveness(ends.start);
  const ended = live === null || live === 'crashed';
  // --follow: the table covers the log as it is now; what comes after is followed from there.
  const snapshot = follow && !ended ? sizeOf(ref.file).size : Infinity;
  const now = live === 'running' ? Date.now() : null;
  const unreadable: number[] = [];
  const rows = activityRows(ref.file, ref.sessionId, ended, !json, (line) => unreadable.push(line), snapshot);
  const following = async (write: (row: ActivityRow) => Promise<boolean>): Promise<number> => {
    if (snapshot === Infinity) return 0;
    await output.flush();
    const how = await (await import('./activity-follow.js')).followActivity(ref.file, ref.sessionId, snapshot, ends.start, async (row) => {
      const going = await write(row);
      await output.flush();
      return going && !output.closed;
    });
    if (how === 'crashed') io.stderr.write(`mcpguard activity: the session's mcpguard (pid ${String(ends.start?.mcpguard_pid ?? '?')}) is gone without a session record: it crashed\n`);
    return 0;
  };
  if (json) {
    for (const row of rows) if (!await emit(output, `${JSON.stringify(withAge(row, now))}\n`)) return 0;
    warnUnreadable(ref.file, unreadable, io);
    return following((row) => emit(output, `${JSON.stringify(row)}\n`));
  }
  const start = sessionRow({ ...ends, unreadable: [], sealed: ends.seal !== undefined, records: 0, calls: 0, rejected: 0 });
  output.write(`session ${ref.sessionId}${start.probe ? ' (probe)' : ''}  ${formatDate(start.started_at)}  ${ref.file}\n`);
  const grid = new StreamingTable(['CALL', 'TIME', 'METHOD', 'TOOL', 'STATE', 'STDERR SEEN/KEPT', 'DURATION']);
  for (const r of rows) if (!await emit(output, grid.add(activityCells(r, now)))) return 0;
  output.write(grid.end());
  warnUnreadable(ref.file, unreadable, io);
  return following((row) => emit(output, grid.add(activityCells(row, null))));
}

/** An open call of a running session, in --json: how long it has been open (`open_ms`). */
function withAge(row: ActivityRow, now: number | null): ActivityRow {
  if (now === null || row.kind !== 'call' || row.state !== 'open') return row;
  const since = row.time === null ? NaN : Date.parse(row.time);
  return Number.isFinite(since) ? { ...row, open_ms: now - since } as ActivityRow : row;
}

function activityCells(r: ActivityRow, now: number | null = null): string[] {
  return r.kind === 'call'
    ? [r.leg !== null && r.leg > 1 ? `  ↳ ${r.call_id}` : r.call_id, formatClock(r.time), r.method ?? '-', r.tool ?? '-',
      r.legs !== undefined && r.legs > 1 ? `${r.state} → ${r.chain_state!} (${r.legs} legs)`
        : (r.state === 'denied' || r.state === 'rejected') && r.detail !== null ? `${r.state}: ${clip(r.detail.split('\n')[0]!, 60)}` : r.state,
      r.stderr_bytes_seen === null ? '-' : `${r.stderr_bytes_seen}/${r.stderr_bytes_retained ?? '-'}${r.stderr_truncated ? ' truncated' : ''}`, openAge(r, now) ?? formatDuration(r.duration_ms)]
    : ['(rejected)', formatClock(r.time), '-', '-', `from ${r.direction ?? '?'}: ${r.reason ?? '?'}${r.code !== null ? ` (${String(r.code)})` : ''}`, '-', '-'];
}

/**
 * `show` takes a session (a unique prefix of its id, or its log file's path)
 * or a call (a unique prefix of its id). Session ids and call ids have
 * different prefixes (`s_`, `c_`), so a prefix names sessions first.
 */
async function show(logs: LogRef[], wanted: string, json: boolean, output: Output, io: CommandIO, dir: string): Promise<number> {
  if (looksLikePath(wanted) || wanted.startsWith('s_') || (!wanted.startsWith('c_') && logs.some((l) => l.sessionId.startsWith(wanted)))) {
    const ref = pickSession(logs, wanted, dir);
    if (typeof ref === 'string') return notFound(io, ref);
    const log = summarizeLog(ref.file);
    warnUnreadable(ref.file, log.unreadable, io);
    output.write(showSession(log, json, log.sealed ? null : liveness(log.start)));
    return 0;
  }
  const found = findCall(logs, wanted);
  if ('none' in found) return notFound(io, `no ${wanted.startsWith('c_') ? 'call' : 'session or call'} '${printable(wanted)}' in '${dir}'`);
  if ('ambiguous' in found) {
    return notFound(io, `'${printable(wanted)}' matches ${found.ambiguous.length >= 20 ? 'many' : found.ambiguous.length} calls (${found.ambiguous.slice(0, 3).join(', ')}${found.ambiguous.length > 3 ? ', ...' : ''}); give more of the id`);
  }
  if (json) {
    for (const r of found.records) if (!await emit(output, `${JSON.stringify(r)}\n`)) return 0;
    return 0;
  }
  output.write(`call ${printable(found.callId)} in session ${found.log.sessionId}  ${found.log.file}\n`);
  for (const record of found.records) {
    output.write(`\n#${String(record.seq)}  ${printable(String(record.ts))}  ${printable(String(record.type))}\n`);
    if (!await emit(output, fields(record))) return 0;
  }
  return 0;
}

/** An open call's age in a running session: `12.30s+` (it is still going). */
function openAge(r: ActivityRow & { kind: 'call' }, now: number | null): string | null {
  if (now === null || r.state !== 'open' || r.time === null) return null;
  const since = Date.parse(r.time);
  return Number.isFinite(since) ? `${formatDuration(Math.max(0, now - since))}+` : null;
}

const CHAIN_ONLY = new Set(['seq', 'ts', 'type', 'prev', 'hash', 'call_id']);

function fields(record: LogRecord): string {
  const keys = Object.keys(record).filter((k) => !CHAIN_ONLY.has(k)).sort();
  const width = Math.max(0, ...keys.map((k) => k.length));
  return keys.map((k) => `  ${k.padEnd(width)}  ${printable(typeof record[k] === 'string' ? record[k] as string : JSON.stringify(record[k]))}\n`).join('');
}

function verify(dir: string, configured: string, exists: boolean, values: Values, out: (text: string) => void, io: CommandIO): number {
  const keyFile = values['audit-key-file'];
  const key = keyFile === undefined ? undefined : loadAuditKey(keyFile, configured);
  const results = exists ? verifyDir(dir, key) : [];
  if (results.length === 0) io.stderr.write(`mcpguard verify: no session logs in '${dir}'\n`);
  const crashOnly = (r: VerifyResult): boolean => r.status === 'unsealed' || r.status === 'torn';
  // `live` (a running session's intact log) and `pruned` (gone with its tombstone) count as intact.
  if (values.json === true) results.forEach((r) => out(`${JSON.stringify(r)}\n`));
  else {
    out(table(['STATUS', 'FILE', 'RECORDS', 'DETAIL'], results.map((r) => [
      isIntact(r.status) ? r.status : r.status.toUpperCase(), r.file, String(r.records),
      r.reason === null ? '' : r.line === null ? r.reason : `line ${r.line} (seq ${r.line - 1}): ${r.reason}`,
    ])));
    const counts = new Map<string, number>();
    results.forEach((r) => counts.set(r.status, (counts.get(r.status) ?? 0) + 1));
    out(`${results.length} log${results.length === 1 ? '' : 's'}: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}\n`);
  }
  if (results.some((r) => !isIntact(r.status) && !crashOnly(r))) return 1;
  if (results.some(crashOnly) && values['allow-unsealed'] !== true) return 2;
  return 0;
}

const VALUE_NAMES: Record<string, string> = { '--record-dir': 'a directory', '--audit-key-file': 'a key file' };

// parseArgs' messages, reworded to name the option and the value as the rest of mcpguard does.
function optionError(error: Error, argv: string[]): string {
  const option = /'(-[^' ]+)/.exec(error.message)?.[1] ?? '';
  if (/^Unknown option/.test(error.message)) return `unknown option '${option}'`;
  if (/argument missing/.test(error.message)) return `${option} expects ${VALUE_NAMES[option] ?? 'a value'}, got nothing`;
  const given = argv.find((arg) => arg.startsWith(`${option}=`));
  if (given !== undefined) return `${option} takes no value, got '${given.slice(option.length + 1)}'`;
  return error.message;
}

/** A path, not an id: ids never hold a `/` nor end in `.jsonl`. */
function looksLikePath(wanted: string): boolean {
  return wanted.includes('/') || wanted.endsWith('.jsonl');
}

// The session a name means: a log file's path, an exact id, else a unique prefix; the latest when none is named.
function pickSession(logs: LogRef[], wanted: string | undefined, dir: string): LogRef | string {
  if (wanted === undefined) return logs.at(-1) ?? `no sessions in '${dir}'`;
  if (looksLikePath(wanted)) {
    const file = resolve(wanted);
    const listed = logs.find((l) => l.file === file);
    if (listed !== undefined) return listed;
    try {
      return logRef(file);
    } catch (error) {
      return `cannot read '${printable(wanted)}': ${describe(error)}`;
    }
  }
  const exact = logs.find((l) => l.sessionId === wanted);
  if (exact !== undefined) return exact;
  const prefixed = logs.filter((l) => l.sessionId.startsWith(wanted));
  if (prefixed.length === 1) return prefixed[0]!;
  return prefixed.length === 0 ? `no session '${printable(wanted)}' in '${dir}'` : `'${printable(wanted)}' matches ${prefixed.length} sessions; give more of the id`;
}

function notFound(io: CommandIO, message: string): number {
  io.stderr.write(`mcpguard: ${message}\n`);
  return 1;
}

function warnUnreadable(file: string, unreadable: number[], io: CommandIO): void {
  if (unreadable.length > 0) {
    io.stderr.write(`mcpguard: ${file}: ${unreadable.length} unreadable line(s) (first: line ${unreadable[0]}); run mcpguard verify\n`);
  }
}

let epipeTolerated = false;

// `mcpguard sessions | head` closes the pipe early; that is not an error worth a stack trace.
function tolerateEpipe(): void {
  if (epipeTolerated) return;
  epipeTolerated = true;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
  });
}

function statKind(path: string): 'dir' | 'other' | 'none' {
  try {
    return statSync(path).isDirectory() ? 'dir' : 'other';
  } catch {
    return 'none';
  }
}
