/**
 * The record subcommands: `sessions`, `activity [SESSION]`, `show SESSION|CALL_ID`
 * and `verify` (`logs` lives in logs.ts). This module reads their options and
 * the record directory; each view is a module of its own (sessions-view,
 * activity-view, show-view, verify-view). Tables for people, `--json` (one
 * object per line) for tools. These are not the relay, so they write to
 * process.stdout, through an Output that waits for a slow reader and is
 * drained before the command returns.
 *
 * Exit codes: 0 success; 1 nothing found, or (verify) a chain that does not
 * verify: tampering, a wrong or missing key, an unreadable file; 2 (verify)
 * every chain is intact but some log is unsealed or torn (a running session, a
 * crash or a cut tail; `--allow-unsealed` makes that 0); 125 bad options.
 */
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { EXIT_USAGE, GuardError } from '../base/errors.js';
import { keepYoungGenerationSmall } from '../process/reclaim.js';
import { activityView } from './activity-view.js';
import { callFilters, sessionFilters } from './filters.js';
import { describe, recordDirFor, resolveRecordDir } from '../records/location.js';
import { nothingHereNote } from './elsewhere.js';
import { Output, settle } from './output.js';
import { sessionsView } from './sessions-view.js';
import { showView } from './show-view.js';
import { skipped, tableStyle, type CommandIO, type ViewContext } from './view-kit.js';
import { verifyView } from './verify-view.js';
import { listLogs } from './views.js';
import { Clock, parseWhen } from './when.js';

export type { CommandIO } from './view-kit.js';

export type RecordsCommandName = 'sessions' | 'activity' | 'show' | 'verify';

type Values = {
  'record-dir'?: string;
  json?: boolean;
  utc?: boolean;
  color?: string;
  'audit-key-file'?: string;
  'allow-unsealed'?: boolean;
  'max-count'?: string;
  since?: string;
  until?: string;
  name?: string;
  failed?: boolean;
  state?: string;
  tool?: string;
  running?: boolean;
  follow?: boolean;
};

const COMMON = { 'record-dir': { type: 'string' }, json: { type: 'boolean' }, utc: { type: 'boolean' }, color: { type: 'string' } } as const;
const OPTIONS = {
  sessions: {
    ...COMMON,
    'max-count': { type: 'string', short: 'n' },
    since: { type: 'string' },
    until: { type: 'string' },
    name: { type: 'string' },
    failed: { type: 'boolean' },
    running: { type: 'boolean' },
  },
  activity: {
    ...COMMON,
    'max-count': { type: 'string', short: 'n' },
    since: { type: 'string' },
    until: { type: 'string' },
    state: { type: 'string' },
    tool: { type: 'string' },
    failed: { type: 'boolean' },
    follow: { type: 'boolean', short: 'f' },
  },
  show: COMMON,
  // verify colours its statuses on a terminal (NO_COLOR respected) and has no times to show: no --color, no --utc.
  verify: { 'record-dir': COMMON['record-dir'], json: COMMON.json, 'audit-key-file': { type: 'string' }, 'allow-unsealed': { type: 'boolean' } },
} as const;
const POSITIONALS: Record<RecordsCommandName, [number, number]> = { sessions: [0, 0], activity: [0, 1], show: [1, 1], verify: [0, 0] };
const COLOR_VALUES = ['auto', 'always', 'never'];

/**
 * Run one record subcommand with its arguments (after the subcommand name);
 * resolves to the exit code once all of its output has been taken by the
 * reader (or the reader has gone away: that is not an error).
 */
