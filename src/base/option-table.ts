/**
 * The option-table machinery every command line of mcpguard shares: a table
 * names each option's kind, default and bounds; `parseArgv` reads argv
 * against it and `parseOptionValue` checks one value, so a bad value gets the
 * same message wherever it came from: it names the option and the value.
 * The tables themselves live with their commands (cli/options.ts,
 * check/options.ts), which turn the values into typed configuration.
 */
import { constants as bufferConstants } from 'node:buffer';
import { GuardError } from './errors.js';

export type OptionKind = 'flag' | 'ms' | 'bytes' | 'count' | 'enum' | 'string' | 'policy' | 'label' | 'retain' | 'url';

export interface OptionSpec {
  kind: OptionKind;
  /** Default value; null means "off" for optional numbers. */
  default: boolean | number | string | null;
  values?: readonly string[];
  /** Smallest accepted number. */
  min?: number;
  /** Largest accepted number (durations: at most MAX_TIMER_MS; other kinds: MAX_SAFE_INTEGER). */
  max?: number;
  /** Why `max` is the limit, for the error message. */
  maxWhy?: string;
  /** May be given more than once; the values are collected in order (default []). */
  repeatable?: boolean;
  /** What help calls the value of a `string` option (DIR, FILE, CMD); VALUE when absent. */
  arg?: string;
  /** For kind `retain`: why a value is refused (`expects …`), or null (the rules live with the layer that applies them). */
  check?: (text: string) => string | null;
  help: string;
}

/**
 * Node clamps a timer delay above 2^31-1 ms (about 24.8 days) to 1 ms: a
 * longer --grace would fire at once. Every duration is refused above it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;
const TIMER_WHY = 'about 24.8 days, the longest a Node timer can wait';

/** Longest string Node can hold: any member of a frame may be read as text, so no frame may be longer. */
export const MAX_FRAME_BYTES = bufferConstants.MAX_STRING_LENGTH;
export const MAX_FRAME_WHY = 'the longest string Node can hold; any part of a frame may be read as text';

/** Longest --name: a label for a table column, not a description. */
export const MAX_NAME_CHARS = 64;

export type OptionValues = Record<string, boolean | number | string | string[] | null | Record<string, unknown>>;

/** Defaults of a table as a plain object. */
export function defaultsOf(table: Record<string, OptionSpec>): OptionValues {
  const values: OptionValues = {};
  for (const [name, spec] of Object.entries(table)) values[name] = spec.repeatable ? [] : spec.default;
  return values;
}

/**
 * The values of a table, typed from its entries (a table declared `as const`):
 * what each kind parses to, null where the default is null, string[] for a
 * repeatable option. Commands read their options through this type, never
 * through casts of `OptionValues`.
 */
export type ValuesOf<T extends Record<string, OptionSpec>> = { -readonly [K in keyof T]: ValueOf<T[K]> };

type ValueOf<S extends OptionSpec> = S extends { repeatable: true }
  ? string[]
  :
      | (S extends { kind: 'flag' }
          ? boolean
          : S extends { kind: 'enum'; values: readonly (infer V)[] }
            ? V
            : S extends { kind: 'ms' | 'bytes' | 'count' }
              ? number
              : S extends { kind: 'policy' }
                ? string | Record<string, unknown>
                : string)
      | (S extends { default: null } ? null : never);

// A Map: the suffix is user input, and a plain object would also "know" constructor or __proto__.
const MULTIPLIERS = new Map([
  ['', 1],
  ['k', 1024],
  ['kib', 1024],
  ['m', 1024 ** 2],
  ['mib', 1024 ** 2],
  ['g', 1024 ** 3],
  ['gib', 1024 ** 3],
]);

