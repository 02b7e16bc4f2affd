/**
 * Streaming secret masking for the child's stderr, applied before anything is
 * retained or mirrored. Works on bytes: env values are matched as their UTF-8
 * bytes, and nothing is decoded as text.
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
 *
 * Matching runs on the bytes with one level of JSON string escapes undone
 * (json-escapes.ts), so `\u0073k-…` or `abc\/def` is masked like `sk-…` or
 * `abc/def`; what comes out is always the input's own bytes, with each masked
 * stretch (whole escapes included) replaced. Bytes right after a masked
 * stretch count as the start of a word, so a token glued to a masked value is
 * masked too, and masking masked text changes nothing.
 *
 * The same class masks mcpguard's own diagnostics and records one string at a
 * time (mask.ts): `reset`, `push`, `flush`; and one whole one-line text (an
 * approval card's arguments) with `oneLine`, where nothing runs to the end of
 * the line.
 */
import { EnvAutomaton, type EnvNode } from './env-automaton.js';
import { ENV_COMMIT_BYTES, envSecrets, type EnvSecret } from './env-secrets.js';
import { MAX_ESCAPE_BYTES, MAX_RAW_PER_BYTE, UNDO_BACKSLASH, UNDO_QUOTE, rawIndex, undoFor, unescapeJson, type Unescaped } from './json-escapes.js';
import {
  findPemEnd,
  matchPemBegin,
  matchWordStart,
  pemBodyEnd,
  ALNUM,
  MAX_WINDOW,
  NEED,
  NO,
  PEM_FIRST,
  STATIC_FLAGS,
  STATIC_PAIRS,
  WORD_START_FLAG,
  type Match,
  type MatchResult,
} from './secret-shapes.js';

/** Most (unescaped) bytes any match needs to see before it decides. */
const MAX_DECIDE_BYTES = Math.max(MAX_WINDOW, ENV_COMMIT_BYTES);
/** Most bytes `push` ever holds back: a window written entirely as `\uXXXX`, and an escape cut in half. */
export const MAX_HOLD_BYTES = MAX_RAW_PER_BYTE * MAX_DECIDE_BYTES + MAX_ESCAPE_BYTES;
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
/** What the byte before a masked stretch's end counts as: not part of a word. */
const SPACE = 0x20;
const BACKSLASH = 0x5c;
/** In `starts`: the byte after a backslash that begins an escape that may matter. */
const ESCAPE = 2;
const SCAN = 0;
const CLASS = 1;
const LINE = 2;
const PEM = 3;
const ENV = 4;

/**
 * What to look for in one environment: the tables the scan reads and the env
 * values. Built once per environment object and shared by every redactor made
 * from it (the stderr tap and mcpguard's own masker read the same one).
 */
class Rules {
  readonly flags = Uint8Array.from(STATIC_FLAGS);
  /** Indexed by (previous byte << 8 | byte): 1 where a secret may start. */
  readonly starts = new Uint8Array(65536);
  /** Indexed by (byte << 8 | next byte): 1 if a secret may start with these two bytes. */
  readonly pairs = Uint8Array.from(STATIC_PAIRS);
  readonly envByFirst: (EnvSecret[] | undefined)[] = new Array(256);
  readonly envValues: Buffer[] = [];
  /** Which optional escapes to undo (json-escapes.ts), from the env values. */
  readonly undo: number;
  #automaton: EnvAutomaton | null = null;

  constructor(env: Record<string, string | undefined>) {
    const flags = this.flags;
    flags[PEM_FIRST] = flags[PEM_FIRST]! | ANYWHERE_FLAG;
    for (const secret of envSecrets(env)) {
      const first = secret.value[0]!;
      (this.envByFirst[first] ??= []).push(secret);
      this.envValues.push(secret.value);
      flags[first] = flags[first]! | ANYWHERE_FLAG;
      this.pairs[(first << 8) | secret.value[1]!] = 1;
    }
    this.undo = undoFor(this.envValues);
    // One lookup per byte decides "maybe a secret starts here", word start included.
    for (let b = 0; b < 256; b++) {
      const f = flags[b]!;
      if (f === 0) continue;
      for (let prev = 0; prev < 256; prev++) {
        if (f & ANYWHERE_FLAG || (f & WORD_START_FLAG && ALNUM[prev] !== 1)) this.starts[(prev << 8) | b] = 1;
      }
    }
    // The byte after a backslash, for an escape that may matter: the scan stops
    // there (ESCAPE: with no pair to check) and the read is unescaped first.
    // Marking the backslash itself would stop the scan at every `\"` of a JSON log.
    for (const next of [0x75, 0x2f, ...(this.undo & UNDO_QUOTE ? [0x22] : []), ...(this.undo & UNDO_BACKSLASH ? [BACKSLASH] : [])]) {
      this.starts[(BACKSLASH << 8) | next] = ESCAPE;
    }
  }

