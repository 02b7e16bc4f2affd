// Payloads for the scanner rows: one JSON-RPC line (no trailing \n) per kind,
// each about `size` bytes, built deterministically (the same bytes every run).
import { readFileSync } from 'node:fs';
import { ROOT } from './variants.js';

const wrap = (resultJson) => Buffer.from(`{"jsonrpc":"2.0","id":7,"result":${resultJson}}`);
const textResult = (text) => wrap(JSON.stringify({ content: [{ type: 'text', text }], isError: false }));

/** A deterministic stream of pseudo-random integers (xorshift32). */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

function repeatTo(size, piece) {
  return piece.repeat(Math.max(1, Math.ceil(size / Buffer.byteLength(piece))));
}

export const KINDS = {
  /** One long string of printable ASCII, no escapes. */
  'long ASCII string': (size) => {
    const r = rng(1);
    let s = '';
    while (s.length < size) s += String.fromCharCode(0x20 + r(0x5e)).replace(/["\\]/, 'x');
    return textResult(s);
  },
  /** Prose in several scripts: 2-, 3- and 4-byte UTF-8 sequences, no escapes. */
  'multibyte text': (size) => textResult(repeatTo(size, 'Größe über café — 数据处理 ✓ данные κείμενο 🙂 テキスト نص ')),
  /** Rows of small objects with short keys and small values (walked, not recorded): structured results. */
  'many small keys': (size) => {
    const rows = [];
    let bytes = 0;
    for (let i = 0; bytes < size; i++) {
      const row = `{"id":${i},"name":"item ${i % 97}","ok":${i % 2 === 0},"score":${(i % 1000) / 10},"tags":["a","b"]}`;
      rows.push(row);
      bytes += row.length + 1;
    }
    return wrap(`{"content":[{"type":"text","text":"x"}],"structuredContent":{"rows":[${rows.join(',')}]}}`);
  },
  /** A string where escapes are every few bytes: quotes, newlines, tabs, \u escapes, surrogate pairs. */
  'dense escapes': (size) => textResult(repeatTo(size / 2, 'a"b\nc\td\\e\u0001f\u2028g😀h')),
  /** Source code as a JSON string: mostly ASCII, a newline every line, quotes and backslashes here and there. */
  'source code as JSON': (size) => textResult(repeatTo(size, readFileSync(`${ROOT}src/wire/json-scan.ts`, 'utf8'))),
};

/** The payload of `kind`, about `size` bytes. */
export function payload(kind, size) {
  return KINDS[kind](size);
}
