/**
 * The command line: the only module that knows about argv. It dispatches to
 * the relay (`mcpguard [options] -- command args...`) or to a subcommand, and
 * turns every mcpguard failure into a message on stderr and an exit code.
 */
import { readFileSync } from 'node:fs';
import { runCheck } from './check.js';
import { Diagnostics } from './diagnostics.js';
import { GuardError } from './errors.js';
import { withMetaEntry, type Response } from './jsonrpc.js';
import type { Call } from './calls.js';
import { RUN_OPTIONS, applyConfigFile, parseArgv, type OptionSpec, type OptionValues } from './options.js';
import type { RetainMode } from './stderr/ring.js';
import { StderrTap, type StderrSummary } from './stderr/tap.js';
import { AuditLog } from './audit.js';
import { ensureRecordDir, loadAuditKey, resolveRecordDir, runRecordsCommand } from './records/index.js';
import { openOutput } from './output.js';
import { Session, type SessionSummary } from './session.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/** Run mcpguard with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const first = argv[0];
  if (first === '--help' || first === '-h' || first === 'help') return print(helpText());
  if (first === '--version' || first === '-V') return print(`mcpguard ${VERSION}\n`);
  if (first === 'check') return runCheck(argv.slice(1));
  if (first === 'sessions' || first === 'activity' || first === 'show' || first === 'verify') return runRecordsCommand(first, argv.slice(1));
  try {
    return await runRelay(argv);
  } catch (error) {
    if (error instanceof GuardError) {
      process.stderr.write(`mcpguard: ${error.message}\n`);
      return error.exitCode;
    }
    throw error;
  }
}

async function runRelay(argv: readonly string[]): Promise<number> {
  const parsed = parseArgv(argv, RUN_OPTIONS);
  if (typeof parsed.values.config === 'string') applyConfigFile(parsed, RUN_OPTIONS, parsed.values.config);
  if (parsed.command.length === 0) throw new GuardError('no_command', 'no command to run: mcpguard [options] -- <command> [args...]');
  const v = parsed.values;
  if ((v['stderr-call-bytes'] as number) > (v['stderr-process-bytes'] as number)) {
    throw new GuardError('bad_option', `--stderr-call-bytes (${v['stderr-call-bytes']}) must not exceed --stderr-process-bytes (${v['stderr-process-bytes']})`);
  }
  const diagStream = openOutput(2);
  const diag = new Diagnostics(diagStream);
  const output = openOutput(1);
  const [command, ...args] = parsed.command as [string, ...string[]];
  const stderr = new StderrTap(
    {
      callBytes: v['stderr-call-bytes'] as number,
      processBytes: v['stderr-process-bytes'] as number,
      excerptBytes: v['stderr-excerpt-bytes'] as number,
      retain: v['stderr-retain'] as RetainMode,
      passthroughBytes: v['stderr-passthrough'] === 'on' ? (v['stderr-passthrough-bytes'] as number) : null,
      excerptOnError: v['stderr-excerpt-on-error'] as boolean,
    },
    process.env,
    (bytes) => diag.writeRaw(bytes),
  );
  diagStream.on('drain', () => stderr.resumeMirror());
  const decorate = v['stderr-excerpt-on-error'] ? excerptDecorator(stderr) : undefined;
  let session: Session | undefined;
  const audit = v.records === 'on' ? openAudit(v, diag, () => session?.end('record_failure')) : null;
  audit?.sessionStarted({ command, args, cwd: process.cwd(), options: recordedOptions(v) });
  session = new Session(
    {
      command,
      args,
      maxFrameBytes: v['max-frame-bytes'] as number,
      onInvalid: v['on-invalid'] as 'close' | 'reject',
      onChildNoise: v['on-child-noise'] as 'continue' | 'close',
      allowBatch: v['allow-batch'] as boolean,
      callTimeout: v['call-timeout'] as number | null,
      graceMs: v.grace as number,
      drainMs: v['drain-ms'] as number,
    },
    // The stderr tap observes first: a call's stderr counts are set before anyone records the call.
    {
      input: process.stdin,
      output,
      diag,
      observers: audit === null ? [stderr] : [stderr, audit],
      stderr,
      decorate,
      onSpawn: (pid) => audit?.childSpawned(pid),
    },
  );
  const stopSignals = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
  const onSignal = (signal: NodeJS.Signals) => {
    session.end(`signal_${signal}`);
    session.escalate();
  };
  for (const s of stopSignals) process.on(s, onSignal);
  // A client that vanished must not kill mcpguard before its shutdown ran.
  process.on('SIGPIPE', () => {});

  const summary = await session.run();
  const mirrorSummary = stderr.mirrorSummary();
  if (mirrorSummary !== null) diag.writeLine(mirrorSummary);
  const record = summaryLine(summary, stderr.summary());
  audit?.sessionEnded(record);
  if (audit?.failure) diag.line(`the audit log ${audit.log.path} is incomplete: ${audit.failure.message}`);
  if (v['session-summary'] === 'on') diag.writeLine(JSON.stringify({ mcpguard: 'session_end', session_id: audit?.sessionId ?? null, ...record }));
  await Promise.all([flushed(output, Math.max(1000, v['drain-ms'] as number)), diag.flush(1000)]);
  return summary.status;
}