  /** The automaton over the env values, built the first time a stretch is masked. */
  get automaton(): EnvAutomaton {
    return (this.#automaton ??= new EnvAutomaton(this.envValues));
  }
}

const rulesByEnv = new WeakMap<object, Rules>();
const NO_ENV = {};

function rulesFor(env: Record<string, string | undefined>): Rules {
  let rules = rulesByEnv.get(env);
  if (rules === undefined) rulesByEnv.set(env, (rules = new Rules(env)));
  return rules;
}

export class Redactor {
  /** Secrets masked so far (a token, a header value, a PEM block, an env value each count once). */
  count = 0;
  /** Bytes received by `push`. */
  bytesIn = 0;
  /** Bytes returned by `push` and `flush`. */
  bytesOut = 0;
  readonly #rules: Rules;
  /** Automaton state over the bytes of the current masked stretch. */
  #envNode: EnvNode | null = null;
  #held: Buffer = EMPTY;
  /** The stream byte just before the first byte of the next work buffer (unescaped). */
  #prev = 0x0a;
  #state = SCAN;
  #cls: Uint8Array = ALNUM;
  /** Inside `oneLine`: what each masked stretch was, in order; null otherwise. */
  #kinds: string[] | null = null;

  /** The environment is read once per environment object; later changes to it are not seen. */
  constructor(options: RedactorOptions = {}) {
    this.#rules = rulesFor(options.env ?? NO_ENV);
  }

  /** Bytes currently held back (never more than MAX_HOLD_BYTES). */
  get pending(): number {
    return this.#held.length;
  }

  /** Forget the stream so far (held bytes included), to mask a new, unrelated one; counts are kept. */
  reset(): void {
    this.#held = EMPTY;
    this.#prev = 0x0a;
    this.#state = SCAN;
    this.#envNode = null;
  }