/** Parse and check one value; `raw` is a string from argv or any JSON value from a config file. */
export function parseOptionValue(
  name: string,
  spec: OptionSpec,
  raw: unknown,
  source = `--${name}`,
): boolean | number | string | null | Record<string, unknown> {
  const shown = typeof raw === 'string' ? `'${raw}'` : JSON.stringify(raw);
  switch (spec.kind) {
    case 'flag':
      if (typeof raw === 'boolean') return raw;
      if (raw === 'true' || raw === 'false') return raw === 'true';
      throw new GuardError('bad_option', `${source} expects true or false, got ${shown}`);
    case 'enum':
      if (typeof raw === 'string' && spec.values!.includes(raw)) return raw;
      throw new GuardError('bad_option', `${source} expects one of ${spec.values!.join(', ')}, got ${shown}`);
    case 'string':
      if (typeof raw === 'string' && raw.length > 0) return raw;
      throw new GuardError('bad_option', `${source} expects a non-empty string, got ${shown}`);
    case 'url': {
      // An http(s) URL the WHATWG parser accepts; credentials belong in headers, not in a URL that records and summaries keep.
      let url: URL | null = null;
      try {
        url = typeof raw === 'string' ? new URL(raw) : null;
      } catch {}
      const why =
        url === null
          ? 'expects an http:// or https:// URL'
          : url.protocol !== 'http:' && url.protocol !== 'https:'
            ? `expects an http:// or https:// URL (not ${url.protocol})`
            : url.username !== '' || url.password !== ''
              ? 'expects a URL without user or password (give credentials in OTEL_EXPORTER_OTLP_HEADERS)'
              : null;
      if (why === null) return raw as string;
      throw new GuardError('bad_option', `${source} ${why}, got ${shown}`);
    }
    case 'policy':
      // A path; a config file may also hold the policy object itself.
      if (typeof raw === 'string' && raw.length > 0) return raw;
      if (typeof raw === 'object' && raw !== null && !Array.isArray(raw) && source !== `--${name}`) return raw as Record<string, unknown>;
      throw new GuardError('bad_option', `${source} expects a policy file path${source === `--${name}` ? '' : ' or a policy object'}, got ${shown}`);
    case 'label': {
      // A name for people and tables: printable, one line, not blank, not a paragraph.
      const max = spec.max ?? MAX_NAME_CHARS;
      const text = typeof raw === 'string' ? raw : null;
      const why =
        text === null || text.trim() === ''
          ? 'it is empty'
          : [...text].length > max
            ? `it is longer than ${max} characters`
            : /[\u0000-\u001f\u007f-\u009f]/.test(text)
              ? 'it holds a control character'
              : null;
      if (why === null) return text;
      throw new GuardError(
        'bad_option',
        `${source} expects a name of 1 to ${max} printable characters, got ${typeof raw === 'string' ? JSON.stringify(raw) : shown} (${why})`,
      );
    }
    case 'retain': {
      const why = typeof raw === 'string' ? (spec.check?.(raw) ?? null) : 'expects a string such as "30d,1G"';
      if (why !== null) throw new GuardError('bad_option', `${source} ${why}, got ${shown}`);
      return raw as string;
    }
    case 'ms': {
      const ms = typeof raw === 'number' ? raw : typeof raw === 'string' ? parseDuration(raw) : NaN;
      if (raw === 'off' && spec.default === null) return null;
      if (!Number.isSafeInteger(ms) || ms < (spec.min ?? 0))
        throw new GuardError('bad_option', `${source} expects milliseconds (e.g. 5000, 250ms, 5s)${spec.min ? ` of at least ${spec.min}` : ''}, got ${shown}`);
      const max = Math.min(spec.max ?? MAX_TIMER_MS, MAX_TIMER_MS);
      if (ms > max) throw new GuardError('bad_option', `${source} expects at most ${max} ms (${spec.maxWhy ?? TIMER_WHY}), got ${shown}`);
      return ms;
    }
    case 'count': {
      const count = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
      const min = spec.min ?? 0;
      const max = spec.max ?? Number.MAX_SAFE_INTEGER;
      if (!Number.isSafeInteger(count) || count < min || count > max)
        throw new GuardError('bad_option', `${source} expects a whole number from ${min} to ${max}, got ${shown}`);
      return count;
    }
    case 'bytes': {
      const bytes = typeof raw === 'number' ? raw : typeof raw === 'string' ? parseBytes(raw) : NaN;
      if (!Number.isSafeInteger(bytes) || bytes < (spec.min ?? 0))
        throw new GuardError(
          'bad_option',
          `${source} expects a byte count (e.g. 16384, 64KiB, 16MiB)${spec.min ? ` of at least ${spec.min}` : ''}, got ${shown}`,
        );
      if (spec.max !== undefined && bytes > spec.max)
        throw new GuardError('bad_option', `${source} expects at most ${spec.max} bytes${spec.maxWhy ? ` (${spec.maxWhy})` : ''}, got ${shown}`);
      return bytes;
    }
  }
}

function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s)?$/.exec(text);
  if (match === null) return NaN;
  return Number(match[1]) * (match[2] === 's' ? 1000 : 1);
}

function parseBytes(text: string): number {
  const match = /^(\d+)([a-zA-Z]*)$/.exec(text);
  const multiplier = match === null ? undefined : MULTIPLIERS.get(match[2]!.toLowerCase());
  return multiplier === undefined ? NaN : Number(match![1]) * multiplier;
}

/** The spec of option `name`: own entries only, so `toString` or `__proto__` is no option. */
export function lookup(table: Record<string, OptionSpec>, name: string): OptionSpec | undefined {
  return Object.hasOwn(table, name) ? table[name] : undefined;
}

export interface ParsedArgs<V = OptionValues> {
  values: V;
  /** Names set on the command line (they override a config file). */
  given: Set<string>;
  command: string[];
}

/**
 * Parse `[options] [--] command [args...]`. Options end at `--` or at the
 * first word that is not an option; everything after belongs to the child,
 * untouched (no number coercion, no flag parsing).
 */
export function parseArgv<T extends Record<string, OptionSpec>>(argv: readonly string[], table: T, help = 'mcpguard --help'): ParsedArgs<ValuesOf<T>> {
  const values = defaultsOf(table);
  const given = new Set<string>();
  let i = 0;
  for (; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      i++;
      break;
    }
    if (!arg.startsWith('--')) break;
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq === -1 ? undefined : eq);
    const spec = lookup(table, name);
    if (spec === undefined) throw new GuardError('unknown_option', `unknown option --${name} (see ${help})`);
    let raw: string;
    if (eq !== -1) raw = arg.slice(eq + 1);
    else if (spec.kind === 'flag') raw = 'true';
    else {
      if (i + 1 >= argv.length) throw new GuardError('bad_option', `--${name} expects a value`);
      raw = argv[++i]!;
    }
    const value = parseOptionValue(name, spec, raw);
    values[name] = spec.repeatable ? [...(values[name] as string[]), String(value)] : value;
    given.add(name);
  }
  // The one place values become typed: each was parsed by its own entry's kind.
  return { values: values as ValuesOf<T>, given, command: argv.slice(i) };
}
