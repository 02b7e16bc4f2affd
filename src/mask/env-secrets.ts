/**
 * Which values of the child's environment are secrets to mask in its stderr:
 * those of variables whose names look secret. Matching is on the UTF-8 bytes
 * of the value, wherever it appears (no word boundary: `https://u:<pw>@host`).
 */
import { undoFor, unescapeJson } from './json-escapes.js';

/** Values shorter than this are not masked: they would mask every `1` or `true`. */
export const MIN_ENV_SECRET_BYTES = 6;
/**
 * Bytes of a value that must match before it is masked. Longer values are
 * confirmed by this prefix and their remainder is dropped byte by byte, so the
 * redactor's hold-back does not grow with the longest value.
 */
export const ENV_COMMIT_BYTES = 64;

const SECRET_NAME = /TOKEN|SECRET|KEY|PASSWORD|PASSWD|PASSPHRASE|PASS$|AUTH|CREDENTIAL|COOKIE|SESSION|PRIVATE|SIGNATURE|DSN/i;
// Desktop and agent plumbing whose names match the words above but whose values
// are sockets, paths and common words ("ubuntu", "wayland"), git authors, and
// mcpguard's own session marker (an id the server may log; masking it would
// hide it from the logs it is meant to tie together).
const NOT_SECRET_NAME = /^(XDG_|DBUS_)|^(DESKTOP_SESSION|SESSION_MANAGER|SSH_AUTH_SOCK|GPG_AGENT_INFO|KEYMAP|KEYBOARD\w*|MCPGUARD_SESSION_ID)$|AUTHOR/i;

/** True if an environment variable with this name should have its value masked. */
export function isSecretEnvName(name: string): boolean {
  return SECRET_NAME.test(name) && !NOT_SECRET_NAME.test(name);
}

export interface EnvSecret {
  value: Buffer;
  /** Leading bytes that confirm a match: min(value length, ENV_COMMIT_BYTES). */
  commit: number;
  /** `[REDACTED:NAME]`: the name is not secret and tells a reader what was there. */
  replacement: Buffer;
  /** What was masked, in words: `the value of $NAME`. */
  kind: string;
}

/**
 * The secrets of an environment, one per distinct value, longest first (a
 * value that is a prefix of another loses). The redactor matches unescaped
 * bytes (json-escapes.ts), where a value written with its own `\\` or `\/`
 * reads unescaped too: such a value is also listed in that form.
 */
export function envSecrets(env: Record<string, string | undefined>): EnvSecret[] {
  const byValue = new Map<string, EnvSecret>();
  const add = (bytes: Buffer, name: string): void => {
    const key = bytes.toString('latin1');
    if (bytes.length < MIN_ENV_SECRET_BYTES || byValue.has(key)) return;
    byValue.set(key, {
      value: bytes,
      commit: Math.min(bytes.length, ENV_COMMIT_BYTES),
      replacement: Buffer.from(`[REDACTED:${name}]`),
      kind: `the value of $${name}`,
    });
  };
  const named: Array<[string, Buffer]> = [];
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && isSecretEnvName(name)) named.push([name, Buffer.from(value, 'utf8')]);
  }
  const undo = undoFor(named.map(([, bytes]) => bytes));
  for (const [name, bytes] of named) {
    add(bytes, name);
    const unescaped = unescapeJson(bytes, true, undo);
    if (unescaped !== null) add(Buffer.from(unescaped.bytes), name);
  }
  return [...byValue.values()].sort((a, b) => b.value.length - a.value.length);
}
