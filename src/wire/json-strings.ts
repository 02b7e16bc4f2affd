/**
 * String bodies for the scanner (json-scanner.ts): the search for control
 * bytes a word at a time, and the decoding of a string literal (common member
 * names and methods come back as constants instead of new strings).
 */

/** The first byte < 0x20 in buf[i, stop), or `stop`. */
export function firstControlBytes(buf: Buffer, i: number, stop: number): number {
  while (i < stop && buf[i]! >= 0x20) i++;
  return i;
}

/**
 * The first group of four words in words[k, kEnd) (kEnd - k a multiple of
 * 4) with a byte below 0x20, or kEnd. A leaf
 * with nothing after its loop but a return: V8 compiles a hot loop on its
 * first long run (on-stack replacement), and code after such a loop that had
 * never run is compiled without type feedback; reaching it then deoptimised
 * the cached code on every later long run, for the life of the process.
 */
export function firstFlaggedWord(words: Int32Array, k: number, kEnd: number): number {
  // Four words a step; the caller checks the last few bytes one at a time.
  while (k < kEnd) {
    const a = words[k]!,
      b = words[k + 1]!,
      c = words[k + 2]!,
      d = words[k + 3]!;
    if ((((a - 0x20202020) & ~a) | ((b - 0x20202020) & ~b) | ((c - 0x20202020) & ~c) | ((d - 0x20202020) & ~d)) & 0x80808080) return k;
    k += 4;
  }
  return k;
}

/** An Int32Array over the whole 4-byte words inside `buf`, the first at buffer index `(4 - byteOffset % 4) % 4`. */
export function wordsOf(buf: Buffer): Int32Array {
  const first = (buf.byteOffset + 3) & ~3;
  const count = Math.max(0, (buf.byteOffset + buf.length - first) >> 2);
  return new Int32Array(buf.buffer, first, count);
}

/** The text of the JSON string literal at [start, end) (quotes included). */
export function decodeString(buf: Buffer, start: number, end: number): string {
  const common = commonString(buf, start + 1, end - 1);
  if (common !== undefined) return common;
  const raw = buf.toString('utf8', start + 1, end - 1);
  return raw.includes('\\') ? (JSON.parse(buf.toString('utf8', start, end)) as string) : raw;
}

/**
 * Strings every message carries (JSON-RPC and MCP member names, the version,
 * common methods). Recognised by their bytes, they are returned as these
 * constants instead of being decoded into a new string each time.
 */
const COMMON_STRINGS = [
  'jsonrpc',
  '2.0',
  'id',
  'method',
  'params',
  'result',
  'error',
  'code',
  'message',
  'data',
  '_meta',
  'name',
  'arguments',
  'content',
  'isError',
  'structuredContent',
  'requestId',
  'reason',
  'progressToken',
  'progress',
  'total',
  'cursor',
  'nextCursor',
  'uri',
  'protocolVersion',
  'capabilities',
  'clientInfo',
  'serverInfo',
  'initialize',
  'ping',
  'tools/call',
  'tools/list',
  'resources/read',
  'resources/list',
  'prompts/get',
  'prompts/list',
  'notifications/initialized',
  'notifications/cancelled',
  'notifications/progress',
];
/** COMMON_STRINGS by byte length: each as its text and its char codes (all ASCII). */
const COMMON_BY_LENGTH: Array<Array<{ text: string; codes: number[] }> | undefined> = [];
for (const text of COMMON_STRINGS) {
  (COMMON_BY_LENGTH[text.length] ??= []).push({ text, codes: Array.from(text, (c) => c.charCodeAt(0)) });
}

/** The common string whose raw bytes are exactly buf[start, end), if any (no escapes: none has a backslash). */
function commonString(buf: Buffer, start: number, end: number): string | undefined {
  const candidates = COMMON_BY_LENGTH[end - start];
  if (candidates === undefined) return undefined;
  for (let c = 0; c < candidates.length; c++) {
    const { text, codes } = candidates[c]!;
    let i = 0;
    while (i < codes.length && buf[start + i] === codes[i]) i++;
    if (i === codes.length) return text;
  }
  return undefined;
}

/** Why a scan failed, and at which byte offset of the input. */
export class ScanError {
  constructor(
    readonly reason: string,
    readonly offset: number,
  ) {}
}

/** A byte as a person reads it in a scan error: the character, or its hex. */
export function describe(byte: number): string {
  if (byte >= 0x21 && byte < 0x7f) return `'${String.fromCharCode(byte)}'`;
  return `byte 0x${byte.toString(16).padStart(2, '0')}`;
}
