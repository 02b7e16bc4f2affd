/**
 * Every option of the relay, in one table: its type, default and check. The
 * command line and the config file (`--config FILE`, keys named after the
 * options) both go through `parseOptionValue` (base/option-table.ts), so a
 * bad value gets the same message wherever it came from: it names the option
 * and the value.
 */
import { constants as bufferConstants } from 'node:buffer';
import { readCapped } from '../base/capped-read.js';
import { parseFileJson } from '../wire/json-file.js';
import { GuardError } from '../base/errors.js';
import {
  MAX_FRAME_BYTES,
  MAX_FRAME_WHY,
  MAX_NAME_CHARS,
  lookup,
  parseOptionValue,
  type OptionSpec,
  type OptionValues,
  type ParsedArgs,
  type ValuesOf,
} from '../base/option-table.js';
import { parseRetain } from '../views/retain-rules.js';
import { RESTART_DELAY_CAP_MS } from '../session/restart-policy.js';

/** Most bytes one Buffer can hold (stderr budgets are buffers that grow up to their size). */
export const MAX_BUFFER_BYTES = bufferConstants.MAX_LENGTH;
const BUFFER_WHY = 'the most one Node Buffer can hold';

/** The excerpt is JSON-escaped into an answer (up to 6 characters a byte) and must still fit in one string. */
export const MAX_EXCERPT_BYTES = Math.floor(bufferConstants.MAX_STRING_LENGTH / 6);
const EXCERPT_WHY = 'once JSON-escaped, the excerpt must fit in one Node string';

