// The scanner with its long-run string path (dist/wire/json-scan.js) against the
// scanner before it (test/wire/reference/json-scan-be66652.js): the same verdict,
// the same reason and offset, the same recorded spans, on random and
// adversarial inputs. Long runs are what the new path handles, so the inputs
// are built from long runs with the bytes that end or break one placed
// everywhere: at word and run boundaries, at the edges of the scanned range,
// inside a larger buffer at every alignment. MCPGUARD_SCAN_DIFF_RUNS=160000
// for a longer run.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { scanJson } from '../../dist/wire/json-scan.js';
import { scanJson as referenceScan } from './reference/json-scan-be66652.js';
import { plain } from '../helpers/scan-plain.js';

const RUNS = Number(process.env.MCPGUARD_SCAN_DIFF_RUNS ?? 4000);

function same(buf, start, end) {
  const got = plain(scanJson(buf, start, end));
  const want = plain(referenceScan(buf, start, end));
  assert.deepEqual(got, want, `input (hex) ${buf.subarray(start, end).toString('hex').slice(0, 400)} range ${start}-${end} of ${buf.length}`);
}

const ascii = (n) => 'abcdefghijklmnopqrstuvwxyz0123456789 .,;:!?-_(){}[]'.repeat(Math.ceil(n / 50)).slice(0, n);
/** Pieces of a string body (raw bytes): runs, multibyte text, escapes good and bad, raw bytes that are not allowed. */
const piece = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 300 }).map((n) => Buffer.from(ascii(n))) },
  { weight: 2, arbitrary: fc.constantFrom('ü', 'é', '数据', '✓', '😀', '\u2028', 'κείμενο').map((t) => Buffer.from(t)) },
  {
    weight: 3,
    arbitrary: fc
      .constantFrom('\\n', '\\"', '\\\\', '\\/', '\\b', '\\f', '\\r', '\\t', '\\u00e9', '\\u0000', '\\uD83D\\uDE00', '\\ud83d\\ude00')
      .map((t) => Buffer.from(t)),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('\\ud800', '\\udc00', '\\ud800\\u0041', '\\ud800\\', '\\ud800\\u', '\\ud800\\udc0', '\\x', '\\u12', '\\u12g4', '\\', '\\U0041')
      .map((t) => Buffer.from(t)),
  },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 0x1f }).map((b) => Buffer.from([b])) },
  {
    weight: 1,
    arbitrary: fc.constantFrom([0x7f], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xff], [0x80], [0xe6, 0x95]).map((b) => Buffer.from(b)),
  },
  { weight: 1, arbitrary: fc.constant(Buffer.from('"')) },
);
const body = fc.array(piece, { maxLength: 12 }).map((parts) => Buffer.concat(parts));
/** A JSON text whose strings are such bodies, keys included (duplicates possible). */
const text = fc.letrec((tie) => ({
  value: fc.oneof(
    { weight: 4, arbitrary: body.map((b) => Buffer.concat([Buffer.from('"'), b, Buffer.from('"')])) },
    { weight: 1, arbitrary: fc.constantFrom('1', '-0.5e3', 'true', 'null', '0', '[]', '{}').map((t) => Buffer.from(t)) },
    {
      weight: 1,
      arbitrary: fc
        .array(tie('value'), { maxLength: 4 })
        .map((xs) => Buffer.concat([Buffer.from('['), ...xs.flatMap((x, i) => (i ? [Buffer.from(','), x] : [x])), Buffer.from(']')])),
    },
    { weight: 2, arbitrary: tie('object') },
  ),
  object: fc
    .array(
      fc.tuple(
        fc.oneof(
          body,
          fc.constantFrom('id', 'a', 'b', 'a\\u0062').map((t) => Buffer.from(t)),
        ),
        tie('value'),
      ),
      { maxLength: 5 },
    )
    .map((members) =>
      Buffer.concat([Buffer.from('{'), ...members.flatMap(([k, v], i) => [Buffer.from(i ? ',"' : '"'), k, Buffer.from('":'), v]), Buffer.from('}')]),
    ),
})).value;

