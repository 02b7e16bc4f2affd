/**
 * The command line: the only module that knows about argv. It dispatches to
 * a subcommand, or validates the relay's options, starts the server at once
 * and only then loads the relay (so the server's start-up overlaps
 * mcpguard's). Every mcpguard failure becomes a message on stderr and an exit
 * code.
 */
import { readFileSync } from 'node:fs';
import { startChild } from './child.js';
import { GuardError } from './errors.js';
import { markedEnv } from './marker.js';
import { RUN_OPTIONS, applyConfigFile, parseArgv, type OptionSpec } from './options.js';
import { loadAuditKey } from './records/key.js';
import { ensureRecordDir, resolveRecordDir } from './records/location.js';
import { newSessionId } from './records/session-id.js';
import type { Prepared } from './run.js';
import { armWatchdog } from './watchdog.js';

const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const RECORD_COMMANDS = new Set(['sessions', 'activity', 'show', 'verify']);

// Signals that end a session through the shutdown (a second one escalates).
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const;

/** Run mcpguard with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const first = argv[0];
  if (first === '--help' || first === '-h' || first === 'help') return print(helpText());
  if (first === '--version' || first === '-V') return print(`mcpguard ${VERSION}\n`);
  try {
    if (first === 'check') return await (await import('./check.js')).runCheck(argv.slice(1));
    if (first !== undefined && RECORD_COMMANDS.has(first)) {
      const { runRecordsCommand } = await import('./records/commands.js');
      return await runRecordsCommand(first as 'sessions', argv.slice(1));
    }
    const prepared = await prepare(argv);
    return await (await import('./run.js')).runRelay(prepared);
  } catch (error) {
    if (error instanceof GuardError) {
      // An option error quotes the value it refused, which may be a key pasted into the wrong place.
      const { processMasker } = await import('./mask.js');
      process.stderr.write(`mcpguard: ${processMasker().text(error.message)}\n`);
      return error.exitCode;
    }
    throw error;
  }
}

/** Validate everything up front, then start the server: a bad option never starts it. */
async function prepare(argv: readonly string[]): Promise<Prepared> {
  const parsed = parseArgv(argv, RUN_OPTIONS);
  if (typeof parsed.values.config === 'string') applyConfigFile(parsed, RUN_OPTIONS, parsed.values.config);
  if (parsed.command.length === 0) throw new GuardError('no_command', 'no command to run: mcpguard [options] -- <command> [args...]');
  const v = parsed.values;
  if ((v['stderr-call-bytes'] as number) > (v['stderr-process-bytes'] as number)) {
    throw new GuardError('bad_option', `--stderr-call-bytes (${v['stderr-call-bytes']}) must not exceed --stderr-process-bytes (${v['stderr-process-bytes']})`);
  }
  // A policy is read and checked whole before anything runs (its schema engine only if a rule needs one).
  const policy = v.policy === null ? null : await (await import('./gate/load.js')).loadPolicy(v.policy);
  if (typeof v['approve-cmd'] === 'string') (await import('./gate/approve-cmd.js')).checkApproveCmd(v['approve-cmd']);
  let records: Prepared['records'] = null;
  if (v.records === 'on') {
    const configured = resolveRecordDir(typeof v['record-dir'] === 'string' ? v['record-dir'] : undefined);
    const dir = ensureRecordDir(configured);
    const keyFile = v['audit-key-file'];
    records = { dir, key: typeof keyFile === 'string' ? loadAuditKey(keyFile, configured) : undefined };
  }
  // Signals before the session exists are kept and replayed; none may kill mcpguard with the child running.
  // SIGQUIT too: its default (a core dump, at once) would leave requests unanswered and the log unsealed.
  const signals: Prepared['signals'] = { pending: [], handler: null };
  for (const s of STOP_SIGNALS) {
    process.on(s, (signal: NodeJS.Signals) => (signals.handler ? signals.handler(signal) : signals.pending.push(signal)));
  }
  // A client that vanished must not kill mcpguard before its shutdown ran.
  process.on('SIGPIPE', () => {});
  const [command, ...args] = parsed.command as [string, ...string[]];
  const startedAt = Date.now();
  // One id for the records, the summary and the marker every process of the child's tree inherits
  // (mcpguard's own environment stays unmarked, so the sweep never finds mcpguard or its watchdog).
  const sessionId = newSessionId();
  const started = startChild(command, args, { env: markedEnv(process.env, sessionId) });
  // The watchdog covers the child from its first moment, before the relay has loaded.
  const pid = started.child?.pid;
  const watchdog = pid === undefined ? undefined : armWatchdog(pid, v.grace as number, sessionId);
  return { values: v, command, args, sessionId, started, startedAt, watchdog, records, signals, policy };
}

function print(text: string): number {
  process.stdout.write(text);
  return 0;
}

function optionHelp(table: Record<string, OptionSpec>): string {
  return Object.entries(table)
    .map(([name, spec]) => {
      const arg = spec.kind === 'flag' ? '' : spec.kind === 'enum' ? ` ${spec.values!.join('|')}` : spec.kind === 'ms' ? ' MS' : spec.kind === 'bytes' ? ' BYTES' : spec.kind === 'count' ? ' N' : ' VALUE';
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
74 the audit log could not be written (the session was ended there; the
server's own status is in the session summary); 125 bad usage or an
unusable record directory; 126 command found but not executable
(permission, a missing #! interpreter); 127 command not found.
`;
}

