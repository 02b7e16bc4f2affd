/**
 * Streaming secret masking for the child's stderr, applied before anything is
 * retained or mirrored. Works on bytes: env values are matched as their UTF-8
 * bytes, and nothing is decoded.
 *
 * `push` passes through every byte it has decided about and holds back the
 * rest: the bytes from the first position where a secret may be starting but
 * the read ended too early to tell. That tail is at most MAX_HOLD_BYTES, so a
 * secret split across reads (even byte by byte) is masked, and output is the
 * same however the input was split. Once a secret is confirmed, its remainder
 * is dropped as it arrives (a token's characters, a header's line, a PEM body
 * up to its END line, an env value's further bytes), without holding anything.
 *
 * A PEM private-key block that never ends masks everything after its BEGIN
 * line: showing key material is worse than losing diagnostics.
 */
import { findPemEnd, matchPemBegin, matchWordStart, ALNUM, MAX_WINDOW, NEED, NO, PEM_FIRST, STATIC_FLAGS, WORD_START_FLAG, type Match, type MatchResult } from './secret-shapes.js';

/** Env values shorter than this are not masked: they would mask every `1` or `true`. */
export const MIN_ENV_SECRET_BYTES = 6;
/**
 * Bytes of an env value that must match before it is masked. Longer values are
 * confirmed by this prefix and their remainder is dropped byte by byte, so the
 * hold-back does not grow with the longest value.
 */
export const ENV_COMMIT_BYTES = 64;
/** Most bytes `push` ever holds back. */
export const MAX_HOLD_BYTES = Math.max(MAX_WINDOW, ENV_COMMIT_BYTES);

const SECRET_NAME = /TOKEN|SECRET|KEY|PASSWORD|PASSWD|PASSPHRASE|PASS$|AUTH|CREDENTIAL|COOKIE|SESSION|PRIVATE|SIGNATURE|DSN/i;
// Desktop and agent plumbing whose names match the words above but whose values
// are sockets, paths and common words ("ubuntu", "wayland").
const NOT_SECRET_NAME = /^(XDG_|DBUS_)|^(DESKTOP_SESSION|SESSION_MANAGER|SSH_AUTH_SOCK|GPG_AGENT_INFO|KEYMAP|KEYBOARD\w*)$|AUTHOR/i;

/** True if an environment variable with this name should have its value masked. */
export function isSecretEnvName(name: string): boolean {
  return SECRET_NAME.test(name) && !NOT_SECRET_NAME.test(name);
}

export interface RedactorOptions {
  /** The child's environment; values of secret-looking names are masked. */
  env?: Record<string, string | undefined>;
}

interface EnvSecret {
  value: Buffer;
  commit: number;
  replacement: Buffer;
}

const EMPTY = Buffer.alloc(0);
const ENV_FLAG = 1;
const SCAN = 0;
const CLASS = 1;
const LINE = 2;
const PEM = 3;
const ENV = 4;

export class Redactor {
  /** Secrets masked so far (a token, a header value, a PEM block, an env value each count once). */
  count = 0;
  /** Bytes received by `push`. */
  bytesIn = 0;
  /** Bytes returned by `push` and `flush`. */
  bytesOut = 0;
  readonly #flags: Uint8Array;
  readonly #envByFirst: (EnvSecret[] | undefined)[] = new Array(256);
  #held: Buffer = EMPTY;
  /** The stream byte just before the first byte of the next work buffer. */
  #prev = 0x0a;
  #state = SCAN;
  #cls: Uint8Array = ALNUM;
  #envValue: Buffer = EMPTY;
  #envAt = 0;

