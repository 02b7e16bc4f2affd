// Scanning a large frame while it arrives (src/wire/json-prescan.ts): whatever the
// split points, the verdict on the whole frame must be the reference
// scanner's (test/wire/reference/json-scan-be66652.js): same verdict, reason,
// offset and recorded spans. The pre-scan only notes long strings it found
// valid; these tests feed it the frame in random pieces (through FramePrescan
// directly and through the LineSplitter that the session uses), then scan.
// MCPGUARD_SCAN_DIFF_RUNS=160000 for a longer run.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { isUtf8 } from 'node:buffer';
import { knownUtf8, scanJson, HINTED_MIN_BYTES } from '../../dist/wire/json-scan.js';
import { FramePrescan, HINT_MIN_BYTES } from '../../dist/wire/json-prescan.js';
import { JoinPool, LineSplitter, ASSEMBLE_MIN_BYTES } from '../../dist/wire/framing.js';
import { sliceEdges } from '../../dist/wire/wasm/string-body.js';
import { scanJson as referenceScan } from './reference/json-scan-be66652.js';
import { plain } from '../helpers/scan-plain.js';

const RUNS = Number(process.env.MCPGUARD_SCAN_DIFF_RUNS ?? 1500);

/** The frame's verdict (scanned as classifyFrame does: without its newline) equals the reference's. */
function same(frame, label) {
  const end = frame.length - 1;
  // Never "known valid UTF-8" unless it is (such a claim would let an invalid frame through).
  assert.ok(!knownUtf8(frame) || isUtf8(frame), `${label}: known as UTF-8 but is not`);
  assert.deepEqual(plain(scanJson(frame, 0, end)), plain(referenceScan(frame, 0, end)), `${label}: input (hex) ${frame.subarray(0, 300).toString('hex')}…`);
}