/** The session-end record as one JSON object (until the audit log carries it). */
function summaryLine(s: SessionSummary, stderr: StderrSummary): Record<string, unknown> {
  return {
    end_reason: s.endReason,
    pid: s.pid,
    exit_code: s.exitCode,
    signal: s.signal,
    status: s.status,
    spawn_error: s.spawnError,
    forced_kill: s.forcedKill,
    unkillable: s.unkillable,
    signals_sent: s.signalsSent,
    survivors: s.survivors,
    trigger_to_exit_ms: s.triggerToExitMs,
    stream_end: s.streamEnd,
    stderr_bytes_seen: s.stderrBytes,
    stderr,
    frames: { client: s.counters.clientFrames, child: s.counters.childFrames },
    rejected: { client: s.counters.rejectedClient, child: s.counters.noiseLines },
    redactions: stderr.redactions,
    stdout_noise_lines: s.counters.noiseLines,
    stdout_noise_bytes: s.counters.noiseBytes,
    late_responses: s.counters.lateResponses,
    calls: s.counters.states,
    output_dropped_frames: s.outputDropped,
    duration_ms: s.endedAt - s.startedAt,
  };
}

/** Open this session's audit log; a bad directory or key stops mcpguard before the child starts. */
function openAudit(v: OptionValues, diag: Diagnostics, onFailure: () => void): AuditLog {
  const dir = resolveRecordDir(typeof v['record-dir'] === 'string' ? v['record-dir'] : undefined);
  ensureRecordDir(dir);
  const keyFile = v['audit-key-file'];
  const key = typeof keyFile === 'string' ? loadAuditKey(keyFile, dir) : undefined;
  return new AuditLog({ dir, fsync: v.fsync as boolean, key }, (error) => {
    diag.line(`cannot write the audit log: ${error.message}; ending the session`);
    onFailure();
  });
}

/** The options worth keeping in the session record (no paths to keys). */
function recordedOptions(v: OptionValues): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(v)) if (name !== 'audit-key-file' && name !== 'config') kept[name] = value;
  kept['audit-key'] = typeof v['audit-key-file'] === 'string';
  return kept;
}

/** The key under `_meta` that carries a failed call's stderr excerpt. */
export const STDERR_META_KEY = 'io.mcpguard/stderr';

/**
 * For --stderr-excerpt-on-error: a tools/call that ended in a JSON-RPC error
 * or in a result with `isError: true` gets its retained stderr, cut to the
 * excerpt budget, under `_meta`; every other answer is left as it came.
 */
function excerptDecorator(stderr: StderrTap): (call: Call, response: Response) => Buffer | null {
  return (call, response) => {
    if (call.method !== 'tools/call') return null;
    const failed = response.isError || response.body.members?.get('isError')?.type === 'true';
    if (!failed) {
      stderr.release(call);
      return null;
    }
    const excerpt = stderr.takeExcerpt(call);
    return excerpt === null ? null : withMetaEntry(response, STDERR_META_KEY, excerpt);
  };
}

function flushed(stream: NodeJS.WritableStream & { writableLength?: number }, ms: number): Promise<void> {
  if (!stream.writableLength) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stream.once('drain', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

function print(text: string): number {
  process.stdout.write(text);
  return 0;
}

function optionHelp(table: Record<string, OptionSpec>): string {
  return Object.entries(table)
    .map(([name, spec]) => {
      const arg = spec.kind === 'flag' ? '' : spec.kind === 'enum' ? ` ${spec.values!.join('|')}` : spec.kind === 'ms' ? ' MS' : spec.kind === 'bytes' ? ' BYTES' : ' VALUE';
      const def = spec.default === null || spec.kind === 'flag' ? '' : ` (default ${spec.default})`;
      return `  --${name}${arg}\n      ${spec.help}${def}\n`;
    })
    .join('');
}

function helpText(): string {
  return `mcpguard ${VERSION}: a strict supervisor for MCP stdio servers

Usage:
  mcpguard [options] -- <command> [args...]
  mcpguard check [options] -- <command> [args...]   the clean-stdout release test (mcpguard check --help)

Relays JSON-RPC between the client (mcpguard's stdin/stdout) and the server
(the command's stdin/stdout), one message per line, checking every line in
both directions. See man mcpguard.

Options:
${optionHelp(RUN_OPTIONS)}  --help, --version

Exit status: the server's exit code, or 128+N if it died of signal N;
125 bad usage, 126 command not executable, 127 command not found.
`;
}

export type { OptionValues };
