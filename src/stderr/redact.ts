/**
 * Streaming secret masking for the child's stderr, applied before anything is
 * retained or mirrored. Works on bytes: env values are matched as their UTF-8
 * bytes, and nothing is decoded.
 *
 * `push`/`feed` pass through every byte they have decided about and hold back the
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
import { ENV_COMMIT_BYTES, envSecrets, type EnvSecret } from './env-secrets.js';
import { findPemEnd, matchPemBegin, matchWordStart, ALNUM, MAX_WINDOW, NEED, NO, PEM_FIRST, STATIC_FLAGS, STATIC_PAIRS, WORD_START_FLAG, type Match, type MatchResult } from './secret-shapes.js';

/** Most bytes `push` ever holds back. */
export const MAX_HOLD_BYTES = Math.max(MAX_WINDOW, ENV_COMMIT_BYTES);
/** Chunk bytes copied next to held-back bytes to decide them: more than any window. */
const JUNCTION_BYTES = 2 * MAX_HOLD_BYTES;

export interface RedactorOptions {
  /** The child's environment; values of secret-looking names are masked. */
  env?: Record<string, string | undefined>;
}

const EMPTY = Buffer.alloc(0);
const NO_SECRETS: readonly EnvSecret[] = [];
/** Flag for bytes that start a secret even inside a word (env values, PEM dashes). */
const ANYWHERE_FLAG = 1;
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
  /** Indexed by (previous byte << 8 | byte): 1 where a secret may start. */
  readonly #starts = new Uint8Array(65536);
  /** Indexed by (byte << 8 | next byte): 1 if a secret may start with these two bytes. */
  readonly #pairs = Uint8Array.from(STATIC_PAIRS);
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
    this.#flags[PEM_FIRST] = this.#flags[PEM_FIRST]! | ANYWHERE_FLAG;
    for (const secret of envSecrets(options.env ?? {})) {
      const first = secret.value[0]!;
      (this.#envByFirst[first] ??= []).push(secret);
      this.#flags[first] = this.#flags[first]! | ANYWHERE_FLAG;
      this.#pairs[(first << 8) | secret.value[1]!] = 1;
    }
    // One lookup per byte decides "maybe a secret starts here", word start included.
    for (let prev = 0; prev < 256; prev++) {
      for (let b = 0; b < 256; b++) {
        const f = this.#flags[b]!;
        if (f & ANYWHERE_FLAG || (f & WORD_START_FLAG && ALNUM[prev] !== 1)) this.#starts[(prev << 8) | b] = 1;
      }
    }
  }

  /** Bytes currently held back (never more than MAX_HOLD_BYTES). */
  get pending(): number {
    return this.#held.length;
  }

  /**
   * Mask what can be decided; the returned bytes are safe to keep or show.
   * Copies the chunk when the previous read ended on a possible secret start;
   * `feed` never does.
   */
  push(chunk: Buffer): Buffer {
    const parts: Buffer[] = [];
    this.feed(chunk, (safe) => parts.push(safe));
    return parts.length === 0 ? EMPTY : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  }

  /**
   * Like `push`, for the hot path: the safe bytes go to `emit` in up to two
   * pieces, in order, and the chunk is not copied (pieces are views of it)
   * unless a secret in it was masked. Only a junction of at most
   * MAX_HOLD_BYTES + 2 * MAX_HOLD_BYTES bytes is copied after a held tail.
   */
  feed(chunk: Buffer, emit: (safe: Buffer) => void): void {
    this.bytesIn += chunk.length;
    const held = this.#held.length;
    if (held === 0 || chunk.length <= JUNCTION_BYTES) {
      emitIf(emit, this.#run(chunk, false));
      return;
    }
    // Decide the held bytes on a small copy: held ++ the chunk's first bytes.
    // Its windows are shorter than JUNCTION_BYTES, so anything it holds again
    // lies inside the chunk and is scanned there instead, in the same state.
    const junction = Buffer.concat([this.#held, chunk.subarray(0, JUNCTION_BYTES)]);
    this.#held = EMPTY;
    emitIf(emit, this.#run(junction, false));
    const back = this.#held.length;
    this.#held = EMPTY;
    emitIf(emit, this.#run(chunk.subarray(JUNCTION_BYTES - back), false));
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
    const starts = this.#starts;
    const pairs = this.#pairs;
    while (pos < end) {
      if (this.#state === SCAN) {
        let i = pos;
        let r: MatchResult = NO;
        for (;;) {
          i = nextStart(buf, i, end, i > 0 ? buf[i - 1]! : this.#prev, starts, pairs);
          if (i === end) break;
          r = this.#matchAt(buf, i, end, eof, flags[buf[i]!]!);
          if (r !== NO) break;
          i++;
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
        // Look for `\r` only before the next `\n`: a chunk of many header lines stays linear.
        const lf = buf.indexOf(0x0a, pos);
        const lineEnd = lf === -1 ? end : lf;
        const cr = buf.subarray(pos, lineEnd).indexOf(0x0d);
        pos = cr === -1 ? lineEnd : pos + cr;
        if (pos < end) this.#state = SCAN;
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
    if (f & ANYWHERE_FLAG) {
      const b = buf[i]!;
      for (const secret of this.#envByFirst[b] ?? NO_SECRETS) {
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

/**
 * The first index from `from` where a secret may start (judged by the byte
 * before, the byte, and the byte after), or `end`. This is the loop every byte
 * of a flood goes through: keep it tiny.
 */
function nextStart(buf: Buffer, from: number, end: number, prev: number, starts: Uint8Array, pairs: Uint8Array): number {
  let p = prev;
  const last = end - 1;
  for (let i = from; i < end; i++) {
    const b = buf[i]!;
    if (starts[(p << 8) | b] === 1 && (i === last || pairs[(b << 8) | buf[i + 1]!] === 1)) return i;
    p = b;
  }
  return end;
}

function emitIf(emit: (safe: Buffer) => void, bytes: Buffer): void {
  if (bytes.length > 0) emit(bytes);
}