const ascii = (n) => 'abcdefghijklmnopqrstuvwxyz0123456789 .,;:!?-_(){}[]'.repeat(Math.ceil(n / 50)).slice(0, n);
const piece = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 300 }).map((n) => Buffer.from(ascii(n))) },
  { weight: 2, arbitrary: fc.integer({ min: 900, max: 3000 }).map((n) => Buffer.from(ascii(n))) },
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
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: 0, max: 0x1f })
      .filter((b) => b !== 0x0a)
      .map((b) => Buffer.from([b])),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom([0x7f], [0xe6, 0x95], [0xff], [0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf0, 0x9f, 0x98]).map((b) => Buffer.from(b)),
  },
  { weight: 1, arbitrary: fc.constant(Buffer.from('"')) },
);
const body = fc.array(piece, { maxLength: 10 }).map((parts) => Buffer.concat(parts));
const text = fc.letrec((tie) => ({
  value: fc.oneof(
    { weight: 4, arbitrary: body.map((b) => Buffer.concat([Buffer.from('"'), b, Buffer.from('"')])) },
    { weight: 1, arbitrary: fc.constantFrom('1', '-0.5e3', 'true', 'null', '0', '[]', '{}', '"', '\\"', 'x').map((t) => Buffer.from(t)) },
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

/** A frame large enough to be pre-scanned and looked up: a message whose `params` hold the text, a long string before and after it. */
function frameOf(input, padBefore, padAfter) {
  return Buffer.concat([
    Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"pad":"${ascii(padBefore)}","v":`),
    input,
    Buffer.from(`,"z":"${ascii(padAfter)}"}}\n`),
  ]);
}

/** Sorted, distinct cut points inside [1, length) from random numbers. */
function cutsOf(length, picks) {
  return [...new Set(picks.map((p) => 1 + (p % Math.max(1, length - 1))))].sort((a, b) => a - b);
}

/** Feed `frame` (newline included) to a FramePrescan in pieces ending at `cuts`, assembled in a buffer that grows (as the splitter's does). */
function prescanInPieces(frame, cuts, simd = true) {
  const pre = new FramePrescan({ simd });
  const lineBytes = frame.length - 1;
  let buf = Buffer.alloc(64);
  for (const cut of [...cuts.filter((c) => c < lineBytes), lineBytes]) {
    if (cut > buf.length) {
      const grown = Buffer.alloc(Math.max(cut, 2 * buf.length), 0x22); // stale quotes past the bytes must not matter
      buf.copy(grown);
      buf = grown;
    }
    frame.copy(buf, 0, 0, cut);
    pre.advance(buf, cut);
  }
  const whole = Buffer.from(frame);
  pre.finish(whole);
  // Checked while arriving: found valid exactly when it is.
  assert.equal(knownUtf8(whole), isUtf8(whole), 'UTF-8 found while arriving');
  return whole;
}

const paddings = fc.tuple(fc.integer({ min: 0, max: 20000 }), fc.integer({ min: 0, max: 4000 }));
const picks = fc.array(fc.nat(), { minLength: 1, maxLength: 40 });

test('the SIMD string check is available here (otherwise half of these tests test the fallback twice)', async () => {
  const { stringBodyCheck } = await import('../../dist/wire/wasm/string-body.js');
  assert.notEqual(stringBodyCheck(), null);
});

for (const simd of [true, false])
  describe(`the pre-scan never changes a verdict, whatever the split points (${simd ? 'SIMD string check' : "the scanner's string loop"})`, () => {
    test("random frames cut at random points give the reference scanner's verdict", () => {
      fc.assert(
        fc.property(text, paddings, picks, (input, [before, after], cutPicks) => {
          const frame = frameOf(input, before + HINTED_MIN_BYTES, after);
          const whole = prescanInPieces(frame, cutsOf(frame.length, cutPicks), simd);
          same(whole, 'pre-scanned');
        }),
        { numRuns: RUNS },
      );
    });

    test('truncated and corrupted frames, cut everywhere near the corruption', () => {
      fc.assert(
        fc.property(text, fc.nat(), fc.integer({ min: 0, max: 0xff }), picks, (input, at, byte, cutPicks) => {
          const frame = frameOf(input, HINTED_MIN_BYTES + 100, 2000);
          const bad = Buffer.from(frame);
          const where = at % (bad.length - 1);
          bad[where] = byte === 0x0a ? 0x0b : byte;
          // Cuts right around the changed byte: an escape or a quote split across reads.
          const near = [where - 6, where - 1, where, where + 1, where + 6].filter((c) => c > 0 && c < bad.length - 1);
          same(
            prescanInPieces(
              bad,
              [...new Set([...cutsOf(bad.length, cutPicks), ...near])].sort((a, b) => a - b),
              simd,
            ),
            'corrupted',
          );
        }),
        { numRuns: RUNS },
      );
    });

    test('every split point inside and around escapes at the end of a long string', () => {
      for (const tail of ['\\n', '\\u00e9', '\\ud83d\\ude00', '\\ud800\\u0041', '\\ud800"', '\\udc00', '\\u12g4', '\\x', '\x01', '"', '\\']) {
        const inner = ascii(HINT_MIN_BYTES + 50) + tail + ascii(40);
        const frame = Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"m","params":{"pad":"${ascii(HINTED_MIN_BYTES)}","s":"${inner}"}}\n`);
        const start = frame.indexOf(tail, 100);
        for (let cut = start - 2; cut <= start + tail.length + 2; cut++)
          same(prescanInPieces(frame, [cut], simd), `tail ${JSON.stringify(tail)} cut at ${cut}`);
      }
    });

    test('escapes and bad bytes across the slices the string check copies, in one read', () => {
      // The check copies a string's bytes into its module in slices that start small and double up to 64 KiB.
      const near = sliceEdges(1, 70_000)
        .filter((_edge, i, all) => i < 2 || i === all.length - 1)
        .flatMap((edge) => Array.from({ length: 40 }, (_, d) => edge - 20 + d));
      for (const special of ['\\ud83d\\ude00', '\\u00e9', '\\n', '\\ud800\\u0041', '\\x', '\x01']) {
        for (const at of [...near, 65530, 65536]) {
          const inner = ascii(at) + special + ascii(70000 - at);
          const frame = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":{"t":"${inner}"}}\n`);
          same(prescanInPieces(frame, [], simd), `${JSON.stringify(special)} at ${at}`);
          same(prescanInPieces(frame, [frame.indexOf(special, at) + 1], simd), `${JSON.stringify(special)} at ${at}, cut inside`);
        }
      }
    });

    test('UTF-8 valid or not in the last bytes before the newline, cut at every point near the end', () => {
      for (const tail of [[0xff], [0xe6, 0x95], [0xc3], [0x80], [0xf0, 0x9f, 0x98, 0x80], [0xc3, 0xa9], [0x22, 0x7d, 0xe6]]) {
        const frame = Buffer.concat([
          Buffer.from(`{"jsonrpc":"2.0","id":1,"result":{"t":"${ascii(HINTED_MIN_BYTES + 3000)}"}}`),
          Buffer.from(tail),
          Buffer.from('\n'),
        ]);
        for (let cut = frame.length - 8; cut < frame.length; cut++) same(prescanInPieces(frame, [cut], simd), `tail ${tail} cut at ${cut}`);
      }
    });

    test('the pre-scan is used: a byte changed inside a noted string after the pre-scan goes unseen', () => {
      // Not a property of mcpguard (frames never change after their pre-scan), but proof that the
      // hints above were consulted, so the tests above could fail.
      const frame = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":{"text":"${ascii(HINTED_MIN_BYTES + 5000)}"}}\n`);
      const whole = prescanInPieces(frame, [1000, 9000, 17000], simd);
      whole[5000] = 0x01;
      assert.equal(scanJson(whole, 0, whole.length - 1).ok, true);
      assert.equal(referenceScan(whole, 0, whole.length - 1).ok, false);
    });

    test('hints are not used for a smaller range that ends inside a noted string', () => {
      const frame = Buffer.from(`{"jsonrpc":"2.0","id":1,"result":{"text":"${ascii(HINTED_MIN_BYTES + 5000)}","n":1}}\n`);
      const whole = prescanInPieces(frame, [3000, 12000], simd);
      const textAt = whole.indexOf('"text":') + 7;
      for (const end of [textAt + 20000, whole.length - 12]) same(Buffer.concat([whole.subarray(0, end), Buffer.from('\n')]), `cut at ${end}`);
      const cut = scanJson(whole, textAt, textAt + 20000);
      assert.deepEqual(plain(cut), plain(referenceScan(whole, textAt, textAt + 20000)));
    });
  });

