/**
 * One level of JSON string escapes, undone for matching only. A secret that a
 * JSON encoder wrote as `\u0073k-…`, `abc\/def` or `pa\"ss` is the same secret;
 * the redactor matches on the unescaped bytes and masks the raw bytes they came
 * from, so what it lets through is always the input's own bytes.
 *
 * Undone: `\uXXXX` (a surrogate pair as one character) and `\/`; `\"` and
 * `\\` only when asked (UNDO_QUOTE, UNDO_BACKSLASH: when an env secret holds
 * one of those characters), because JSON logs are full of them and no secret
 * shape contains either character. Kept as they are: `\n`, `\t` and the other
 * control escapes (also as `\u0000`–`\u001f`), so a header value still ends
 * where the line ends, and a lone surrogate. Only one level: `\\u0073` stays
 * `\u0073`.
 */

const BACKSLASH = 0x5c;
/** Raw bytes of the longest escape: a surrogate pair, `\uD83D\uDE00`. */
export const MAX_ESCAPE_BYTES = 12;
/** Most raw bytes one unescaped byte can come from (`\u0073` is one byte). */
export const MAX_RAW_PER_BYTE = 6;

/** `raw` with its escapes undone, and where each escape was. */
export interface Unescaped {
  bytes: Buffer;
  /** Raw bytes decided: an escape cut off by the end of `raw` starts here and waits for more. */
  rawEnd: number;
  /** Per escape, four numbers: unescaped start, unescaped length, raw start, raw length. */
  spans: number[];
}

const INCOMPLETE = -1;
const LITERAL = -2;
/** Undo `\"` too. */
export const UNDO_QUOTE = 1;
/** Undo `\\` too. */
export const UNDO_BACKSLASH = 2;

/** The escapes to undo for these secret values: `\"` and `\\` only if some value holds that character. */
export function undoFor(values: readonly Buffer[]): number {
  let undo = 0;
  for (const v of values) {
    if (v.includes(0x22)) undo |= UNDO_QUOTE;
    if (v.includes(BACKSLASH)) undo |= UNDO_BACKSLASH;
  }
  return undo;
}

/**
 * Undo the escapes in `raw`; null when there is nothing to undo and nothing to
 * wait for. Unless `eof`, an escape cut off by the end of `raw` is left out
 * (see `rawEnd`).
 */
export function unescapeJson(raw: Buffer, eof: boolean, undo = 0): Unescaped | null {
  const first = raw.indexOf(BACKSLASH);
  if (first === -1) return null;
  // One byte loop (escapes may come every few bytes: native calls per escape cost more than copying).
  const len = raw.length;
  let out: Buffer | null = null;
  let o = first;
  let rawEnd = len;
  const spans: number[] = [];
  for (let i = first; i < len; ) {
    const b = raw[i]!;
    if (b !== BACKSLASH) {
      if (out !== null) out[o] = b;
      o++;
      i++;
      continue;
    }
    const cp = escapeAt(raw, i, eof, undo);
    if (cp === INCOMPLETE) {
      rawEnd = i;
      break;
    }
    if (cp === LITERAL) {
      // Both bytes stay (`\n`, or `\\` kept as a pair), and the second cannot start an escape.
      const n = Math.min(2, len - i);
      if (out !== null) for (let k = 0; k < n; k++) out[o + k] = raw[i + k]!;
      o += n;
      i += n;
      continue;
    }
    if (out === null) {
      out = Buffer.allocUnsafe(len);
      raw.copy(out, 0, 0, o);
    }
    const rawLen = raw[i + 1] !== 0x75 ? 2 : cp > 0xffff ? 12 : 6;
    const start = o;
    o = writeUtf8(out, o, cp);
    spans.push(start, o - start, i, rawLen);
    i += rawLen;
  }
  if (out === null) return rawEnd === len ? null : { bytes: raw.subarray(0, rawEnd), rawEnd, spans };
  return { bytes: out.subarray(0, o), rawEnd, spans };
}

/** The code point the escape at `at` stands for, LITERAL, or INCOMPLETE when the bytes ran out first. */
function escapeAt(raw: Buffer, at: number, eof: boolean, undo: number): number {
  if (at + 1 >= raw.length) return eof ? LITERAL : INCOMPLETE;
  const c = raw[at + 1]!;
  if (c === 0x2f) return c;
  if (c === 0x22) return undo & UNDO_QUOTE ? c : LITERAL;
  if (c === BACKSLASH) return undo & UNDO_BACKSLASH ? c : LITERAL;
  if (c !== 0x75) return LITERAL;
  const unit = hex4(raw, at + 2, eof);
  if (unit < 0) return unit;
  if (unit < 0x20 || (unit >= 0xdc00 && unit <= 0xdfff)) return LITERAL;
  if (unit < 0xd800 || unit > 0xdbff) return unit;
  // A high surrogate counts only with its low half.
  if (at + 7 >= raw.length) return eof ? LITERAL : INCOMPLETE;
  if (raw[at + 6] !== BACKSLASH || raw[at + 7] !== 0x75) return LITERAL;
  const low = hex4(raw, at + 8, eof);
  if (low === INCOMPLETE) return INCOMPLETE;
  if (low < 0xdc00 || low > 0xdfff) return LITERAL;
  return 0x10000 + ((unit - 0xd800) << 10) + (low - 0xdc00);
}

function writeUtf8(out: Buffer, at: number, cp: number): number {
  if (cp < 0x80) {
    out[at] = cp;
    return at + 1;
  }
  if (cp < 0x800) {
    out[at] = 0xc0 | (cp >> 6);
    out[at + 1] = 0x80 | (cp & 0x3f);
    return at + 2;
  }
  if (cp < 0x10000) {
    out[at] = 0xe0 | (cp >> 12);
    out[at + 1] = 0x80 | ((cp >> 6) & 0x3f);
    out[at + 2] = 0x80 | (cp & 0x3f);
    return at + 3;
  }
  out[at] = 0xf0 | (cp >> 18);
  out[at + 1] = 0x80 | ((cp >> 12) & 0x3f);
  out[at + 2] = 0x80 | ((cp >> 6) & 0x3f);
  out[at + 3] = 0x80 | (cp & 0x3f);
  return at + 4;
}

function hex4(raw: Buffer, from: number, eof: boolean): number {
  let v = 0;
  for (let k = from; k < from + 4; k++) {
    if (k >= raw.length) return eof ? LITERAL : INCOMPLETE;
    const d = hexDigit(raw[k]!);
    if (d < 0) return LITERAL;
    v = (v << 4) | d;
  }
  return v;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x57 : -1;
}

/**
 * The raw index for unescaped index `i`. An index inside an escape's bytes
 * rounds to the escape's raw start (`up` false) or end (`up` true): a masked
 * span always covers whole escapes.
 */
export function rawIndex(spans: readonly number[], i: number, up: boolean): number {
  let lo = 0;
  let hi = spans.length / 4;
  // The last escape starting at or before i.
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (spans[mid * 4]! <= i) lo = mid + 1;
    else hi = mid;
  }
  if (lo === 0) return i;
  const s = (lo - 1) * 4;
  const start = spans[s]!;
  const after = start + spans[s + 1]!;
  if (i >= after) return spans[s + 2]! + spans[s + 3]! + (i - after);
  if (i === start) return spans[s + 2]!;
  return up ? spans[s + 2]! + spans[s + 3]! : spans[s + 2]!;
}