export const RUN_OPTIONS = {
  'max-frame-bytes': {
    kind: 'bytes',
    default: 16 * 1024 * 1024,
    min: 1,
    max: MAX_FRAME_BYTES,
    maxWhy: MAX_FRAME_WHY,
    help: 'longest accepted line in either direction, without its newline',
  },
  'on-invalid': {
    kind: 'enum',
    default: 'close',
    values: ['close', 'reject'],
    help: 'after rejecting a client frame: close the session, or reject it and go on',
  },
  'on-child-noise': {
    kind: 'enum',
    default: 'continue',
    values: ['continue', 'close'],
    help: 'after diverting a non-protocol line from the server: go on, or close the session',
  },
  'allow-batch': {
    kind: 'flag',
    default: false,
    help: 'accept JSON-RPC batches before the protocol version is known (a session that negotiates 2025-03-26 accepts them anyway)',
  },
  'era-rules': {
    kind: 'enum',
    default: 'enforce',
    values: ['enforce', 'warn'],
    help: "lines that break their protocol era's rules: refuse them, or forward them and only report them",
  },
  grace: { kind: 'ms', default: 5000, min: 0, help: 'each shutdown step waits this long: stdin close, then SIGTERM, then SIGKILL' },
  'drain-ms': { kind: 'ms', default: 1000, min: 0, help: 'after the server exits, wait this long for its pipes to reach EOF, then cut them' },
  'call-timeout': {
    kind: 'ms',
    default: null,
    min: 1,
    help: 'answer a request with a timeout error and cancel it at the server after this long; not a subscriptions/listen, which is a stream (default: off)',
  },
  'session-summary': {
    kind: 'enum',
    default: 'auto',
    values: ['auto', 'human', 'json', 'off', 'on'],
    help: 'the session summary on stderr at exit: auto (a few lines for a person when stderr is a terminal, else one JSON line), human, json, or off; on is the old spelling of json',
  },
  'stderr-call-bytes': { kind: 'bytes', default: 16384, min: 0, max: MAX_BUFFER_BYTES, maxWhy: BUFFER_WHY, help: 'child stderr retained per call' },
  'stderr-process-bytes': {
    kind: 'bytes',
    default: 262144,
    min: 0,
    max: MAX_BUFFER_BYTES,
    maxWhy: BUFFER_WHY,
    help: 'child stderr retained by the whole process: all calls and the session tail together',
  },
  'stderr-excerpt-bytes': {
    kind: 'bytes',
    default: 4096,
    min: 128,
    max: MAX_EXCERPT_BYTES,
    maxWhy: EXCERPT_WHY,
    help: 'most stderr text that ever goes into anything an agent sees (label and marker included)',
  },
  'stderr-retain': { kind: 'enum', default: 'tail', values: ['tail', 'head', 'head+tail'], help: 'which part of a stream each budget keeps' },
  'stderr-passthrough': { kind: 'enum', default: 'on', values: ['on', 'off'], help: "mirror the child's (masked) stderr to mcpguard's stderr" },
  'stderr-passthrough-bytes': { kind: 'bytes', default: 1024 * 1024, min: 0, help: 'most child stderr mirrored; the rest is counted and reported in one line' },
  'stderr-excerpt-on-error': {
    kind: 'flag',
    default: false,
    help: 'attach a failed tools/call\'s stderr excerpt to its answer under _meta "io.mcpguard/stderr"',
  },
  records: {
    kind: 'enum',
    default: 'on',
    values: ['on', 'best-effort', 'off'],
    help: 'keep the hash-chained audit log of this session; on: a record directory that cannot be used is an error (exit 125) before the server starts; best-effort: the server runs anyway, without records, and mcpguard says why',
  },
  'record-dir': {
    kind: 'string',
    default: null,
    arg: 'DIR',
    help: 'where records go (default: $MCPGUARD_HOME, else $XDG_STATE_HOME/mcpguard, else ~/.local/state/mcpguard)',
  },
  fsync: { kind: 'flag', default: false, help: 'each record reaches the disk before the frame it describes is forwarded' },
  retain: {
    kind: 'retain',
    default: null,
    check: retainProblem,
    help: "on start, prune the record directory in the background as mcpguard prune does: remove sealed (and crashed) session logs that ended more than AGE ago, then the oldest until the logs take at most SIZE (e.g. 30d, 1G, or 30d,1G); never a running session's log; a failure is a line on stderr, never the session's",
  },
  'audit-key-file': {
    kind: 'string',
    default: null,
    arg: 'FILE',
    help: 'HMAC key (at least 16 bytes, kept outside the record directory): an HMAC chain instead of a plain hash chain',
  },
  'validate-args': {
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
    help: "check each tools/call's arguments against the tool's inputSchema from the server's tools/list, before it reaches the server",
  },
  'validate-output': {
    kind: 'enum',
    default: 'report',
    values: ['report', 'enforce'],
    help: "with --validate-args on: a tools/call result whose structuredContent does not match the tool's outputSchema is reported, or (enforce) turned into a tool error",
  },
  policy: {
    kind: 'policy',
    default: null,
    help: 'a JSON policy file: which tool calls are allowed, denied, or asked about (in --config: a path, or the policy object itself)',
  },
  'secrets-in-args': {
    kind: 'enum',
    default: 'deny-env',
    values: ['deny-env', 'deny', 'ask', 'off'],
    help: "a tools/call whose arguments carry the value of one of mcpguard's secret environment variables, or a known credential shape, where no policy rule names secrets: deny-env (an env value is denied, a credential shape asked about), deny (both denied), ask (both asked about), or off",
  },
  'approve-cmd': {
    kind: 'string',
    default: null,
    arg: 'CMD',
    help: 'when the client cannot show an approval card: run this command (no shell; words split on spaces) with the action as JSON on stdin; exit 0 approves',
  },
  'approval-timeout': { kind: 'ms', default: 120000, min: 1, help: 'an approval not answered within this wall-clock time is denied' },
  restart: {
    kind: 'enum',
    default: 'never',
    values: ['never', 'on-failure', 'always'],
    help: 'when the server exits while the client is still connected: end the session (never), start it again if it failed (on-failure: exit code other than 0 or a signal), or start it again whatever its exit (always)',
  },
  'max-restarts': {
    kind: 'count',
    default: 5,
    min: 0,
    max: 1000000,
    help: 'with --restart: most restarts within --restart-window; one more crash ends the session with that exit status',
  },
  'restart-window': { kind: 'ms', default: 60000, min: 1, help: 'with --restart: the sliding window --max-restarts counts in' },
  'restart-delay': {
    kind: 'ms',
    default: 250,
    min: 0,
    max: RESTART_DELAY_CAP_MS,
    maxWhy: 'the cap of the exponential backoff',
    help: 'with --restart: the first restart waits about this long; each further restart within the window doubles it (with jitter), up to 30s',
  },
  'restart-wait': {
    kind: 'ms',
    default: 30000,
    min: 1,
    help: 'with --restart: how long a request that arrives while the server is down waits for the new one before it is answered with an error',
  },
  'on-tool-change': {
    kind: 'enum',
    default: 'ask',
    values: ['warn', 'ask', 'block', 'off'],
    help: "a tool that is new, removed or changed since the server's tools were pinned (first tools/list of this server): warn (pass, record, the pin takes it), ask (the first call shows the change on an approval card), block (hidden and refused until `mcpguard pins accept`), or off (no pins)",
  },
  sanitize: {
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
    help: "write out hidden characters (controls, ANSI/OSC escapes, zero-width and bidi characters) in tool names, titles, descriptions and the server's instructions as \\uXXXX before the client sees them",
  },
  'sanitize-results': { kind: 'flag', default: false, help: 'also write out hidden characters in the text content of tools/call results' },
  'otlp-endpoint': {
    kind: 'url',
    default: null,
    arg: 'URL',
    help: "send each call as an OpenTelemetry span (and the server's stderr as logs, and metrics) to this OTLP/HTTP endpoint, e.g. http://localhost:4318 (default: OTEL_EXPORTER_OTLP_ENDPOINT; export is off without an endpoint)",
  },
  otlp: {
    kind: 'enum',
    default: 'on',
    values: ['on', 'off'],
    help: 'off: no OpenTelemetry export, even when --otlp-endpoint or OTEL_EXPORTER_OTLP_* names an endpoint',
  },
  'otlp-content': {
    kind: 'enum',
    default: 'off',
    values: ['on', 'off'],
    help: "on: each tools/call span carries the call's arguments and result (gen_ai.tool.call.arguments / .result), secrets masked, each cut at 4096 bytes; off: neither (names, ids and the gate's steps only)",
  },
  config: { kind: 'string', default: null, arg: 'FILE', help: 'read options from a JSON file whose keys are option names; flags on the command line win' },
  name: {
    kind: 'label',
    default: null,
    max: MAX_NAME_CHARS,
    help: `the session's name in the records and in mcpguard sessions (1 to ${MAX_NAME_CHARS} printable characters; default: the server's serverInfo.name, else the command's basename)`,
  },
} as const satisfies Record<string, OptionSpec>;

