/**
 * The scanner behind json-scan.ts: the byte-level grammar walk (strings,
 * numbers, objects with their duplicate-key check, arrays), the long-run
 * string checks (words, WebAssembly SIMD) and the decoding of keys. Kept
 * apart so each file stays readable; json-scan.ts is the API every other
 * module uses, and lends one Scanner between scans.
 */

import { membersFrom, scalarValue, type MemberValue } from './json-members.js';
import { stringBodyCheck, type StringBodyCheck } from './wasm/string-body.js';
import type { JsonNode, JsonType, MemberMap, ScanHints } from './json-scan.js';
import { decodeString, describe, firstControlBytes, firstFlaggedWord, ScanError, wordsOf } from './json-strings.js';

/** Nesting deeper than this is rejected rather than risking the stack. */
export const MAX_DEPTH = 512;
/**
 * How many levels of objects have their members recorded, counted from the
 * message (a batch's items count as messages): the message's own members and
 * those of `params`/`result`/`error`. Deeper objects (tool arguments, results'
 * content) are walked only; a caller that needs one rescans just that node.
 */
export const RECORD_OBJECT_LEVELS = 2;

const QUOTE = 0x22,
  BACKSLASH = 0x5c,
  COMMA = 0x2c,
  COLON = 0x3a;
const LBRACE = 0x7b,
  RBRACE = 0x7d,
  LBRACKET = 0x5b,
  RBRACKET = 0x5d;

/** String bytes scanned one at a time before a run counts as long (see `runEnd`). */
const SHORT_RUN = 32;
/** Runs shorter than this are checked for control bytes byte by byte, longer ones by words. */
const WORD_RUN = 64;
/** Runs this long are checked 16 bytes at a time (WebAssembly SIMD; a copy into its memory first). */
const SIMD_RUN = 1024;

/** Objects with more keys than this track them in a Set instead of comparing byte ranges. */
const LINEAR_KEY_LIMIT = 16;
/** A reused scanner whose stacks grew beyond this many entries drops them (one huge frame must not keep them). */
const KEPT_STACK_ENTRIES = 4096;
export const EMPTY_BUFFER = Buffer.alloc(0);

export class Scanner {
  /**
   * Byte ranges of the keys of the objects being scanned: a stack shared by
   * all nesting levels, `keyTop` entries deep. Entries above `keyTop` are
   * stale and overwritten; the arrays never shrink (cheaper than resizing).
   */
  private keyStart: number[] = [];
  private keyEnd: number[] = [];
  private keyTop = 0;
  /**
   * The recorded objects' members being scanned (name, value: see
   * json-members.ts), a stack like the key ranges (`memberTop` deep); each object
   * copies its own part out when it closes.
   */
  private memberStack: Array<string | MemberValue> = [];
  private memberTop = 0;
  /** Where the object `recordedObject` scanned last ends (read at once after it returns). */
  private closedAt = 0;
  /** Set by `string()`: the string just scanned contained a backslash escape. */
  private escaped = false;
  /** The next `"` / `\\` at or after the last long-run search (`end` if none), -1 before the first. */
  private quoteAt = -1;
  private backslashAt = -1;
  /** The SIMD check (false where there is none), looked up on the first very long run. */
  private simd: StringBodyCheck | false | undefined = undefined;
  /** The buffer's aligned 4-byte words, made on the first long run. */
  private words: Int32Array | undefined = undefined;

  /** Next hint to look at (the scan only moves forward). */
  private hint = 0;
  /** A line scan (scanRootInto): the one offset where a CR may stand. -1: a CR is whitespace anywhere (plain JSON). */
  crOnlyAt = -1;

  constructor(
    private buf: Buffer,
    private end: number,
    private hints: ScanHints | undefined,
  ) {}

  /** Ready for a scan of `buf` up to `end`, as if new (stacks keep their capacity, the SIMD check its lookup). */
  reset(buf: Buffer, end: number, hints: ScanHints | undefined): void {
    this.buf = buf;
    this.end = end;
    this.hints = hints;
    this.keyTop = 0;
    this.memberTop = 0;
    this.escaped = false;
    this.quoteAt = -1;
    this.backslashAt = -1;
    this.words = undefined;
    this.hint = 0;
    this.crOnlyAt = -1;
  }