  /**
   * False when `text` certainly holds nothing to mask: the same test the scan
   * makes per byte, on a string's characters, without encoding it. Any
   * non-ASCII character answers true.
   */
  mayMatch(text: string): boolean {
    const { starts, pairs } = this.#rules;
    let prev = 0x0a;
    const last = text.length - 1;
    for (let i = 0; i <= last; i++) {
      const c = text.charCodeAt(i);
      if (c >= 0x80) return true;
      const start = starts[(prev << 8) | c]!;
      if (start !== 0 && (start === ESCAPE || i === last || pairs[(c << 8) | (text.charCodeAt(i + 1) & 0xff)] === 1)) return true;
      prev = c;
    }
    return false;
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

  /**
   * Mask one whole text that is a single line (the JSON text of a tool
   * call's arguments): a header's value is one credential and a PEM block is
   * its base64 body, so what follows a secret is never masked with it (the
   * streaming rules run to the end of the line: here, the end of the text).
   * Returns the bytes (`input` itself when nothing was masked) and, in
   * order, what each masked stretch was. Forgets any stream in progress.
   */
  oneLine(input: Buffer): { bytes: Buffer; kinds: string[] } {
    this.reset();
    const kinds: string[] = [];
    this.#kinds = kinds;
    try {
      return { bytes: this.#run(input, true), kinds };
    } finally {
      this.#kinds = null;
      this.reset();
    }
  }

  #run(chunk: Buffer, eof: boolean): Buffer {
    const held = this.#held;
    const raw = held.length === 0 ? chunk : chunk.length === 0 ? held : Buffer.concat([held, chunk]);
    this.#held = EMPTY;
    if (raw.length === 0) return EMPTY;
    // Scan the raw bytes; only if that meets an escape that may matter, scan
    // again, from the same state, with the escapes undone. JSON logs full of
    // `\"` never take the second path.
    const state = this.#state;
    const cls = this.#cls;
    const envNode = this.#envNode;
    const count = this.count;
    const kinds = this.#kinds?.length ?? 0;
    let result = this.#scan(raw, null, eof, true);
    if (result === null) {
      this.#state = state;
      this.#cls = cls;
      this.#envNode = envNode;
      this.count = count;
      if (this.#kinds !== null) this.#kinds.length = kinds;
      result = this.#scan(raw, unescapeJson(raw, eof, this.#rules.undo), eof, false);
    }
    this.bytesOut += result!.length;
    return result!;
  }

  /**
   * One pass over `raw` (held bytes included), matching on `unescaped` if
   * given. With `bail` it gives up (null, having changed nothing `#run` does
   * not restore) at the first escape that may matter.
   */
  #scan(raw: Buffer, unescaped: Unescaped | null, eof: boolean, bail: boolean): Buffer | null {
    const buf = unescaped === null ? raw : unescaped.bytes;
    const spans = unescaped === null || unescaped.spans.length === 0 ? null : unescaped.spans;
    const rawEnd = unescaped === null ? raw.length : unescaped.rawEnd;
    const end = buf.length;
    const out: Buffer[] = [];
    let pos = 0;
    let emitFrom = 0;
    let holdFrom = end;
    // Where the last masked stretch ended: the byte there starts a word.
    let afterDrop = -1;
    const { flags, starts, pairs } = this.#rules;
    const hasEnv = this.#rules.envValues.length > 0;
    while (pos < end) {
      if (this.#state === SCAN) {
        let i = pos;
        let r: MatchResult = NO;
        for (;;) {
          i = nextStart(buf, i, end, i === afterDrop ? SPACE : i > 0 ? buf[i - 1]! : this.#prev, starts, pairs);
          if (i === end) break;
          const prev = i === afterDrop ? SPACE : i > 0 ? buf[i - 1]! : this.#prev;
          if (bail && starts[(prev << 8) | buf[i]!] === ESCAPE) return null;
          r = this.#matchAt(buf, i, end, eof, flags[buf[i]!]!, prev);
          if (r !== NO) break;
          i++;
        }
        if (i === end) break;
        if (r === NEED) {
          holdFrom = i;
          break;
        }
        const m = r as Match;
        if (m.keep > emitFrom) pushSlice(out, raw, spans, emitFrom, m.keep);
        out.push(m.replacement);
        this.count++;
        this.#kinds?.push(m.kind);
        pos = emitFrom = m.end;
        // The match set the state (TypeScript still believes it is SCAN).
        const state = this.#state as number;
        // A shape's masked bytes may be the start of an env value that runs on past it.
        if (state !== ENV && hasEnv) this.#envNode = this.#rules.automaton.feed(this.#rules.automaton.root, buf, m.keep, m.end);
        if (state === SCAN) afterDrop = pos;
        continue;
      }
      // Dropping the rest of a confirmed secret: dropped bytes move emitFrom.
      const from = pos;
      if (this.#state === ENV) {
        const automaton = this.#rules.automaton;
        let n = this.#envNode!;
        for (; pos < end; pos++) {
          const next = automaton.step(n, buf[pos]!);
          // Depth 1: a value may start at this byte, which the scan will see.
          if (next.depth < 2) break;
          n = next;
        }
        if (bail && this.#escapeAt(buf, pos, end)) return null;
        this.#envNode = n;
        if (pos < end) {
          this.#state = SCAN;
          afterDrop = pos;
        }
        emitFrom = pos;
        continue;
      }
      let ended: boolean;
      if (this.#state === CLASS) {
        const cls = this.#cls;
        while (pos < end && cls[buf[pos]!] === 1) pos++;
        if (bail && this.#escapeAt(buf, pos, end)) return null;
        ended = pos < end;
      } else if (this.#state === LINE) {
        // Look for `\r` only before the next `\n`: a chunk of many header lines stays linear.
        const lf = buf.indexOf(0x0a, pos);
        const lineEnd = lf === -1 ? end : lf;
        const cr = buf.subarray(pos, lineEnd).indexOf(0x0d);
        pos = cr === -1 ? lineEnd : pos + cr;
        ended = pos < end;
      } else {
        const r = findPemEnd(buf, pos, end, eof);
        ended = r >= 0;
        if (ended) pos = r;
        else {
          if (r !== NO) holdFrom = -r - 2;
          pos = end;
        }
      }
      if (hasEnv) {
        const automaton = this.#rules.automaton;
        this.#envNode = automaton.feed(this.#envNode ?? automaton.root, buf, from, Math.min(pos, holdFrom));
      }
      if (ended) {
        // An env value that began inside the masked stretch is masked to its end.
        if (this.#envNode !== null && this.#envNode.depth > 0) this.#state = ENV;
        else {
          this.#state = SCAN;
          afterDrop = pos;
        }
      }
      emitFrom = pos;
    }
    // A backslash at the end may begin an escape that the next read completes
    // (unless it is the second of a pair), and what was decided before it may
    // depend on that: decide this read again with the escapes undone.
    if (bail && !eof && buf[end - 1] === BACKSLASH && endsOddRun(buf, end)) return null;
    const stop = Math.min(holdFrom, end);
    if (stop > emitFrom) {
      if (emitFrom === 0 && stop === end && buf === raw) out.push(raw);
      else pushSlice(out, raw, spans, emitFrom, stop);
    }
    const holdRaw = holdFrom < end ? (spans === null ? holdFrom : rawIndex(spans, holdFrom, false)) : rawEnd;
    // A copy: `raw` may be the caller's chunk.
    if (holdRaw < raw.length) this.#held = Buffer.from(raw.subarray(holdRaw));
    if (stop > 0 || afterDrop === 0) this.#prev = stop === afterDrop ? SPACE : buf[stop - 1]!;
    return out.length === 0 ? EMPTY : out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** Whether an escape that may change what matches starts at `i` (or the bytes end on a backslash). */
  #escapeAt(buf: Buffer, i: number, end: number): boolean {
    return i < end && buf[i] === BACKSLASH && (i + 1 === end || this.#rules.starts[(BACKSLASH << 8) | buf[i + 1]!] === ESCAPE);
  }

  /** The first decisive answer at `i`, in a fixed order: env values, PEM, then word-start shapes. */
  #matchAt(buf: Buffer, i: number, end: number, eof: boolean, f: number, prev: number): MatchResult {
    if (f & ANYWHERE_FLAG) {
      const b = buf[i]!;
      for (const secret of this.#rules.envByFirst[b] ?? NO_SECRETS) {
        const r = this.#matchEnv(secret, buf, i, end, eof);
        if (r !== NO) return r;
      }
      if (b === PEM_FIRST) {
        const r = matchPemBegin(buf, i, end, eof);
        // One line: the block ends with its body, not at the end of the text.
        if (r !== NO && this.#kinds !== null && typeof r !== 'number') return { ...r, end: pemBodyEnd(buf, r.end, end), then: 'none' };
        if (r !== NO) return this.#enter(r);
      }
    }
    if (f & WORD_START_FLAG && ALNUM[prev] !== 1) {
      return this.#enter(matchWordStart(buf, i, end, eof, this.#kinds !== null));
    }
    return NO;
  }

  #matchEnv(secret: EnvSecret, buf: Buffer, i: number, end: number, eof: boolean): MatchResult {
    const v = secret.value;
    const stop = Math.min(secret.commit, end - i);
    for (let k = 0; k < stop; k++) if (buf[i + k] !== v[k]) return NO;
    if (stop < secret.commit) return eof ? NO : NEED;
    // Past the confirmed prefix the automaton decides what else to drop.
    this.#state = ENV;
    this.#envNode = this.#rules.automaton.prefix(v, secret.commit);
    return { keep: i, replacement: secret.replacement, end: i + secret.commit, then: 'none', cls: null, kind: secret.kind };
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
    const start = starts[(p << 8) | b]!;
    if (start !== 0 && (start === ESCAPE || i === last || pairs[(b << 8) | buf[i + 1]!] === 1)) return i;
    p = b;
  }
  return end;
}

/** Whether the backslashes that end `buf[..end)` are an odd number (the last one is not part of a `\\\\` pair). */
function endsOddRun(buf: Buffer, end: number): boolean {
  let run = 0;
  while (run < end && buf[end - 1 - run] === BACKSLASH) run++;
  return run % 2 === 1;
}

/** Unescaped bytes `from..to` as the raw bytes they came from; an escape cut by `from` or `to` is left out. */
function pushSlice(out: Buffer[], raw: Buffer, spans: readonly number[] | null, from: number, to: number): void {
  const a = spans === null ? from : rawIndex(spans, from, true);
  const b = spans === null ? to : rawIndex(spans, to, false);
  if (b > a) out.push(raw.subarray(a, b));
}

function emitIf(emit: (safe: Buffer) => void, bytes: Buffer): void {
  if (bytes.length > 0) emit(bytes);
}