describe('the line splitter with a pre-scan hands out the same frames', () => {
  test('several large and small lines in random reads: same frames, same verdicts', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(text, fc.integer({ min: 0, max: 3 * ASSEMBLE_MIN_BYTES })), { minLength: 1, maxLength: 4 }), picks, (items, cutPicks) => {
        const frames = items.map(([input, pad]) => frameOf(input, pad, 10));
        const stream = Buffer.concat(frames);
        const got = [];
        const splitter = new LineSplitter(1 << 24, (event) => got.push(event), null, new JoinPool(), new FramePrescan());
        let from = 0;
        for (const cut of [...cutsOf(stream.length, cutPicks), stream.length]) {
          splitter.push(stream.subarray(from, cut));
          from = cut;
        }
        splitter.end();
        const lines = frames.filter((f) => !f.subarray(0, -1).includes(10));
        // Lines are split on every \n, also one a generated text carries; compare against a plain split.
        const plainSplit = [];
        let at = 0;
        for (let nl = stream.indexOf(10); nl !== -1; nl = stream.indexOf(10, at)) {
          plainSplit.push(stream.subarray(at, nl + 1));
          at = nl + 1;
        }
        assert.equal(got.length, plainSplit.length, `${lines.length} lines`);
        got.forEach((event, i) => {
          assert.equal(event.kind, 'line');
          assert.ok(event.frame.equals(plainSplit[i]), `frame ${i}`);
          same(event.frame, `frame ${i}`);
        });
      }),
      { numRuns: Math.ceil(RUNS / 5) },
    );
  });

  test('an oversize line while assembling: reported with its first bytes, and the next line is intact', () => {
    const got = [];
    const pool = new JoinPool();
    const splitter = new LineSplitter(200_000, (event) => got.push(event), null, pool, new FramePrescan());
    const big = Buffer.from(`{"s":"${ascii(300_000)}"}\n`);
    const next = Buffer.from(`{"jsonrpc":"2.0","id":2,"result":{"t":"${ascii(150_000)}"}}\n`);
    const stream = Buffer.concat([big, next]);
    for (let at = 0; at < stream.length; at += 65536) splitter.push(stream.subarray(at, Math.min(stream.length, at + 65536)));
    assert.deepEqual(
      got.map((e) => e.kind),
      ['oversize', 'line'],
    );
    assert.equal(got[0].bytes, big.length - 1);
    assert.ok(got[0].head.equals(big.subarray(0, got[0].head.length)));
    assert.ok(got[1].frame.equals(next));
    same(got[1].frame, 'after oversize');
  });

  test('a large partial line at end of stream is reported whole', () => {
    const got = [];
    const splitter = new LineSplitter(1 << 24, (event) => got.push(event), null, new JoinPool(), new FramePrescan());
    const partial = Buffer.from(`{"s":"${ascii(200_000)}"`);
    for (let at = 0; at < partial.length; at += 65536) splitter.push(partial.subarray(at, Math.min(partial.length, at + 65536)));
    splitter.end();
    assert.equal(got.length, 1);
    assert.equal(got[0].kind, 'partial');
    assert.ok(got[0].bytes.equals(partial));
  });
});
