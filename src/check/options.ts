/**
 * The command line of `mcpguard check`: the same option table format and the
 * same `parseArgv` as the relay, so a bad value gets the same kind of message
 * ("--grace expects milliseconds …, got 'soon'").
 */
import { statSync } from 'node:fs';
import { GuardError } from '../base/errors.js';
import { MAX_FRAME_BYTES, MAX_FRAME_WHY, parseArgv, type OptionSpec } from '../base/option-table.js';

/** Released MCP revisions of the legacy era: the `initialize` handshake, which this check speaks for them. */
export const PROTOCOL_VERSIONS = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'] as const;

/**
 * The newest legacy revision: what `initialize` asks for when the era is
 * legacy and no version was named. A server that knows only an older one
 * answers with that one, which the check accepts: asking for the newest
 * exercises the negotiation too.
 */
export const DEFAULT_PROTOCOL_VERSION = '2025-11-25';

/** The modern era's revision this check speaks: no `initialize`; `server/discover` and `_meta` on every request. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';

/** Probe with `server/discover`, as the SDK v2 client does, and continue in the era the answer shows. */
export const AUTO = 'auto';

/** What --protocol-version takes: auto, the modern revision, or a legacy one. */
export const PROTOCOL_CHOICES = [AUTO, MODERN_PROTOCOL_VERSION, ...PROTOCOL_VERSIONS] as const;

export const MAX_RUNS = 100;

export const CHECK_OPTIONS = {
  'protocol-version': {
    kind: 'enum',
    default: AUTO,
    values: PROTOCOL_CHOICES,
    help: `auto probes with server/discover and continues in the era the answer shows; ${MODERN_PROTOCOL_VERSION} speaks only the modern era; a legacy version is the protocolVersion sent in initialize`,
  },
  call: { kind: 'string', default: null, help: 'also call this tool (tools/call) at the end of the conversation' },
  args: { kind: 'string', default: null, help: 'the arguments of --call, a JSON object (default {})' },
  env: { kind: 'string', default: null, repeatable: true, help: 'KEY=VALUE added to the server environment; repeatable' },
  cwd: { kind: 'string', default: null, help: 'run the server in this directory (default: the current one)' },
  runs: { kind: 'count', default: 1, min: 1, max: MAX_RUNS, help: `repeat the whole check N times, 1 to ${MAX_RUNS}` },
  'start-timeout': {
    kind: 'ms',
    default: 30000,
    min: 1,
    help: 'wait this long for the answer to the first request (server/discover, or initialize), which includes the server starting (npx may install first); under auto, no answer to server/discover by then means a legacy server',
  },
  timeout: { kind: 'ms', default: 10000, min: 1, help: 'wait this long for each later response' },
  grace: { kind: 'ms', default: 5000, min: 0, help: 'after stdin closes, wait this long for the exit; then SIGTERM, wait again, SIGKILL' },
  'max-frame-bytes': {
    kind: 'bytes',
    default: 16 * 1024 * 1024,
    min: 1,
    max: MAX_FRAME_BYTES,
    maxWhy: MAX_FRAME_WHY,
    help: 'longest stdout line accepted, without its newline',
  },
  json: { kind: 'flag', default: false, help: 'print one JSON report object instead of the text report' },
} as const satisfies Record<string, OptionSpec>;

export interface ToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** Everything one `mcpguard check` invocation will do, checked. */
export interface CheckPlan {
  command: string;
  args: string[];
  cwd: string | undefined;
  /** The server's whole environment: mcpguard's own plus every --env. */
  env: NodeJS.ProcessEnv;
  /** The --env pairs, in order, for the report. */
  addedEnv: string[];
  /** auto, the modern revision, or a legacy one (PROTOCOL_CHOICES). */
  protocolVersion: string;
  call: ToolCall | null;
  runs: number;
  startTimeoutMs: number;
  timeoutMs: number;
  graceMs: number;
  maxFrameBytes: number;
  json: boolean;
}

/** Parse `check`'s argv (without the word `check`); null means `--help`. */
export function parseCheckArgv(argv: readonly string[]): CheckPlan | null {
  if (wantsHelp(argv)) return null;
  const parsed = parseArgv(argv, CHECK_OPTIONS, 'mcpguard check --help');
  const addedEnv = parsed.values.env.map(checkEnvPair);
  const v = parsed.values;
  if (parsed.command.length === 0) throw new GuardError('no_command', 'no command to check: mcpguard check [options] -- <command> [args...]');
  const [command, ...args] = parsed.command as [string, ...string[]];
  const env: NodeJS.ProcessEnv = { ...process.env };
  // defineProperty: `--env __proto__=x` must set a variable of that name, not the object's prototype.
  for (const pair of addedEnv)
    Object.defineProperty(env, pair.slice(0, pair.indexOf('=')), {
      value: pair.slice(pair.indexOf('=') + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  return {
    command,
    args,
    cwd: v.cwd === null ? undefined : checkDirectory(v.cwd),
    env,
    addedEnv,
    protocolVersion: v['protocol-version'],
    call: toolCall(v.call, v.args),
    runs: v.runs,
    startTimeoutMs: v['start-timeout'],
    timeoutMs: v.timeout,
    graceMs: v.grace,
    maxFrameBytes: v['max-frame-bytes'],
    json: v.json,
  };
}

/** `-h` first, or `--help` among the options (before `--` or the command). */
function wantsHelp(argv: readonly string[]): boolean {
  if (argv[0] === '-h') return true;
  for (const arg of argv) {
    if (arg === '--help') return true;
    if (arg === '--' || !arg.startsWith('--')) return false;
  }
  return false;
}

function checkEnvPair(pair: string): string {
  if (pair.indexOf('=') < 1) throw new GuardError('bad_option', `--env expects KEY=VALUE, got '${pair}'`);
  return pair;
}

function checkDirectory(dir: string): string {
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    // missing or unreadable: same message
  }
  // Checked here: spawn would report a missing cwd as ENOENT, i.e. as "command not found".
  if (!isDirectory) throw new GuardError('bad_option', `--cwd expects an existing directory, got '${dir}'`);
  return dir;
}

function toolCall(name: string | null, argsText: string | null): ToolCall | null {
  if (name === null) {
    if (argsText !== null) throw new GuardError('bad_option', `--args needs --call NAME, got --args '${argsText}' alone`);
    return null;
  }
  if (argsText === null) return { name, arguments: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(argsText);
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new GuardError('bad_option', `--args expects a JSON object, got '${argsText}'`);
  }
  return { name, arguments: parsed as Record<string, unknown> };
}