  constructor(options: RedactorOptions = {}) {
    this.#flags = Uint8Array.from(STATIC_FLAGS);
    this.#flags[PEM_FIRST] = this.#flags[PEM_FIRST]! | ENV_FLAG;
    const seen = new Set<string>();
    for (const [name, value] of Object.entries(options.env ?? {})) {
      if (value === undefined || !isSecretEnvName(name)) continue;
      const bytes = Buffer.from(value, 'utf8');
      if (bytes.length < MIN_ENV_SECRET_BYTES || seen.has(value)) continue;
      seen.add(value);
      const first = bytes[0]!;
      (this.#envByFirst[first] ??= []).push({ value: bytes, commit: Math.min(bytes.length, ENV_COMMIT_BYTES), replacement: Buffer.from(`[REDACTED:${name}]`) });
      this.#flags[first] = this.#flags[first]! | ENV_FLAG;
    }
    // Longest first: when one value is a prefix of another, the longer one wins.
    for (const list of this.#envByFirst) list?.sort((a, b) => b.value.length - a.value.length);
  }

  /** Bytes currently held back (never more than MAX_HOLD_BYTES). */
  get pending(): number {
    return this.#held.length;
  }

  /** Mask what can be decided; the returned bytes are safe to keep or show. */
  push(chunk: Buffer): Buffer {
    this.bytesIn += chunk.length;
    return this.#run(chunk, false);
  }

  /** End of stream: decide the held-back bytes. A PEM block still open stays masked. */
  flush(): Buffer {
    return this.#run(EMPTY, true);
  }

  #run(chunk: Buffer, eof: boolean): Buffer {
    const held = this.#held;
    const buf = held.length === 0 ? chunk : chunk.length === 0 ? held : Buffer.concat([held, chunk]);
    this.#held = EMPTY;
    const end = buf.length;
    if (end === 0) return EMPTY;
    const out: Buffer[] = [];
    let pos = 0;
    let emitFrom = 0;
    let holdFrom = end;
    const flags = this.#flags;
    while (pos < end) {
      if (this.#state === SCAN) {
        let i = pos;
        let r: MatchResult = NO;
        for (; i < end; i++) {
          const f = flags[buf[i]!]!;
          if (f === 0) continue;
          if (f === WORD_START_FLAG && ALNUM[i > 0 ? buf[i - 1]! : this.#prev] === 1) continue;
          r = this.#matchAt(buf, i, end, eof, f);
          if (r !== NO) break;
        }
        if (i === end) break;
        if (r === NEED) {
          holdFrom = i;
          break;
        }
        const m = r as Match;
        if (m.keep > emitFrom) out.push(buf.subarray(emitFrom, m.keep));
        out.push(m.replacement);
        this.count++;
        pos = emitFrom = m.end;
        continue;
      }
      // Swallowing the rest of a confirmed secret: dropped bytes move emitFrom.
      if (this.#state === CLASS) {
        const cls = this.#cls;
        while (pos < end && cls[buf[pos]!] === 1) pos++;
        if (pos < end) this.#state = SCAN;
      } else if (this.#state === LINE) {
        const lf = buf.indexOf(0x0a, pos);
        const cr = buf.indexOf(0x0d, pos);
        const stop = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
        pos = stop === -1 ? end : stop;
        if (stop !== -1) this.#state = SCAN;
      } else if (this.#state === ENV) {
        const v = this.#envValue;
        while (pos < end && this.#envAt < v.length && buf[pos] === v[this.#envAt]) {
          pos++;
          this.#envAt++;
        }
        if (pos < end || this.#envAt === v.length) this.#state = SCAN;
      } else {
        const r = findPemEnd(buf, pos, end, eof);
        if (r >= 0) {
          pos = r;
          this.#state = SCAN;
        } else {
          if (r !== NO) holdFrom = -r - 2;
          pos = end;
        }
      }
      emitFrom = pos;
    }
    if (holdFrom < end) {
      // A copy: `buf` may be the caller's chunk.
      this.#held = Buffer.from(buf.subarray(holdFrom));
      if (holdFrom > 0) this.#prev = buf[holdFrom - 1]!;
    } else {
      this.#prev = buf[end - 1]!;
    }
    const emitEnd = Math.min(holdFrom, end);
    if (emitEnd > emitFrom) out.push(emitFrom === 0 && emitEnd === end ? buf : buf.subarray(emitFrom, emitEnd));
    const result = out.length === 0 ? EMPTY : out.length === 1 ? out[0]! : Buffer.concat(out);
    this.bytesOut += result.length;
    return result;
  }

  /** The first decisive answer at `i`, in a fixed order: env values, PEM, then word-start shapes. */
  #matchAt(buf: Buffer, i: number, end: number, eof: boolean, f: number): MatchResult {
    if (f & ENV_FLAG) {
      const b = buf[i]!;
      for (const secret of this.#envByFirst[b] ?? []) {
        const r = this.#matchEnv(secret, buf, i, end, eof);
        if (r !== NO) return r;
      }
      if (b === PEM_FIRST) {
        const r = matchPemBegin(buf, i, end, eof);
        if (r !== NO) return this.#enter(r);
      }
    }
    if (f & WORD_START_FLAG && ALNUM[i > 0 ? buf[i - 1]! : this.#prev] !== 1) {
      return this.#enter(matchWordStart(buf, i, end, eof));
    }
    return NO;
  }

  #matchEnv(secret: EnvSecret, buf: Buffer, i: number, end: number, eof: boolean): MatchResult {
    const v = secret.value;
    const stop = Math.min(secret.commit, end - i);
    for (let k = 0; k < stop; k++) if (buf[i + k] !== v[k]) return NO;
    if (stop < secret.commit) return eof ? NO : NEED;
    if (v.length > secret.commit) {
      this.#state = ENV;
      this.#envValue = v;
      this.#envAt = secret.commit;
    }
    return { keep: i, replacement: secret.replacement, end: i + secret.commit, then: 'none', cls: null };
  }

  /** Switch to the swallowing state a shape match asks for. */
  #enter(r: MatchResult): MatchResult {
    if (typeof r === 'number') return r;
    if (r.then === 'class') {
      this.#state = CLASS;
      this.#cls = r.cls!;
    } else if (r.then === 'line') {
      this.#state = LINE;
    } else if (r.then === 'pem') {
      this.#state = PEM;
    }
    return r;
  }
}