  /** Lets go of the scanned frame (and of stacks a huge frame grew), so that an idle scanner holds nothing big. */
  release(): void {
    this.buf = EMPTY_BUFFER;
    this.end = 0;
    this.hints = undefined;
    this.words = undefined;
    if (this.keyStart.length > KEPT_STACK_ENTRIES) {
      this.keyStart = [];
      this.keyEnd = [];
    }
    // Entries left above the top are overwritten by the next scan; many are dropped now.
    if (this.memberStack.length > KEPT_STACK_ENTRIES) this.memberStack = [];
  }

  /** A string value at `pos`: past a hinted one in one step, else scanned. */
  private hintedString(pos: number): number {
    const { starts, ends } = this.hints!;
    let k = this.hint;
    while (k < starts.length && starts[k]! < pos) k++;
    this.hint = k;
    if (k < starts.length && starts[k] === pos) {
      const past = ends[k]!;
      // A scan of a smaller range must still fail where the range ends.
      if (past <= this.end) return past;
    }
    return this.string(pos);
  }

  skipWs(pos: number): number {
    const { buf, end } = this;
    while (pos < end) {
      const c = buf[pos]!;
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      // Only whitespace pays for this test; the refusal is out of line so that this loop stays small.
      if (c === 0x0d && this.crOnlyAt !== -1 && pos !== this.crOnlyAt) this.bareCr(pos);
      pos++;
    }
    return pos;
  }

  /** A CR a line scan does not allow (see scanRootInto). */
  private bareCr(pos: number): never {
    this.fail('bare CR (0x0d) before the end of the line: a reader with universal newlines would end the line here', pos);
  }

  fail(reason: string, offset: number): never {
    throw new ScanError(reason, offset);
  }

  /**
   * Scan a value and describe it (used near the top, where the shape check
   * looks). `record` is how many more levels of object members to record.
   */
  value(pos: number, level: number, record: number): JsonNode {
    if (pos >= this.end) this.fail('unexpected end of input (truncated JSON)', pos);
    const c = this.buf[pos]!;
    if (c === LBRACE) {
      if (record <= 0) return { type: 'object', start: pos, end: this.object(pos, level, false, 0), members: undefined };
      const members = this.recordedObject(pos, level, record);
      return { type: 'object', start: pos, end: this.closedAt, members };
    }
    if (c === LBRACKET) {
      // Only a top-level array (a batch) needs its items, each a message.
      const items = level === 0 ? ([] as JsonNode[]) : undefined;
      return { type: 'array', start: pos, end: this.array(pos, level, items, record), items };
    }
    return { type: this.typeAt(pos), start: pos, end: this.skip(pos, level) };
  }

  /** `value` for the top level, written into `into` (all five fields) instead of a new node when the value is an object. */
  rootInto(pos: number, into: JsonNode): JsonNode {
    const node = pos < this.end && this.buf[pos] === LBRACE ? undefined : this.value(pos, 0, RECORD_OBJECT_LEVELS);
    if (node === undefined) {
      into.members = this.recordedObject(pos, 0, RECORD_OBJECT_LEVELS);
      into.type = 'object';
      into.start = pos;
      into.end = this.closedAt;
      into.items = undefined;
    } else {
      into.type = node.type;
      into.start = node.start;
      into.end = node.end;
      into.members = node.members;
      into.items = node.items;
    }
    return into;
  }

  /** Scan a recorded object at `pos`: returns its members and leaves the offset past it in `closedAt`. */
  private recordedObject(pos: number, level: number, record: number): MemberMap {
    const from = this.memberTop;
    const end = this.object(pos, level, true, record - 1);
    const members = membersFrom(this.memberStack, from, this.memberTop);
    this.memberTop = from;
    this.closedAt = end;
    return members;
  }

  private typeAt(pos: number): JsonType {
    const c = this.buf[pos]!;
    if (c === QUOTE) return 'string';
    if (c === 0x74) return 'true';
    if (c === 0x66) return 'false';
    if (c === 0x6e) return 'null';
    return 'number';
  }

  /** Scan a value without describing it; returns the offset just past it. Allocates nothing. */
  skip(pos: number, level: number): number {
    if (pos >= this.end) this.fail('unexpected end of input (truncated JSON)', pos);
    const c = this.buf[pos]!;
    if (c === QUOTE) return this.hints === undefined ? this.string(pos) : this.hintedString(pos);
    if (c === LBRACE) return this.object(pos, level, false, 0);
    if (c === LBRACKET) return this.array(pos, level, undefined, 0);
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number(pos);
    if (c === 0x74) return this.literal(pos, 'true');
    if (c === 0x66) return this.literal(pos, 'false');
    if (c === 0x6e) return this.literal(pos, 'null');
    return this.fail(`unexpected ${describe(c)} where a JSON value should start`, pos);
  }

