/**
 * Numbers as the server reads them. The checks see a number as a double
 * (JSON.parse), while a server may keep every digit (Python's json keeps
 * integers exact, and reads an overflowing float such as `1e400` as inf).
 * Where the two can disagree, mcpguard refuses rather than judge a rounded
 * value:
 *
 * - a schema (a tool's, or a policy's `when`) whose numeric keywords
 *   (minimum, maximum, exclusive*, multipleOf, numbers in const and enum)
 *   hold an integer beyond ±(2^53 − 1) is unusable: it may have been rounded
 *   when it was read (inspect.ts). Below that every double bound is exact,
 *   and an argument beyond it is beyond the bound on both sides.
 * - an argument number whose double is infinite (`1e400`, 400 digits) is
 *   never judged: the call is refused as not checkable.
 * - an integer argument a double cannot hold exactly (9007199254740993)
 *   is refused where the schema has `multipleOf` (the remainder of a rounded
 *   value is not the remainder of the digits); bounds, const, enum and type
 *   judge it exactly, by the rule above.
 *
 * `-0` and `-0.0` need nothing: -0 === 0 in every keyword, as in Python.
 */

const QUOTE = 0x22,
  BACKSLASH = 0x5c,
  COMMA = 0x2c,
  COLON = 0x3a;
const LBRACE = 0x7b,
  RBRACE = 0x7d,
  LBRACKET = 0x5b,
  RBRACKET = 0x5d,
  MINUS = 0x2d;

/** A number in the arguments that a double does not hold as the server reads it. */
export interface InexactNumber {
  /** JSON Pointer into the arguments. */
  path: string;
  /** Its double is finite (an integer rounded), not ±Infinity. */
  finite: boolean;
}

interface Frame {
  object: boolean;
  key: [number, number] | null;
  expectKey: boolean;
  index: number;
}

/**
 * The open arrays and objects of the text being walked, one slot per level,
 * kept between calls: this runs for every tools/call the gate checks, and a
 * stack of frame objects (with a key pair each) was ~300 bytes of garbage
 * per small call. Only `pointed` (a number found: rare) makes Frame objects.
 * Not re-entrant, and needs not be: nothing here calls out.
 */
const scratch = {
  object: new Uint8Array(64),
  expectKey: new Uint8Array(64),
  keyStart: new Int32Array(64),
  keyEnd: new Int32Array(64),
  index: new Int32Array(64),
};

/** Room for level `depth` in `scratch` (a deeper text than any before: every array twice as long, contents kept). */
function room(depth: number): void {
  if (depth < scratch.index.length) return;
  const grow = <T extends Uint8Array | Int32Array>(a: T): T => {
    const b = new (a.constructor as new (n: number) => T)(2 * a.length);
    b.set(a);
    return b;
  };
  scratch.object = grow(scratch.object);
  scratch.expectKey = grow(scratch.expectKey);
  scratch.keyStart = grow(scratch.keyStart);
  scratch.keyEnd = grow(scratch.keyEnd);
  scratch.index = grow(scratch.index);
}

/** Levels 0 .. depth-1 of `scratch` as Frame objects (for `pointed`). */
function framesOf(depth: number): Frame[] {
  const frames: Frame[] = [];
  for (let d = 0; d < depth; d++) {
    const object = scratch.object[d] === 1;
    const key: [number, number] | null = scratch.keyStart[d]! < 0 ? null : [scratch.keyStart[d]!, scratch.keyEnd[d]!];
    frames.push({ object, key, expectKey: scratch.expectKey[d] === 1, index: scratch.index[d]! });
  }
  return frames;
}

/**
 * The first number in the JSON text `buf[start, end)` (scanned: valid) whose
 * double is infinite, or else the first integer literal it rounds; null when
 * every number is exact. Strings are skipped with indexOf, so long text costs
 * little.
 */
