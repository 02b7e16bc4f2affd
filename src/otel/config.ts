/**
 * The export's configuration, read the way every OpenTelemetry SDK reads it
 * (the OTLP exporter spec and the SDK environment variables), so that a team's
 * existing OTEL_* settings point mcpguard at their collector unchanged. It is
 * read once, up front, like every other option: a bad value stops mcpguard
 * before the child starts, naming the variable and the value (header values
 * excepted: they carry API keys and are never shown).
 */
import { readCapped } from '../base/capped-read.js';
import { GuardError } from '../base/errors.js';
import { shownText } from '../mask/mask.js';
import type { OtlpConfig, OtlpProtocol, SignalTarget } from './api.js';
import type { AttributeValue } from './model.js';

type Env = Readonly<Record<string, string | undefined>>;
type Signal = 'traces' | 'logs' | 'metrics';
const SIGNALS: readonly Signal[] = ['traces', 'logs', 'metrics'];
const PREFIX = 'OTEL_EXPORTER_OTLP_';

/** The spec's default per-request timeout, ms. */
export const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_TIMEOUT_MS = 600_000;
type SamplerKind = OtlpConfig['sampler']['kind'];
const SAMPLERS: readonly SamplerKind[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];

/**
 * Resolves the export's configuration from the environment and the command
 * line (`--otlp-endpoint URL`, `--otlp off`). Null when the export is off:
 * `--otlp off`, OTEL_SDK_DISABLED=true, or no endpoint anywhere (there is no
 * default collector: nothing leaves the machine unless someone asked).
 * `cli.endpoint` is a base URL like OTEL_EXPORTER_OTLP_ENDPOINT and wins over
 * every endpoint variable: what was typed for this run beats the environment.
 * Throws a GuardError (usage) naming the variable for any bad value.
 */
export function otlpConfig(env: Env, cli: { endpoint?: string; off?: boolean }): OtlpConfig | null {
  if (cli.off === true) return null;
  if (disabled(env)) return null;
  const targets: Record<Signal, SignalTarget | null> = { traces: null, logs: null, metrics: null };
  for (const signal of SIGNALS) {
    const url = signalUrl(env, cli.endpoint, signal);
    if (url === null) continue;
    targets[signal] = {
      url,
      headers: signalHeaders(env, signal),
      protocol: signalProtocol(env, signal),
      compression: signalCompression(env, signal),
      timeoutMs: signalTimeout(env, signal),
    };
    const tls = signalTls(env, signal);
    // The spec's certificate options are for a secure connection only: on http: they are checked, then unused.
    if (tls !== null && url.startsWith('https:')) targets[signal]!.tls = tls;
  }
  if (targets.traces === null && targets.logs === null && targets.metrics === null) return null;
  return { ...targets, resource: resourceAttributes(env), sampler: sampler(env) };
}