  literal(pos: number, word: 'true' | 'false' | 'null'): number {
    const { buf } = this;
    for (let i = 0; i < word.length; i++) {
      if (pos + i >= this.end || buf[pos + i] !== word.charCodeAt(i)) this.fail(`invalid literal, expected ${word}`, pos);
    }
    return pos + word.length;
  }

  /** Scan an object; pushes its members (name, node) onto `memberStack` when `recorded`. Returns the offset past `}`. */
  object(pos: number, level: number, recorded: boolean, record: number): number {
    if (level >= MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`, pos);
    const { buf, end, keyStart, keyEnd } = this;
    // This object's keys sit above `base`; every return pops them (after a throw, the next scan's reset does).
    const base = this.keyTop;
    // Keys are compared as raw byte ranges until an escape or a large object makes a Set cheaper.
    let keySet: Set<string> | undefined;
    pos = this.skipWs(pos + 1);
    if (pos < end && buf[pos] === RBRACE) return pos + 1;
    for (;;) {
      if (pos >= end) this.fail('unexpected end of input inside an object (truncated JSON)', pos);
      if (buf[pos] !== QUOTE) this.fail(`expected a string key, got ${describe(buf[pos]!)}`, pos);
      const keyEndPos = this.string(pos);
      if (keySet === undefined && (this.escaped || this.keyTop - base >= LINEAR_KEY_LIMIT)) {
        keySet = new Set();
        for (let k = base; k < this.keyTop; k++) keySet.add(this.keyText(keyStart[k]!, keyEnd[k]!));
      }
      if (keySet !== undefined) {
        const key = this.keyText(pos, keyEndPos);
        if (keySet.has(key)) this.fail(`duplicate key ${JSON.stringify(key)}`, pos);
        keySet.add(key);
      } else {
        if (this.repeatsKey(base, pos, keyEndPos)) this.fail(`duplicate key ${JSON.stringify(this.keyText(pos, keyEndPos))}`, pos);
        keyStart[this.keyTop] = pos;
        keyEnd[this.keyTop] = keyEndPos;
        this.keyTop++;
      }
      const keyAt = pos;
      pos = this.skipWs(keyEndPos);
      if (pos >= end || buf[pos] !== COLON)
        this.fail(pos >= end ? 'unexpected end of input (truncated JSON)' : `expected ':' after a key, got ${describe(buf[pos]!)}`, pos);
      pos = this.skipWs(pos + 1);
      // A walked object's loop stays small: recording a member is a call of its own.
      pos = recorded ? this.recordMember(pos, level, record, keyAt, keyEndPos) : this.skip(pos, level + 1);
      pos = this.skipWs(pos);
      if (pos >= end) this.fail('unexpected end of input inside an object (truncated JSON)', pos);
      const c = buf[pos]!;
      if (c === RBRACE) {
        this.keyTop = base;
        return pos + 1;
      }
      if (c !== COMMA) this.fail(`expected ',' or '}' in an object, got ${describe(c)}`, pos);
      pos = this.skipWs(pos + 1);
    }
  }

  /** Scan a recorded object's member value at `pos` and push it with its key; returns the offset past the value. */
  private recordMember(pos: number, level: number, record: number, keyAt: number, keyEndPos: number): number {
    // Pushed after the value: a recorded value's own members used the stack above and are gone.
    const c = pos < this.end ? this.buf[pos]! : -1;
    let value: MemberValue;
    if (c === LBRACE || c === LBRACKET) {
      const node = this.value(pos, level + 1, record);
      value = node;
      pos = node.end;
    } else {
      // A scalar: no node until one is asked for (json-members.ts).
      const valueEnd = this.skip(pos, level + 1);
      value = scalarValue(c, pos, valueEnd);
      pos = valueEnd;
    }
    const stack = this.memberStack;
    stack[this.memberTop] = this.keyText(keyAt, keyEndPos);
    stack[this.memberTop + 1] = value;
    this.memberTop += 2;
    return pos;
  }

  /** True if the raw key bytes [start, end) equal one of this object's earlier keys. */
  private repeatsKey(base: number, start: number, end: number): boolean {
    const { buf, keyStart, keyEnd } = this;
    const length = end - start;
    for (let k = base; k < this.keyTop; k++) {
      const s = keyStart[k]!;
      if (keyEnd[k]! - s !== length) continue;
      let i = 1; // skip the opening quote, equal by construction
      while (i < length && buf[s + i] === buf[start + i]) i++;
      if (i === length) return true;
    }
    return false;
  }

  /** Scan an array; records its items into `items` when given. Returns the offset past `]`. */
  array(pos: number, level: number, items: JsonNode[] | undefined, record: number): number {
    if (level >= MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`, pos);
    const { buf, end } = this;
    pos = this.skipWs(pos + 1);
    if (pos < end && buf[pos] === RBRACKET) return pos + 1;
    for (;;) {
      if (items !== undefined) {
        const value = this.value(pos, level + 1, record);
        items.push(value);
        pos = value.end;
      } else {
        pos = this.skip(pos, level + 1);
      }
      pos = this.skipWs(pos);
      if (pos >= end) this.fail('unexpected end of input inside an array (truncated JSON)', pos);
      const c = buf[pos]!;
      if (c === RBRACKET) return pos + 1;
      if (c !== COMMA) this.fail(`expected ',' or ']' in an array, got ${describe(c)}`, pos);
      pos = this.skipWs(pos + 1);
    }
  }

  /** Returns the offset just past the closing quote; sets `escaped`. */
  string(pos: number): number {
    const { buf, end } = this;
    let i = pos + 1;
    this.escaped = false;
    for (;;) {
      // Short runs byte by byte (most keys and values); a run that goes on takes the long-run path.
      const shortEnd = i + SHORT_RUN < end ? i + SHORT_RUN : end;
      while (i < shortEnd) {
        const c = buf[i]!;
        if (c === QUOTE || c === BACKSLASH || c < 0x20) break;
        i++;
      }
      if (i === shortEnd && i < end) i = this.runEnd(i);
      if (i >= end) this.fail('unterminated string (truncated JSON)', pos);
      const c = buf[i]!;
      if (c === QUOTE) return i + 1;
      if (c < 0x20) this.fail(`raw control character 0x${c.toString(16).padStart(2, '0')} inside a string`, i);
      this.escaped = true;
      const e = i + 1 < end ? buf[i + 1]! : -1;
      if (e === 0x75) {
        const unit = this.hex4(i);
        // I-JSON (RFC 7493): no lone surrogates; parsers disagree on them (kept, replaced, refused).
        if (unit >= 0xdc00 && unit <= 0xdfff) this.fail('lone low surrogate escape in a string', i);
        if (unit >= 0xd800 && unit <= 0xdbff) {
          // Reads are kept inside the buffer: one out-of-bounds read would deoptimise this function.
          const next = i + 7 < buf.length && buf[i + 6] === BACKSLASH && buf[i + 7] === 0x75;
          const low = next ? this.hex4(i + 6) : -1;
          if (low < 0xdc00 || low > 0xdfff) this.fail('lone high surrogate escape in a string', i);
          i += 6;
        }
        i += 6;
      } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i += 2;
      } else {
        this.fail('invalid escape in a string', i);
      }
    }
  }

  /** See StringResume.resume: string()'s loop, stopping instead of failing where bytes are missing. */
  resumeString(i: number): number {
    const { buf, end } = this;
    this.escaped = false;
    for (;;) {
      const shortEnd = i + SHORT_RUN < end ? i + SHORT_RUN : end;
      while (i < shortEnd) {
        const c = buf[i]!;
        if (c === QUOTE || c === BACKSLASH || c < 0x20) break;
        i++;
      }
      if (i === shortEnd && i < end) i = this.runEnd(i);
      if (i >= end) return -(i + 1);
      const c = buf[i]!;
      if (c === QUOTE) return i + 1;
      if (c < 0x20) this.fail(`raw control character 0x${c.toString(16).padStart(2, '0')} inside a string`, i);
      this.escaped = true;
      if (i + 1 >= end) return -(i + 1);
      const e = buf[i + 1]!;
      if (e === 0x75) {
        // The escape is judged only once all the bytes string() would read are here.
        if (i + 6 > end) return -(i + 1);
        const unit = this.hex4(i);
        if (unit >= 0xdc00 && unit <= 0xdfff) this.fail('lone low surrogate escape in a string', i);
        if (unit >= 0xd800 && unit <= 0xdbff) {
          if (i + 12 > end) return -(i + 1);
          const low = buf[i + 6] === BACKSLASH && buf[i + 7] === 0x75 ? this.hex4(i + 6) : -1;
          if (low < 0xdc00 || low > 0xdfff) this.fail('lone high surrogate escape in a string', i);
          i += 6;
        }
        i += 6;
      } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i += 2;
      } else {
        this.fail('invalid escape in a string', i);
      }
    }
  }

  /**
   * The long-run path: the offset of the first `"`, `\\` or control byte at
   * or after `i`, or `end`. Quotes and backslashes are found by memchr
   * (`indexOf`), whose answers are kept: positions only grow within one scan,
   * so each byte is searched at most once per kind however many runs there
   * are. Control bytes are then looked for only up to the nearer of the two.
   */
  private runEnd(i: number): number {
    const { buf, end } = this;
    if (this.quoteAt < i) {
      const at = buf.indexOf(QUOTE, i);
      this.quoteAt = at === -1 || at > end ? end : at;
    }
    if (this.backslashAt < i) {
      const at = buf.indexOf(BACKSLASH, i);
      this.backslashAt = at === -1 || at > end ? end : at;
    }
    const stop = this.quoteAt < this.backslashAt ? this.quoteAt : this.backslashAt;
    return stop - i < WORD_RUN ? firstControlBytes(buf, i, stop) : this.firstControlWords(i, stop);
  }

  /**
   * The first byte < 0x20 in [i, stop), or `stop`, 16 bytes per step through an
   * Int32Array view of the buffer's aligned words. A word has a byte below
   * 0x20 exactly when `(w - 0x20202020) & ~w & 0x80808080` is non-zero (no
   * false positives for existence; which byte it is, a byte loop then finds).
   */
  private firstControlWords(i: number, stop: number): number {
    const { buf } = this;
    if (stop - i >= SIMD_RUN) {
      const simd = (this.simd ??= stringBodyCheck() ?? false);
      if (simd !== false) return simd.firstControl(buf, i, stop);
    }
    // Bytes up to the first aligned one.
    const misaligned = (4 - ((buf.byteOffset + i) & 3)) & 3;
    const head = firstControlBytes(buf, i, i + misaligned);
    if (head < i + misaligned) return head;
    i += misaligned;
    const words = (this.words ??= wordsOf(buf));
    const shift = (4 - (buf.byteOffset & 3)) & 3; // buffer index of word 0
    const k = (i - shift) >> 2;
    const flagged = firstFlaggedWord(words, k, k + (((stop - i) >> 2) & ~3));
    return firstControlBytes(buf, shift + (flagged << 2), stop);
  }

  /** The code unit of the `\\uXXXX` escape at `i`. */
  private hex4(i: number): number {
    let unit = 0;
    for (let k = 2; k < 6; k++) {
      const h = i + k < this.end ? this.buf[i + k]! : -1;
      const digit = h >= 0x30 && h <= 0x39 ? h - 0x30 : h >= 0x41 && h <= 0x46 ? h - 0x37 : h >= 0x61 && h <= 0x66 ? h - 0x57 : -1;
      if (digit < 0) this.fail('invalid \\u escape in a string', i);
      unit = unit * 16 + digit;
    }
    return unit;
  }

  number(pos: number): number {
    const { buf, end } = this;
    let i = pos;
    if (buf[i] === 0x2d) i++;
    if (i >= end) this.fail('invalid number', pos);
    if (buf[i] === 0x30) i++;
    else if (buf[i]! >= 0x31 && buf[i]! <= 0x39) while (i < end && buf[i]! >= 0x30 && buf[i]! <= 0x39) i++;
    else this.fail('invalid number', pos);
    if (i < end && buf[i] === 0x2e) {
      const digits = ++i;
      while (i < end && buf[i]! >= 0x30 && buf[i]! <= 0x39) i++;
      if (i === digits) this.fail('invalid number: no digits after the decimal point', pos);
    }
    if (i < end && (buf[i] === 0x65 || buf[i] === 0x45)) {
      i++;
      if (i < end && (buf[i] === 0x2b || buf[i] === 0x2d)) i++;
      const digits = i;
      while (i < end && buf[i]! >= 0x30 && buf[i]! <= 0x39) i++;
      if (i === digits) this.fail('invalid number: no digits in the exponent', pos);
    }
    return i;
  }

  /** The decoded text of a key; escapes are resolved so "a" and "\u0061" collide. */
  keyText(start: number, end: number): string {
    return decodeString(this.buf, start, end);
  }
}