export function inexactNumber(buf: Buffer, start: number, end: number): InexactNumber | null {
  let depth = 0;
  let found: Frame[] | null = null;
  let i = start;
  while (i < end) {
    const c = buf[i]!;
    if (c === QUOTE) {
      let j = i;
      do j = buf.indexOf(QUOTE, j + 1);
      while (j > 0 && escaped(buf, j));
      if (j < 0 || j >= end) break; // not JSON after all: nothing more to find
      const top = depth - 1;
      if (top >= 0 && scratch.object[top] === 1 && scratch.expectKey[top] === 1) {
        scratch.keyStart[top] = i;
        scratch.keyEnd[top] = j + 1;
        scratch.expectKey[top] = 0;
      }
      i = j + 1;
      continue;
    }
    if (c === LBRACE || c === LBRACKET) {
      room(depth);
      scratch.object[depth] = c === LBRACE ? 1 : 0;
      scratch.expectKey[depth] = c === LBRACE ? 1 : 0;
      scratch.keyStart[depth] = -1;
      scratch.index[depth] = 0;
      depth++;
      i++;
      continue;
    }
    if (c === RBRACE || c === RBRACKET) {
      if (depth > 0) depth--;
      i++;
      continue;
    }
    if (c === COMMA) {
      const top = depth - 1;
      if (top < 0) {
        i++;
        continue;
      }
      if (scratch.object[top] === 1) scratch.expectKey[top] = 1;
      else scratch.index[top]!++;
      i++;
      continue;
    }
    if (c === MINUS || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      let plain = true;
      for (; j < end; j++) {
        const d = buf[j]!;
        if (d >= 0x30 && d <= 0x39) continue;
        if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === MINUS) {
          plain = false;
          continue;
        }
        break;
      }
      // Fifteen digits or fewer, without an exponent, are always exact (|n| < 2^53).
      if (!plain || j - i > 15) {
        const text = buf.toString('latin1', i, j);
        const n = Number(text);
        if (!Number.isFinite(n)) return pointed(buf, framesOf(depth), false);
        if (plain && found === null && BigInt(text) !== BigInt(n)) found = framesOf(depth);
      }
      i = j;
      continue;
    }
    if (c === COLON) {
      i++;
      continue;
    }
    i++;
  }
  return found === null ? null : pointed(buf, found, true);
}

/** The quote at `j` is escaped (an odd run of backslashes before it). */
function escaped(buf: Buffer, j: number): boolean {
  let n = 0;
  while (buf[j - 1 - n] === BACKSLASH) n++;
  return n % 2 === 1;
}

function pointed(buf: Buffer, stack: readonly Frame[], finite: boolean): InexactNumber {
  let path = '';
  for (const f of stack) {
    const segment = f.object ? (f.key === null ? '' : String(JSON.parse(buf.toString('utf8', f.key[0], f.key[1])))) : String(f.index);
    path += `/${segment.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  }
  return { path, finite };
}

/** The reason a call with this number is refused, or null when the schema judges it exactly. */
export function inexactReason(n: InexactNumber | null, multipleOf: boolean): string | null {
  if (n === null || (n.finite && !multipleOf)) return null;
  const at = n.path === '' ? 'the arguments' : `argument ${n.path}`;
  return n.finite
    ? `${at} is an integer a double cannot hold exactly, and the schema has multipleOf: mcpguard cannot judge it as the server reads it`
    : `${at} is a number beyond a double's range (the server may read it as infinity or as an exact integer): mcpguard cannot judge it`;
}

/** Keywords whose numbers are compared with the arguments'. */
export const EXACT_KEYWORDS: readonly string[] = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf', 'const', 'enum'];

/** An integer-valued number beyond ±(2^53 − 1) in `value` (a keyword's value): read from the schema, it may have been rounded. */
export function unsafeInteger(value: unknown): number | null {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'number') {
      if (Number.isInteger(v) && !Number.isSafeInteger(v)) return v;
    } else if (typeof v === 'object' && v !== null) {
      for (const m of Array.isArray(v) ? v : Object.values(v)) stack.push(m);
    }
  }
  return null;
}
