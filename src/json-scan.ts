/**
 * A strict, validating JSON scanner over UTF-8 bytes (RFC 8259 grammar, one
 * value per input). It builds no values: it checks the grammar, rejects
 * duplicate keys in every object (two parsers may keep different copies of a
 * duplicated `id` or `method`: a smuggling vector), and records the byte spans
 * of the members near the top, which is all the JSON-RPC shape check needs.
 * Payloads deep inside `params` or `result` are only walked, never copied.
 *
 * The caller must have checked that the bytes are valid UTF-8 (`isUtf8`):
 * the scanner then only has to look at ASCII structure.
 */

export type JsonType = 'object' | 'array' | 'string' | 'number' | 'true' | 'false' | 'null';

/** A scanned value: its type and byte span; `members` for recorded objects, `items` for recorded arrays. */
export interface JsonNode {
  type: JsonType;
  start: number;
  end: number;
  members?: Map<string, JsonNode>;
  items?: JsonNode[];
}

export type ScanResult = { ok: true; value: JsonNode } | { ok: false; reason: string; offset: number };

/** Nesting deeper than this is rejected rather than risking the stack. */
export const MAX_DEPTH = 512;
/** Objects nested this deep or shallower have their members recorded (0 = the top value). */
const RECORD_OBJECT_LEVELS = 3;

class ScanError {
  constructor(readonly reason: string, readonly offset: number) {}
}

const QUOTE = 0x22, BACKSLASH = 0x5c, COMMA = 0x2c, COLON = 0x3a;
const LBRACE = 0x7b, RBRACE = 0x7d, LBRACKET = 0x5b, RBRACKET = 0x5d;

/** Scan `buf[start, end)` as exactly one JSON value surrounded by optional whitespace. */
export function scanJson(buf: Buffer, start = 0, end = buf.length): ScanResult {
  const scanner = new Scanner(buf, end);
  try {
    let pos = scanner.skipWs(start);
    if (pos >= end) return { ok: false, reason: 'empty line, expected a JSON value', offset: pos };
    const value = scanner.value(pos, 0);
    pos = scanner.skipWs(value.end);
    if (pos < end) return { ok: false, reason: `unexpected ${describe(buf[pos]!)} after the JSON value`, offset: pos };
    return { ok: true, value };
  } catch (error) {
    if (error instanceof ScanError) return { ok: false, reason: error.reason, offset: error.offset };
    throw error;
  }
}

function describe(byte: number): string {
  if (byte >= 0x21 && byte < 0x7f) return `'${String.fromCharCode(byte)}'`;
  return `byte 0x${byte.toString(16).padStart(2, '0')}`;
}

class Scanner {
  constructor(private readonly buf: Buffer, private readonly end: number) {}

  skipWs(pos: number): number {
    const { buf, end } = this;
    while (pos < end) {
      const c = buf[pos]!;
      if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
      pos++;
    }
    return pos;
  }

  fail(reason: string, offset: number): never {
    throw new ScanError(reason, offset);
  }

  value(pos: number, level: number): JsonNode {
    if (pos >= this.end) this.fail('unexpected end of input (truncated JSON)', pos);
    const c = this.buf[pos]!;
    if (c === LBRACE) return this.object(pos, level);
    if (c === LBRACKET) return this.array(pos, level);
    if (c === QUOTE) return { type: 'string', start: pos, end: this.string(pos) };
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return { type: 'number', start: pos, end: this.number(pos) };
    if (c === 0x74) return this.literal(pos, 'true');
    if (c === 0x66) return this.literal(pos, 'false');
    if (c === 0x6e) return this.literal(pos, 'null');
    return this.fail(`unexpected ${describe(c)} where a JSON value should start`, pos);
  }

  literal(pos: number, word: 'true' | 'false' | 'null'): JsonNode {
    const { buf } = this;
    for (let i = 0; i < word.length; i++) {
      if (pos + i >= this.end || buf[pos + i] !== word.charCodeAt(i)) this.fail(`invalid literal, expected ${word}`, pos);
    }
    return { type: word, start: pos, end: pos + word.length };
  }

