/**
 * Secrets in a call's arguments: the value of one of mcpguard's environment
 * variables that the masker treats as secret (mask/env-secrets.ts; the
 * server inherits them, and a prompt-injected model that read one can send
 * it anywhere a tool reaches), or a known credential shape
 * (mask/secret-shapes.ts). Judged by the very masker that masks the card and
 * the records, over every string (member names included) of the parsed
 * arguments, so escapes in the frame (`\u0041`) are already undone; the
 * masker undoes one level more (JSON inside a string). Deeper forms are
 * opened here: a string that is itself JSON is parsed, and a percent-encoded
 * one decoded. A secret found only there lies beyond what the card can mask,
 * so such a call is never shown to a person: `ask` is taken as `deny`.
 *
 * The secret itself is never kept: only what it was, in the masker's words
 * ("the value of $API_TOKEN", "a token (sk-…)"), and where (a JSON Pointer,
 * masked).
 */
import { envSecrets } from '../mask/env-secrets.js';
import { processMasker } from '../mask/mask.js';
import { isObject } from '../base/values.js';

/** What --secrets-in-args does where no policy rule names `secrets`. */
export type SecretsMode = 'deny-env' | 'deny' | 'ask' | 'off';

/** A secret found in the arguments: what it was and where, never its value. */
export interface SecretFound {
  /** The value of one of mcpguard's secret environment variables (else a credential shape). */
  env: boolean;
  /** In the masker's words: `the value of $NAME`, `a token (sk-…)`. */
  kind: string;
  /** A JSON Pointer to the string (`""`: the arguments themselves), secrets in it masked. */
  at: string;
  /** Found only inside a string's own JSON or percent-encoding: the card could not mask it. */
  deep: boolean;
}

/** Levels of JSON-in-a-string opened, and the longest string parsed as JSON. */
const MAX_DEPTH = 4;
const MAX_PARSE_CHARS = 64 * 1024;
/** Arrays and objects inside each other, opened strings included: past this the walk stops, and the call is refused (not judged). */
const MAX_NESTING = 1024;

let envKinds: Set<string> | null = null;

/** A walk over one call's arguments: where it is, and the first shape met (an env value ends the walk). */
interface Walk {
  path: string[];
  shape: SecretFound | null;
  /** Arrays and objects entered and not yet left. */
  level: number;
}

/**
 * The first secret in `value` (the parsed arguments), an env value before a
 * shape wherever it lies; null when there is none. Runs for every call the
 * gate decides by default: no closure or copy per value, and a string with
 * no byte where a secret could start costs the masker's per-byte test only.
 */
export function findSecret(value: unknown): SecretFound | null {
  envKinds ??= new Set(envSecrets(process.env).map((s) => s.kind));
  const walk: Walk = { path: [], shape: null, level: 0 };
  return visit(value, walk, 0, false) ?? walk.shape;
}

function visit(v: unknown, walk: Walk, depth: number, deep: boolean): SecretFound | null {
  if (typeof v === 'string') return inString(v, walk, depth, deep);
  if (typeof v === 'number') return look(String(v), walk, deep);
  if (typeof v !== 'object' || v === null) return null;
  // JSON inside a string is not bounded by the frame's nesting limit: a bound of its own, failing closed (decide() throws, the gate refuses).
  if (++walk.level > MAX_NESTING) throw new Error(`the arguments nest more than ${MAX_NESTING} levels (JSON inside strings included) to look for secrets in`);
  const hit = inside(v, walk, depth, deep);
  walk.level--;
  return hit;
}

function inside(v: object, walk: Walk, depth: number, deep: boolean): SecretFound | null {
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      walk.path.push(String(i));
      const hit = visit(v[i], walk, depth, deep);
      walk.path.pop();
      if (hit !== null) return hit;
    }
  } else if (isObject(v)) {
    for (const key in v) {
      if (!Object.hasOwn(v, key)) continue;
      walk.path.push(key);
      const hit = look(key, walk, deep) ?? visit(v[key], walk, depth, deep);
      walk.path.pop();
      if (hit !== null) return hit;
    }
  }
  return null;
}

/** A string, then what it holds: its own JSON, its percent-decoding. */
function inString(s: string, walk: Walk, depth: number, deep: boolean): SecretFound | null {
  const hit = look(s, walk, deep);
  if (hit !== null || depth >= MAX_DEPTH) return hit;
  const inner = openJson(s);
  if (inner !== undefined) {
    const found = visit(inner, walk, depth + 1, true);
    if (found !== null) return found;
  }
  if (s.includes('%')) {
    let decoded: string | null = null;
    try {
      decoded = decodeURIComponent(s);
    } catch {
      // Not valid percent-encoding: nothing a server would decode either.
    }
    if (decoded !== null && decoded !== s) return inString(decoded, walk, depth + 1, true);
  }
  return null;
}

/** What the masker finds in one string: an env value (returned), or a shape (kept as the walk's first). */
function look(text: string, walk: Walk, deep: boolean): SecretFound | null {
  const masked = processMasker().oneLine(text).masked;
  if (masked.length === 0) return null;
  const env = masked.find((kind) => envKinds!.has(kind));
  if (env !== undefined) return { env: true, kind: env, at: pointer(walk.path), deep };
  walk.shape ??= { env: false, kind: masked[0]!, at: pointer(walk.path), deep };
  return null;
}

/** A string that is a JSON object, array or string, parsed; undefined otherwise. */
function openJson(s: string): unknown {
  let i = 0;
  while (i < s.length && (s[i] === ' ' || s[i] === '\n' || s[i] === '\t' || s[i] === '\r')) i++;
  const first = s[i];
  if ((first !== '{' && first !== '[' && first !== '"') || s.length > MAX_PARSE_CHARS) return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return undefined;
  }
}

/** How a found secret is said in a reason (masked: a member name may be a secret too). */
export function secretText(found: SecretFound): string {
  return `the arguments carry ${found.kind} (at ${found.at === '' ? 'the top' : processMasker().text(JSON.stringify(found.at))}${found.deep ? ', encoded inside the string' : ''})`;
}

function pointer(path: string[]): string {
  return path.map((p) => `/${p.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}
