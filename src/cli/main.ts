/**
 * The command line: the only module that knows about argv. It dispatches to
 * a subcommand, or validates the relay's options, starts the server at once
 * and only then loads the relay (so the server's start-up overlaps
 * mcpguard's). Every mcpguard failure becomes a message on stderr and an exit
 * code.
 */
import { accessSync, constants, readFileSync, realpathSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { delimiter, join } from 'node:path';
import { startChild } from '../process/child.js';
import { GuardError } from '../base/errors.js';
import { RECORD_VIEWS, closestSubcommand, helpRequested, isSubcommand, mainHelp, subcommandHelp, tableOptions, viewOptionTakesValue } from './help.js';
import { markedEnv } from '../process/marker.js';
import { RUN_OPTIONS, applyConfigFile } from './options.js';
import { parseArgv } from '../base/option-table.js';
import { otlpCli, otlpWanted, runConfig } from './run-config.js';
import { loadAuditKey } from '../records/key.js';
import { ensureWritableRecordDir, resolveRecordDir } from '../records/location.js';
import { newSessionId } from '../records/session-id.js';
import type { Prepared } from '../session/run.js';
import { armWatchdog } from '../process/watchdog.js';
import { keepYoungGenerationSmall } from '../process/reclaim.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
const RECORD_COMMANDS = new Set<string>(RECORD_VIEWS);

// Signals that end a session through the shutdown (a second one escalates).
const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT'] as const;

/** Run mcpguard with `argv` (without node and script); resolves to the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const first = argv[0];
  if (first === '--version' || first === '-V') return print(`mcpguard ${VERSION}\n`);
  try {
    if (first === 'help') return await help(argv.slice(1));
    if (first === 'completion') return await (await import('./completion.js')).runCompletion(argv.slice(1));
    if (first === 'check') return await (await import('../check/command.js')).runCheck(argv.slice(1));
    if (first === 'install' || first === 'uninstall' || first === 'clients') {
      if (helpRequested(argv.slice(1), (name) => viewOptionTakesValue(first, name), true)) return print(subcommandHelp(first));
      return await (await import('../install/command.js')).runInstallCommand(first, argv.slice(1), installContext());
    }
    if (first === 'policy') {
      if (helpRequested(argv.slice(1), (name) => viewOptionTakesValue('policy', name), true)) return print(subcommandHelp('policy'));
      return await (await import('../gate/policy-command.js')).runPolicyCommand(argv.slice(1));
    }
    if (first === 'export') {
      if (helpRequested(argv.slice(1), (name) => viewOptionTakesValue('export', name), true)) return print(subcommandHelp('export'));
      return await (await import('../views/export-command.js')).runExportCommand(argv.slice(1));
    }
    if (first === 'pins') {
      if (helpRequested(argv.slice(1), (name) => viewOptionTakesValue('pins', name), true)) return print(subcommandHelp('pins'));
      return await (await import('../views/pins-command.js')).runPinsCommand(argv.slice(1));
    }
    if (first !== undefined && RECORD_COMMANDS.has(first)) {
      if (helpRequested(argv.slice(1), (name) => viewOptionTakesValue(first, name), true)) return print(subcommandHelp(first));
      const { runRecordsCommand } = await import('../views/commands.js');
      return await runRecordsCommand(first as (typeof RECORD_VIEWS)[number], argv.slice(1));
    }
    if (helpRequested(argv, takesValue)) return print(relayHelp());
    // The relay is mostly idle, and what it allocates per message dies young.
    keepYoungGenerationSmall();
    const { prepared, retain } = await prepare(argv);
    retainInBackground(prepared, retain);
    return await (await import('../session/run.js')).runRelay(prepared);
  } catch (error) {
    if (error instanceof GuardError) {
      // An option error quotes the value it refused, which may be a key pasted into the wrong place.
      const { processMasker } = await import('../mask/mask.js');
      process.stderr.write(`mcpguard: ${processMasker().text(error.message)}\n`);
      return error.exitCode;
    }
    throw error;
  }
}

/** What install needs from this layer: the relay's option check, and the mcpguard.js the agent will start. */
function installContext(): { checkRelayOptions(options: readonly string[]): void; bin: string } {
  return {
    checkRelayOptions: (options) => void parseArgv([...options, '--', 'server'], RUN_OPTIONS),
    bin: realpathSync(fileURLToPath(new URL('../../bin/mcpguard.js', import.meta.url))),
  };
}

/** `--retain`: prune the record directory while the session starts, never holding it up nor failing it. */
function retainInBackground(p: Prepared, retain: string | null): void {
  if (typeof retain !== 'string' || p.records === null) return;
  const { dir, key } = p.records;
  void import('../views/prune-command.js')
    .then((m) => m.pruneOnStart(dir, retain, key, (line) => process.stderr.write(`mcpguard: ${line}\n`)))
    .catch((error: unknown) => process.stderr.write(`mcpguard: --retain: nothing pruned: ${String(error)}\n`));
}

/** `mcpguard help [SUBCOMMAND]`. */
async function help(args: readonly string[]): Promise<number> {
  const [name, extra] = args;
  if (extra !== undefined) throw new GuardError('bad_usage', `help takes one subcommand, got '${extra}' too (see mcpguard help)`);
  if (name === undefined) return print(relayHelp());
  if (name === '--help' || name === '-h') return print(subcommandHelp('help'));
  if (name === 'check') return print((await import('../check/command.js')).checkHelp());
  if (isSubcommand(name)) return print(subcommandHelp(name));
  const meant = closestSubcommand(name);
  throw new GuardError('unknown_command', `help: no subcommand '${name}'${meant === null ? '' : `; did you mean '${meant}'?`} (see mcpguard help)`);
}

function relayHelp(): string {
  return mainHelp(VERSION, tableOptions(RUN_OPTIONS));
}

function takesValue(name: string): boolean {
  const spec = Object.hasOwn(RUN_OPTIONS, name) ? (RUN_OPTIONS as Record<string, { kind: string }>)[name] : undefined;
  return spec !== undefined && spec.kind !== 'flag';
}

/** Validate everything up front, then start the server: a bad option never starts it. `retain`: --retain, for the command line itself. */
async function prepare(argv: readonly string[]): Promise<{ prepared: Prepared; retain: string | null }> {
  const parsed = parseArgv(argv, RUN_OPTIONS);
  if (typeof parsed.values.config === 'string') applyConfigFile(parsed, RUN_OPTIONS, parsed.values.config);
  if (parsed.command.length === 0) throw new GuardError('no_command', 'no command to run: mcpguard [options] -- <command> [args...]');
  refuseLookalike(argv, parsed.command);
  const v = parsed.values;
  if (v['stderr-call-bytes'] > v['stderr-process-bytes']) {
    throw new GuardError('bad_option', `--stderr-call-bytes (${v['stderr-call-bytes']}) must not exceed --stderr-process-bytes (${v['stderr-process-bytes']})`);
  }
  // A policy is read and checked whole before anything runs (its schema engine only if a rule needs one).
  const policy = v.policy === null ? null : await (await import('../gate/load.js')).loadPolicy(v.policy);
  // Resolved once, here: every approval runs this file, whatever PATH holds later.
  const approveCmd = typeof v['approve-cmd'] === 'string' ? (await import('../gate/approve-cmd.js')).checkApproveCmd(v['approve-cmd']) : null;
  // OTEL_* are options too: a bad value stops mcpguard before the server starts (otel/ loads only when an endpoint is named).
  const otlp = otlpWanted(v, process.env) ? (await import('../otel/config.js')).otlpConfig(process.env, otlpCli(v)) : null;
  let records: Prepared['records'] = null;
  let recordsOff: string | null = v.records === 'off' ? '--records off' : null;
  if (v.records !== 'off') {
    const configured = resolveRecordDir(typeof v['record-dir'] === 'string' ? v['record-dir'] : undefined);
    const keyFile = v['audit-key-file'];
    // A bad key is a mistake in the command line, not in the directory: an error even with best-effort.
    const key = typeof keyFile === 'string' ? loadAuditKey(keyFile, configured) : undefined;
    try {
      records = { dir: ensureWritableRecordDir(configured), key };
    } catch (error) {
      if (v.records !== 'best-effort' || !(error instanceof GuardError) || error.code !== 'ERR_RECORD_DIR') throw error;
      recordsOff = error.message;
      process.stderr.write(`mcpguard: records are off for this session (--records best-effort): ${error.message}\n`);
    }
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
  const watchdog = pid === undefined ? undefined : armWatchdog(pid, v.grace, sessionId);
  const config = runConfig(v);
  // Arguments and results are kept on the calls only for an export that is on (--otlp-content on alone keeps nothing).
  config.session.keepContent = otlp !== null && v['otlp-content'] === 'on';
  config.session.timeSteps = otlp !== null;
  const prepared = { config, command, args, sessionId, started, startedAt, watchdog, records, recordsOff, signals, policy, approveCmd, otlp };
  return { prepared, retain: v.retain };
}

/**
 * A command word without `--` before it that looks like a subcommand is
 * refused with a suggestion, before anything starts: `mcpguard sesions` is a
 * typo, not a server. Exceptions, so that no working server command breaks: a
 * program of that name on PATH runs as it always did, and after `--` the word
 * is the server's command whatever it looks like. A word starting with '-' is
 * an option mcpguard does not know (a server whose name starts with '-' goes
 * after `--`).
 */
function refuseLookalike(argv: readonly string[], command: readonly string[]): void {
  if (argv[argv.length - command.length - 1] === '--') return;
  const word = command[0]!;
  if (word.startsWith('-'))
    throw new GuardError('unknown_option', `unknown option ${word} (see mcpguard --help; a command that starts with '-' goes after --)`);
  const meant = isSubcommand(word) ? word : closestSubcommand(word);
  if (meant === null || onPath(word)) return;
  const fix = `to run a program named '${word}', write: mcpguard [options] -- ${word}`;
  if (meant === word) throw new GuardError('unknown_command', `'${word}' is a subcommand: mcpguard ${word} [options] (its options go after it); ${fix}`);
  throw new GuardError('unknown_command', `unknown command '${word}': did you mean '${meant}'? (${fix})`);
}

/** True when `word` names an executable file in a $PATH directory, as execvp would find it. */
function onPath(word: string): boolean {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    const path = join(dir, word);
    try {
      accessSync(path, constants.X_OK);
      if (statSync(path).isFile()) return true;
    } catch {
      /* not in this directory */
    }
  }
  return false;
}

function print(text: string): number {
  process.stdout.write(text);
  return 0;
}