/** The input placed at `offset` in a larger buffer, with `tail` after the scanned range. */
function placed(input, offset, tail) {
  const buf = Buffer.alloc(offset + input.length + tail.length, 0x20);
  input.copy(buf, offset);
  tail.copy(buf, offset + input.length);
  return buf;
}
const tails = fc.constantFrom('', '\n', '\\udc00"', '"', '\\', ' x').map((t) => Buffer.from(t));

describe("the long-run scanner gives the reference scanner's verdict", () => {
  test('random JSON texts with long runs, escapes and bad bytes, at every alignment', () => {
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 7 }), tails, (input, offset, tail) => {
        const buf = placed(input, offset, tail);
        same(buf, offset, offset + input.length);
      }),
      { numRuns: RUNS },
    );
  });

  test('the same texts cut short anywhere (truncated lines)', () => {
    fc.assert(
      fc.property(text, fc.nat(), fc.integer({ min: 0, max: 3 }), (input, cutAt, offset) => {
        const cut = input.subarray(0, cutAt % (input.length + 1));
        same(placed(cut, offset, Buffer.from('\\ud800')), offset, offset + cut.length);
      }),
      { numRuns: RUNS },
    );
  });

  test('one long string with a single special byte at every position near word and run edges', () => {
    for (const special of ['"', '\\n', '\\u0041', '\\ud800', '\\ud83d\\ude00', '\x01', '\x1f', '\\x', 'ü', '数']) {
      for (const length of [31, 32, 33, 63, 64, 65, 66, 67, 100, 257]) {
        for (let at = 0; at <= length; at += at < 8 || length - at < 8 ? 1 : 13) {
          const inner = Buffer.concat([Buffer.from(ascii(at)), Buffer.from(special), Buffer.from(ascii(length - at))]);
          for (let offset = 0; offset < 4; offset++) {
            const input = Buffer.concat([Buffer.from('{"k":"'), inner, Buffer.from('","z":1}')]);
            same(placed(input, offset, Buffer.from('\n')), offset, offset + input.length);
          }
        }
      }
    }
  });

  test('very long runs (the SIMD control-byte check): a control byte near block and slice edges', () => {
    // Runs of 1 KiB+ are checked 16 bytes at a time in 64 KiB slices copied into WebAssembly memory.
    const lengths = [1024, 1039, 1040, 4096 + 7, 65536 - 1, 65536, 65536 + 17, 140000];
    for (const length of lengths) {
      // Every position around the first slice edge: the run starts a little into the string (after the short-run loop).
      const sliceEdge = Array.from({ length: 64 }, (_, k) => 65520 + k);
      const positions = [0, 1, 15, 16, 17, 31, length >> 1, length - 17, length - 16, length - 15, length - 1, ...sliceEdge, 131071, 131072, 131100].filter(
        (at) => at >= 0 && at < length,
      );
      for (const at of positions) {
        for (const special of ['\x01', '\x1f', '\x00']) {
          for (const offset of [0, 3]) {
            const inner = Buffer.concat([Buffer.from(ascii(at)), Buffer.from(special), Buffer.from(ascii(length - at - 1))]);
            const input = Buffer.concat([Buffer.from('{"k":"'), inner, Buffer.from('","z":1}')]);
            same(placed(input, offset, Buffer.from('\n')), offset, offset + input.length);
          }
        }
      }
      const clean = Buffer.concat([Buffer.from('{"k":"'), Buffer.from(ascii(length)), Buffer.from('"}')]);
      same(clean, 0, clean.length);
      assert.equal(scanJson(clean).ok, true);
    }
  });

  test('real payloads of each kind and their corruptions', async () => {
    const { KINDS } = await import('../../bench/lib/payloads.js');
    for (const [kind, make] of Object.entries(KINDS)) {
      const good = make(64 * 1024);
      same(good, 0, good.length);
      assert.equal(scanJson(good).ok, true, kind);
      for (const at of [40, 1000, 4097, good.length - 10]) {
        for (const byte of [0x00, 0x0a, 0x1f, 0x22, 0x5c]) {
          const bad = Buffer.from(good);
          bad[at] = byte;
          same(bad, 0, bad.length);
        }
      }
    }
  });
});