/** An empty variable is an unset one (SDK environment spec). */
function read(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function bad(name: string, value: string, why: string): GuardError {
  return new GuardError('otlp-config', `${name}=${JSON.stringify(shownText(value))}: ${why}`);
}

/** The signal's own variable if set, else the general one, with the name it came from. */
function pick(env: Env, option: string, signal: Signal): [name: string, value: string] | null {
  for (const name of [`${PREFIX}${signal.toUpperCase()}_${option}`, `${PREFIX}${option}`]) {
    const value = read(env, name);
    if (value !== undefined) return [name, value];
  }
  return null;
}

function disabled(env: Env): boolean {
  const value = read(env, 'OTEL_SDK_DISABLED');
  if (value === undefined || value.toLowerCase() === 'false') return false;
  if (value.toLowerCase() === 'true') return true;
  throw bad('OTEL_SDK_DISABLED', value, 'must be true or false');
}

function signalUrl(env: Env, cliBase: string | undefined, signal: Signal): string | null {
  if (cliBase !== undefined) return withPath(checkedUrl('--otlp-endpoint', cliBase), signal);
  const own = read(env, `${PREFIX}${signal.toUpperCase()}_ENDPOINT`);
  // A per-signal endpoint is used as is; URL adds the root path when it has none.
  if (own !== undefined) return checkedUrl(`${PREFIX}${signal.toUpperCase()}_ENDPOINT`, own).href;
  const base = read(env, `${PREFIX}ENDPOINT`);
  return base === undefined ? null : withPath(checkedUrl(`${PREFIX}ENDPOINT`, base), signal);
}

/** `v1/<signal>` relative to the base, which is first made to end with a slash. */
function withPath(base: URL, signal: Signal): string {
  const href = base.href.replace(/[?#].*$/, '');
  return `${href.endsWith('/') ? href : `${href}/`}v1/${signal}`;
}

function checkedUrl(name: string, value: string): URL {
  // A URL may carry a password (https://user:token@host): it is not shown.
  const shown = value.replace(/\/\/[^/@]*@/, '//…@');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad(name, shown, 'not a URL (expected http://host:4318 or https://…)');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad(name, shown, `scheme ${url.protocol} is not supported: OTLP/HTTP takes http: or https:`);
  return url;
}

function signalProtocol(env: Env, signal: Signal): OtlpProtocol {
  const found = pick(env, 'PROTOCOL', signal);
  if (found === null) return 'http/protobuf';
  const [name, value] = found;
  if (value === 'http/protobuf' || value === 'http/json') return value;
  if (value === 'grpc') throw bad(name, value, 'OTLP/gRPC is not supported: use http/protobuf (the default; the collector listens on 4318) or http/json');
  throw bad(name, value, 'must be http/protobuf or http/json');
}

function signalCompression(env: Env, signal: Signal): 'gzip' | 'none' {
  const found = pick(env, 'COMPRESSION', signal);
  // The exporter specification: "If the value is missing, then compression is disabled."
  if (found === null) return 'none';
  const [name, value] = found;
  if (value === 'gzip' || value === 'none') return value;
  throw bad(name, value, 'must be gzip or none');
}

function signalTimeout(env: Env, signal: Signal): number {
  const found = pick(env, 'TIMEOUT', signal);
  if (found === null) return DEFAULT_TIMEOUT_MS;
  const [name, value] = found;
  const ms = /^\d{1,7}$/.test(value) ? Number(value) : Number.NaN;
  if (!(ms >= 1 && ms <= MAX_TIMEOUT_MS)) throw bad(name, value, `must be whole milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  return ms;
}

/** The most a PEM file may hold (a CA bundle is a few hundred KB). */
const PEM_CAP = 1024 * 1024;

function signalTls(env: Env, signal: Signal): { ca?: Buffer; cert?: Buffer; key?: Buffer } | null {
  const ca = pemFile(env, 'CERTIFICATE', signal);
  const cert = pemFile(env, 'CLIENT_CERTIFICATE', signal);
  const key = pemFile(env, 'CLIENT_KEY', signal);
  if ((cert === undefined) !== (key === undefined)) {
    const missing = cert === undefined ? 'CLIENT_CERTIFICATE' : 'CLIENT_KEY';
    throw new GuardError(
      'otlp-config',
      `${PREFIX}${missing} (or ${PREFIX}${signal.toUpperCase()}_${missing}) is not set: mTLS needs both the client certificate and its key`,
    );
  }
  if (ca === undefined && cert === undefined) return null;
  return { ...(ca && { ca }), ...(cert && { cert }), ...(key && { key }) };
}

/** A PEM file named by the variable, read once with a size cap; its content is never shown (a key is a secret). */
function pemFile(env: Env, option: string, signal: Signal): Buffer | undefined {
  const found = pick(env, option, signal);
  if (found === null) return undefined;
  const [name, path] = found;
  let read: ReturnType<typeof readCapped>;
  try {
    read = readCapped(path, PEM_CAP);
  } catch (error) {
    throw bad(name, path, `cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  if (read.tooBig) throw bad(name, path, `is over ${PEM_CAP} bytes: not a PEM certificate or key`);
  if (!read.bytes.includes('-----BEGIN ')) throw bad(name, path, 'is not PEM (no -----BEGIN line)');
  return Buffer.from(read.bytes);
}

// Node refuses these in a header value (CR, LF, NUL and other controls); caught here, not at the first export.
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
// Set by the exporter from the protocol, the compression and the body: a second value would garble the request.
const OWN_HEADERS = new Set(['content-type', 'content-encoding', 'content-length', 'transfer-encoding', 'connection']);

function signalHeaders(env: Env, signal: Signal): Record<string, string> {
  // Both are checked even when the signal's own replaces the general one: a bad value is bad wherever it is.
  const general = parseHeaders(env, `${PREFIX}HEADERS`);
  const own = parseHeaders(env, `${PREFIX}${signal.toUpperCase()}_HEADERS`);
  return own ?? general ?? {};
}

/** `k=v,k2=v2`, percent-decoded (W3C Baggage's format, no properties). Errors never show a value. */
function parseHeaders(env: Env, name: string): Record<string, string> | null {
  const raw = read(env, name);
  if (raw === undefined) return null;
  const headers: Record<string, string> = {};
  for (const [i, [key, value]] of pairs(raw, name, true).entries()) {
    if (!TOKEN.test(key)) throw new GuardError('otlp-config', `${name}: header ${i + 1} has a bad name ${JSON.stringify(shownText(key))}`);
    if (!HEADER_VALUE.test(value))
      throw new GuardError('otlp-config', `${name}: the value of header ${JSON.stringify(key)} holds a control character (values are not shown)`);
    if (OWN_HEADERS.has(key.toLowerCase()))
      throw new GuardError('otlp-config', `${name}: header ${JSON.stringify(key)} is set by mcpguard itself (from the protocol and compression)`);
    headers[key.toLowerCase()] = value;
  }
  return headers;
}

/** Splits `k=v,k2=v2` and percent-decodes both sides; `secret` keeps values out of the error. */
function pairs(raw: string, name: string, secret: boolean): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [i, item] of raw.split(',').entries()) {
    if (item.trim() === '') continue;
    const eq = item.indexOf('=');
    const where = `item ${i + 1}`;
    if (eq <= 0) {
      const shown = secret ? 'has no key=value (values are not shown)' : `${JSON.stringify(shownText(item))} is not key=value`;
      throw new GuardError('otlp-config', `${name}: ${where} ${shown}`);
    }
    const key = decode(item.slice(0, eq).trim());
    const value = decode(item.slice(eq + 1).trim());
    if (key === null || key === '') throw new GuardError('otlp-config', `${name}: ${where} has a bad key (percent-encoding)`);
    if (value === null) {
      const shown = secret ? '' : ` ${JSON.stringify(shownText(item))}`;
      throw new GuardError('otlp-config', `${name}: the value of ${JSON.stringify(shownText(key))}${shown} is not valid percent-encoding`);
    }
    out.push([key, value]);
  }
  return out;
}

function decode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}

function resourceAttributes(env: Env): Array<readonly [string, AttributeValue]> {
  const attrs = new Map<string, AttributeValue>([['service.name', 'mcpguard']]);
  const raw = read(env, 'OTEL_RESOURCE_ATTRIBUTES');
  if (raw !== undefined) for (const [key, value] of pairs(raw, 'OTEL_RESOURCE_ATTRIBUTES', false)) attrs.set(key, value);
  // OTEL_SERVICE_NAME wins over service.name in OTEL_RESOURCE_ATTRIBUTES (SDK environment spec).
  const service = read(env, 'OTEL_SERVICE_NAME');
  if (service !== undefined) attrs.set('service.name', service);
  attrs.set('telemetry.sdk.name', 'mcpguard');
  attrs.set('telemetry.sdk.language', 'nodejs');
  return [...attrs];
}

function sampler(env: Env): OtlpConfig['sampler'] {
  const value = read(env, 'OTEL_TRACES_SAMPLER');
  const kind = (value ?? 'parentbased_always_on') as SamplerKind;
  if (!SAMPLERS.includes(kind)) throw bad('OTEL_TRACES_SAMPLER', value ?? '', `must be one of ${SAMPLERS.join(', ')} (remote samplers are not supported)`);
  const arg = read(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (!kind.endsWith('traceidratio') || arg === undefined) return { kind, ratio: 1 };
  const ratio = /^(?:\d+(?:\.\d*)?|\.\d+)$/.test(arg) ? Number(arg) : Number.NaN;
  if (!(ratio >= 0 && ratio <= 1)) throw bad('OTEL_TRACES_SAMPLER_ARG', arg, `the ratio for ${kind} must be a number from 0 to 1`);
  return { kind, ratio };
}