export async function runRecordsCommand(
  name: RecordsCommandName | 'logs' | 'prune',
  argv: string[],
  io: CommandIO = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  if (io.stdout === process.stdout) {
    tolerateEpipe();
    // A view streams: its rows die young, and a young generation grown to its maximum only raises the peak.
    keepYoungGenerationSmall();
  }
  if (name === 'logs') {
    const out = new Output(io.stdout);
    let code: number;
    try {
      code = await (await import('./logs.js')).runLogsCommand(argv, io, out);
    } finally {
      await out.end();
    }
    if (out.failure !== null) {
      io.stderr.write(`mcpguard logs: cannot write the output: ${describe(out.failure)}\n`);
      code = code === 0 ? 1 : code;
    }
    await settle(io.stderr);
    return code;
  }
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
  const fail = (message: string, code: number): number => {
    io.stderr.write(`mcpguard ${name}: ${message}\n`);
    return code;
  };
  let values: Values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: OPTIONS[name], allowPositionals: true, strict: true }) as {
      values: Values;
      positionals: string[];
    });
  } catch (error) {
    return fail(optionError(error as Error, argv), EXIT_USAGE);
  }
  const [min, max] = POSITIONALS[name];
  if (positionals.length > max) return fail(`unexpected argument '${positionals[max]}'`, EXIT_USAGE);
  if (positionals.length < min) return fail('expects a SESSION or CALL_ID (a unique prefix), or a log file', EXIT_USAGE);
  if (values['record-dir'] === '') return fail("--record-dir expects a directory, got ''", EXIT_USAGE);
  if (values.color !== undefined && !COLOR_VALUES.includes(values.color))
    return fail(`--color expects one of ${COLOR_VALUES.join(', ')}, got '${values.color}'`, EXIT_USAGE);
  const utc = values.utc === true;
  const now = Date.now();
  let limit: number | null = null;
  let filters: { sessions: ReturnType<typeof sessionFilters>; calls: ReturnType<typeof callFilters>; since: number | null };
  try {
    // Every value is checked before anything is read: a typo is exit 125, never an empty listing.
    if (values['max-count'] !== undefined) {
      if (!/^\d{1,9}$/.test(values['max-count']))
        throw new GuardError('bad_option', `-n/--max-count expects a whole number of rows, got '${values['max-count']}'`);
      limit = Number(values['max-count']);
    }
    filters = {
      sessions: name === 'sessions' ? sessionFilters(values, utc, now) : [],
      calls: name === 'activity' ? callFilters(values, utc, now) : [],
      since: values.since === undefined ? null : parseWhen(values.since, '--since', utc, now),
    };
  } catch (error) {
    return fail((error as Error).message, EXIT_USAGE);
  }
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
    return fail(
      values['record-dir'] === undefined
        ? `record directory '${dir}': ${problem}`
        : `--record-dir expects a directory, got '${values['record-dir']}' (${problem})`,
      EXIT_USAGE,
    );
  }
  const style = tableStyle(io, values.color);
  const json = values.json === true;
  try {
    if (name === 'verify') {
      return verifyView(
        {
          dir,
          configured,
          exists: kind === 'dir',
          json,
          keyFile: values['audit-key-file'],
          allowUnsealed: values['allow-unsealed'] === true,
          style,
        },
        (text) => {
          output.write(text);
        },
        io,
      );
    }
    const logs = kind === 'dir' ? listLogs(dir, (file, reason) => skipped(io, file, reason)) : [];
    const ctx: ViewContext = { output, io, dir, logs, json, clock: new Clock(utc, now), style };
    // No session here: say why this directory, and where this user's sessions are instead (a client that drops XDG_STATE_HOME).
    const elsewhere = (code: number): number => {
      if (logs.length === 0) io.stderr.write(nothingHereNote(name, dir, values['record-dir'], name !== 'sessions', positionals));
      return code;
    };
    if (name === 'sessions') return elsewhere(await sessionsView(ctx, filters.sessions, limit, values.running === true, values.failed === true));
    if (name === 'activity')
      return elsewhere(
        await activityView(ctx, { session: positionals[0], filters: filters.calls, limit, since: filters.since, follow: values.follow === true }),
      );
    return elsewhere(await showView(ctx, positionals[0]!));
  } catch (error) {
    if (error instanceof GuardError) return fail(error.message, error.exitCode);
    return fail((error as Error).message, 1);
  }
}

const VALUE_NAMES: Record<string, string> = {
  '--record-dir': 'a directory',
  '--audit-key-file': 'a key file',
  '--since': 'a time',
  '--until': 'a time',
  '--name': 'a name or a glob',
  '--state': 'a call state',
  '--tool': 'a tool name or a glob',
  '--color': 'auto, always or never',
  '--max-count': 'a number of rows',
  '-n': 'a number of rows',
};

// parseArgs' messages, reworded to name the option and the value as the rest of mcpguard does.
function optionError(error: Error, argv: string[]): string {
  const option = /'(-[^' ]+)/.exec(error.message)?.[1] ?? '';
  if (/^Unknown option/.test(error.message)) return `unknown option '${option}'`;
  if (/argument missing/.test(error.message)) return `${option} expects ${VALUE_NAMES[option] ?? 'a value'}, got nothing`;
  // `-n -1`: a value that looks like an option.
  if (/argument is ambiguous/.test(error.message))
    return `${option} expects ${VALUE_NAMES[option] ?? 'a value'}, got '${argv[argv.indexOf(option) + 1] ?? ''}'`;
  const given = argv.find((arg) => arg.startsWith(`${option}=`));
  if (given !== undefined) return `${option} takes no value, got '${given.slice(option.length + 1)}'`;
  return error.message;
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