  object(pos: number, level: number): JsonNode {
    if (level >= MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`, pos);
    const { buf, end } = this;
    const start = pos;
    const members = level < RECORD_OBJECT_LEVELS ? new Map<string, JsonNode>() : undefined;
    let firstKey: string | undefined;
    let keys: Set<string> | undefined;
    pos = this.skipWs(pos + 1);
    if (pos < end && buf[pos] === RBRACE) return { type: 'object', start, end: pos + 1, members };
    for (;;) {
      if (pos >= end) this.fail('unexpected end of input inside an object (truncated JSON)', pos);
      if (buf[pos] !== QUOTE) this.fail(`expected a string key, got ${describe(buf[pos]!)}`, pos);
      const keyEnd = this.string(pos);
      const key = this.keyText(pos, keyEnd);
      // Track keys cheaply: most objects are small, so the Set is built lazily.
      if (firstKey === undefined) firstKey = key;
      else {
        if (keys === undefined) keys = new Set([firstKey]);
        if (keys.has(key)) this.fail(`duplicate key ${JSON.stringify(key)}`, pos);
        keys.add(key);
      }
      pos = this.skipWs(keyEnd);
      if (pos >= end || buf[pos] !== COLON) this.fail(pos >= end ? 'unexpected end of input (truncated JSON)' : `expected ':' after a key, got ${describe(buf[pos]!)}`, pos);
      const value = this.value(this.skipWs(pos + 1), level + 1);
      members?.set(key, value);
      pos = this.skipWs(value.end);
      if (pos >= end) this.fail('unexpected end of input inside an object (truncated JSON)', pos);
      const c = buf[pos]!;
      if (c === RBRACE) return { type: 'object', start, end: pos + 1, members };
      if (c !== COMMA) this.fail(`expected ',' or '}' in an object, got ${describe(c)}`, pos);
      pos = this.skipWs(pos + 1);
    }
  }

  array(pos: number, level: number): JsonNode {
    if (level >= MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH}`, pos);
    const { buf, end } = this;
    const start = pos;
    // Only a top-level array (a batch) needs its items.
    const items = level === 0 ? [] as JsonNode[] : undefined;
    pos = this.skipWs(pos + 1);
    if (pos < end && buf[pos] === RBRACKET) return { type: 'array', start, end: pos + 1, items };
    for (;;) {
      const value = this.value(pos, level + 1);
      items?.push(value);
      pos = this.skipWs(value.end);
      if (pos >= end) this.fail('unexpected end of input inside an array (truncated JSON)', pos);
      const c = buf[pos]!;
      if (c === RBRACKET) return { type: 'array', start, end: pos + 1, items };
      if (c !== COMMA) this.fail(`expected ',' or ']' in an array, got ${describe(c)}`, pos);
      pos = this.skipWs(pos + 1);
    }
  }

  /** Returns the offset just past the closing quote. */
  string(pos: number): number {
    const { buf, end } = this;
    let i = pos + 1;
    for (;;) {
      // Hot loop: most bytes are plain text.
      while (i < end) {
        const c = buf[i]!;
        if (c === QUOTE || c === BACKSLASH || c < 0x20) break;
        i++;
      }
      if (i >= end) this.fail('unterminated string (truncated JSON)', pos);
      const c = buf[i]!;
      if (c === QUOTE) return i + 1;
      if (c < 0x20) this.fail(`raw control character 0x${c.toString(16).padStart(2, '0')} inside a string`, i);
      // Backslash escape.
      const e = i + 1 < end ? buf[i + 1]! : -1;
      if (e === 0x75) {
        for (let k = 2; k < 6; k++) {
          const h = i + k < end ? buf[i + k]! : -1;
          const hex = (h >= 0x30 && h <= 0x39) || (h >= 0x41 && h <= 0x46) || (h >= 0x61 && h <= 0x66);
          if (!hex) this.fail('invalid \\u escape in a string', i);
        }
        i += 6;
      } else if (e === QUOTE || e === BACKSLASH || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
        i += 2;
      } else {
        this.fail('invalid escape in a string', i);
      }
    }
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
    const raw = this.buf.toString('utf8', start + 1, end - 1);
    return raw.includes('\\') ? (JSON.parse(this.buf.toString('utf8', start, end)) as string) : raw;
  }
}

/** Decode a scanned string node. */
export function stringValue(buf: Buffer, node: JsonNode): string {
  const raw = buf.toString('utf8', node.start + 1, node.end - 1);
  return raw.includes('\\') ? (JSON.parse(buf.toString('utf8', node.start, node.end)) as string) : raw;
}

/** The source text of a scanned node. */
export function nodeText(buf: Buffer, node: JsonNode): string {
  return buf.toString('utf8', node.start, node.end);
}