export type RunOptionName = keyof typeof RUN_OPTIONS;
/** The relay's option values, typed from RUN_OPTIONS. */
export type RunValues = ValuesOf<typeof RUN_OPTIONS>;

/** --retain's check: why AGE,SIZE is refused, or null. */
function retainProblem(text: string): string | null {
  const rules = parseRetain(text);
  return typeof rules === 'string' ? rules : null;
}
/** Most bytes read from a --config file; a config is a few hundred bytes. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/**
 * Merge a JSON config file under the command line: keys are option names
 * (`"stderr-call-bytes": 65536` or `"65536"`); unknown keys and bad values are
 * errors naming the file, the key and the value. `config` itself is not a key.
 */
export function applyConfigFile(parsed: ParsedArgs<object>, table: Record<string, OptionSpec>, path: string): void {
  let read: ReturnType<typeof readCapped>;
  try {
    read = readCapped(path, MAX_CONFIG_BYTES);
  } catch (error) {
    throw new GuardError('bad_config', `--config cannot read '${path}': ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (read.tooBig) throw new GuardError('bad_config', `--config '${path}' holds more than ${MAX_CONFIG_BYTES} bytes, the most a config file may hold`);
  const text = read.bytes.toString('utf8');
  if (text.trim() === '') throw new GuardError('bad_config', `--config '${path}' is empty (a FIFO with no writer reads as empty)`);
  const parsedJson = parseFileJson(text);
  if (!parsedJson.ok && parsedJson.syntax) throw new GuardError('bad_config', `--config '${path}' is not valid JSON: ${parsedJson.reason}`);
  // A key given twice anywhere (a policy inside included): which copy counts would depend on the reader.
  if (!parsedJson.ok) throw new GuardError('bad_config', `--config '${path}': ${parsedJson.reason}`);
  const data = parsedJson.value;
  if (data === null || typeof data !== 'object' || Array.isArray(data))
    throw new GuardError('bad_config', `--config '${path}' must hold a JSON object of option names`);
  for (const [key, raw] of Object.entries(data)) {
    const spec = lookup(table, key);
    if (spec === undefined || key === 'config') throw new GuardError('bad_config', `--config '${path}': unknown key "${key}"`);
    const value = parseOptionValue(key, spec, raw, `--config '${path}' key "${key}"`);
    if (!parsed.given.has(key)) (parsed.values as OptionValues)[key] = value;
  }
}
