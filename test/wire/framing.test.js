// LineSplitter (dist/wire/framing.js): the cap at exactly max and max + 1, overflow
// as a value, `\r\n` kept in the frame, partial lines at EOF, and one byte
// stream fed in random slices (cuts inside multibyte characters included)
// giving exactly the events of feeding it whole.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { JoinPool, LineSplitter, OVERSIZE_HEAD_BYTES, POOL_KEEP_BYTES, POOLED_MIN_BYTES } from '../../dist/wire/framing.js';

/** Feed `chunks` then end; return the events with every buffer copied (frames may be views). */
function split(maxBytes, chunks, { end = true } = {}) {
  const events = [];
  const splitter = new LineSplitter(maxBytes, (e) => {
    const copy = { ...e };
    for (const key of ['frame', 'head', 'bytes']) if (Buffer.isBuffer(e[key])) copy[key] = Buffer.from(e[key]);
    events.push(copy);
  });
  for (const c of chunks) splitter.push(Buffer.from(c));
  if (end) splitter.end();
  return { events, lines: splitter.lines };
}

/** Events as plain, comparable values (buffers as hex so a diff shows bytes). */
const plain = (events) =>
  events.map((e) => {
    const out = { ...e };
    for (const key of ['frame', 'head', 'bytes']) if (Buffer.isBuffer(e[key])) out[key] = e[key].toString('hex');
    return out;
  });

const line = (n, text) => ({ kind: 'line', line: n, frame: Buffer.from(text) });

describe('LineSplitter: the cap', () => {
  const MAX = 10;

  test('a line of exactly the cap is a line; cap + 1 is oversize (bytes exclude the newline)', () => {
    const { events } = split(MAX, ['0123456789\n', '0123456789A\n']);
    assert.deepEqual(plain(events), plain([line(1, '0123456789\n'), { kind: 'oversize', line: 2, bytes: 11, head: Buffer.from('0123456789A'), atEof: false }]));
  });

  test('the same, fed one byte at a time (the cap is checked while buffering, not only at the newline)', () => {
    const bytes = [...Buffer.from('0123456789\n0123456789A\n')].map((b) => [b]);
    const { events } = split(MAX, bytes);
    assert.deepEqual(plain(events), plain([line(1, '0123456789\n'), { kind: 'oversize', line: 2, bytes: 11, head: Buffer.from('0123456789A'), atEof: false }]));
  });

  test('an oversize line, then a normal line: the normal line is unaffected', () => {
    const big = 'x'.repeat(1000);
    const { events, lines } = split(MAX, [`${big.slice(0, 300)}`, `${big.slice(300)}\n{"a":1}\n`]);
    assert.deepEqual(
      plain(events),
      plain([{ kind: 'oversize', line: 1, bytes: 1000, head: Buffer.from(big.slice(0, OVERSIZE_HEAD_BYTES)), atEof: false }, line(2, '{"a":1}\n')]),
    );
    assert.equal(lines, 2);
  });

  test('an oversize line is not buffered past the cap: the head is bounded whatever the line length', () => {
    const head = [];
    const splitter = new LineSplitter(64, (e) => head.push(e));
    for (let i = 0; i < 1000; i++) splitter.push(Buffer.alloc(1024, 0x61));
    splitter.push(Buffer.from('\n'));
    assert.equal(head.length, 1);
    assert.equal(head[0].kind, 'oversize');
    assert.equal(head[0].bytes, 1024 * 1000);
    assert.equal(head[0].head.length, OVERSIZE_HEAD_BYTES);
  });

  test('an oversize line still open at EOF is reported once, atEof', () => {
    const { events } = split(MAX, ['ok\n', '0123456789ABC']);
    assert.deepEqual(plain(events), plain([line(1, 'ok\n'), { kind: 'oversize', line: 2, bytes: 13, head: Buffer.from('0123456789ABC'), atEof: true }]));
  });
});

describe('LineSplitter: line ends', () => {
  test('a partial line at EOF is reported with its bytes and line number', () => {
    const { events } = split(100, ['{"a":1}\n{"b"', ':2']);
    assert.deepEqual(plain(events), plain([line(1, '{"a":1}\n'), { kind: 'partial', line: 2, bytes: Buffer.from('{"b":2') }]));
  });

  test('nothing after the last newline: no partial event', () => {
    const { events } = split(100, ['a\n', 'b\n']);
    assert.deepEqual(plain(events), plain([line(1, 'a\n'), line(2, 'b\n')]));
  });

  test('\\r\\n: the \\r stays inside the frame (split on \\n only)', () => {
    const { events } = split(100, ['{"a":1}\r\n', '\r\n', 'x\ry\n']);
    assert.deepEqual(plain(events), plain([line(1, '{"a":1}\r\n'), line(2, '\r\n'), line(3, 'x\ry\n')]));
  });

  test('empty lines are lines (and count)', () => {
    const { events, lines } = split(100, ['\n\n', '\n']);
    assert.deepEqual(plain(events), plain([line(1, '\n'), line(2, '\n'), line(3, '\n')]));
    assert.equal(lines, 3);
  });

  test('a \\r counts toward the cap', () => {
    const { events } = split(3, ['abc\r\n']);
    assert.equal(events[0].kind, 'oversize');
    assert.equal(events[0].bytes, 4);
  });
});

describe('LineSplitter: random splits give the same events as one chunk', () => {
  const CAP = 600;
  // Multibyte characters (2, 3 and 4 bytes in UTF-8), lines under, at and over the cap, `\r\n`, an empty line, a partial tail.
  const pieces = [
    '{"jsonrpc":"2.0","id":1,"method":"echo","params":{"text":"café é € 😀"}}',
    `{"s":"${'é€😀'.repeat(40)}"}`,
    '',
    `${'€'.repeat(Math.floor(CAP / 3))}`,
    `${'€'.repeat(Math.floor(CAP / 3))}a`,
    `😀${'x'.repeat(2000)}😀`,
    'x\r',
    `{"tail":"😀${'ü'.repeat(100)}"}`,
  ];
  const STREAM = Buffer.from(`${pieces.join('\n')}\n${'😀é'.repeat(30)}`);
  const WHOLE = plain(split(CAP, [STREAM]).events);

  test('the reference run has every kind of event', () => {
    assert.deepEqual(
      WHOLE.map((e) => e.kind),
      ['line', 'line', 'line', 'line', 'oversize', 'oversize', 'line', 'line', 'partial'],
    );
    assert.equal(Buffer.byteLength('€'.repeat(Math.floor(CAP / 3))), CAP, 'a line of exactly the cap');
  });

  test('every two-piece split', () => {
    for (let i = 0; i <= STREAM.length; i++) {
      assert.deepEqual(plain(split(CAP, [STREAM.subarray(0, i), STREAM.subarray(i)]).events), WHOLE, `cut at ${i}`);
    }
  });

  test('random 1..N byte slices (fast-check)', () => {
    let cutsInsideCharacters = 0;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 50 }), (sizes) => {
        const chunks = [];
        for (let at = 0, k = 0; at < STREAM.length; k++) {
          const size = sizes[k % sizes.length];
          chunks.push(STREAM.subarray(at, at + size));
          at += size;
          if (at < STREAM.length && (STREAM[at] & 0xc0) === 0x80) cutsInsideCharacters++;
        }
        assert.deepEqual(plain(split(CAP, chunks).events), WHOLE);
      }),
      { numRuns: 300 },
    );
    assert.ok(cutsInsideCharacters > 100, `cuts inside multibyte characters: ${cutsInsideCharacters}`);
  });

  // Regression: the head used to stop growing at the chunk where the overflow was noticed.
  test('the oversize head does not depend on chunking, also with a cap below OVERSIZE_HEAD_BYTES', () => {
    const whole = split(3, ['abcdef\n']).events;
    const cut = split(3, ['ab', 'cd', 'ef\n']).events;
    assert.equal(whole[0].head.toString(), 'abcdef');
    assert.equal(cut[0].head.toString(), 'abcdef');
  });

  test('random streams and random slices (fast-check)', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 40 });
    const streamArb = fc
      .array(
        fc.oneof(
          text,
          text.map((t) => t.repeat(20)),
          fc.constantFrom('\n', '\r\n', '\n\n'),
        ),
        { maxLength: 30 },
      )
      .map((parts) => Buffer.from(parts.join('')));
    fc.assert(
      fc.property(
        streamArb,
        fc.integer({ min: 1, max: 300 }),
        fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 20 }),
        (stream, cap, sizes) => {
          const whole = plain(split(cap, [stream]).events);
          const chunks = [];
          for (let at = 0, k = 0; at < stream.length; k++) {
            chunks.push(stream.subarray(at, at + sizes[k % sizes.length]));
            at += sizes[k % sizes.length];
          }
          assert.deepEqual(plain(split(cap, chunks).events), whole);
          // And the model: split on \n; a line is a frame iff it fits the cap.
          const model = [];
          let start = 0;
          let n = 0;
          for (let nl = stream.indexOf(10); nl !== -1; start = nl + 1, nl = stream.indexOf(10, start)) {
            n++;
            const len = nl - start;
            model.push(
              len <= cap
                ? { kind: 'line', line: n, frame: stream.subarray(start, nl + 1) }
                : { kind: 'oversize', line: n, bytes: len, head: stream.subarray(start, start + Math.min(len, OVERSIZE_HEAD_BYTES)), atEof: false },
            );
          }
          if (start < stream.length) {
            const len = stream.length - start;
            model.push(
              len <= cap
                ? { kind: 'partial', line: n + 1, bytes: stream.subarray(start) }
                : { kind: 'oversize', line: n + 1, bytes: len, head: stream.subarray(start, start + Math.min(len, OVERSIZE_HEAD_BYTES)), atEof: true },
            );
          }
          assert.deepEqual(whole, plain(model));
        },
      ),
      { numRuns: 500 },
    );
  });
});

test('a gate held mid-chunk defers the rest of the read; resume and end deliver it in order, once', () => {
  const gate = { held: false };
  const seen = [];
  const splitter = new LineSplitter(
    1024,
    (e) => {
      seen.push(e.kind === 'line' ? e.frame.toString() : `${e.kind}:${e.bytes}`);
      if (seen.length === 2) gate.held = true; // the consumer's queue filled after line 2
    },
    gate,
  );
  splitter.push(Buffer.from('a\nb\nc\nd\ne\n'));
  assert.deepEqual(seen, ['a\n', 'b\n'], 'nothing after the gate closed');
  splitter.push(Buffer.from('f\npart')); // a read that was already on its way waits behind the deferred bytes
  assert.deepEqual(seen, ['a\n', 'b\n']);
  gate.held = false;
  assert.equal(splitter.resume(), true);
  assert.deepEqual(seen, ['a\n', 'b\n', 'c\n', 'd\n', 'e\n', 'f\n']);
  gate.held = true;
  splitter.push(Buffer.from('-tail\ng\nh\n'));
  assert.deepEqual(seen.slice(6), ['part-tail\n'], 'one line, then the gate holds again');
  splitter.end(); // end of stream delivers what waits, gate or not
  assert.deepEqual(seen.slice(7), ['g\n', 'h\n']);
});

test('with a gate toggled at random, the lines and their order are those of an ungated splitter', () => {
  fc.assert(
    fc.property(fc.array(fc.stringMatching(/^[a-z\n]{0,40}$/), { maxLength: 12 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 50 }), (pieces, flips) => {
      const plain = [];
      const ungated = new LineSplitter(64, (e) => plain.push(JSON.stringify(e.kind === 'line' ? e.frame.toString() : e)));
      for (const p of pieces) ungated.push(Buffer.from(p));
      ungated.end();
      const gated = [];
      const gate = { held: false };
      let i = 0;
      const splitter = new LineSplitter(
        64,
        (e) => {
          gated.push(JSON.stringify(e.kind === 'line' ? e.frame.toString() : e));
          gate.held = flips[i++ % flips.length];
        },
        gate,
      );
      for (const p of pieces) {
        splitter.push(Buffer.from(p));
        if (gate.held && flips[i++ % flips.length]) {
          gate.held = false;
          splitter.resume();
        }
      }
      splitter.end();
      assert.deepEqual(gated, plain);
    }),
    { numRuns: 500 },
  );
});

describe('JoinPool: buffers of joined frames, reused after their write, capped', () => {
  test('a released buffer is handed out again for the next large frame; small frames are not pooled', () => {
    const pool = new JoinPool();
    const a = pool.take(1_000_000);
    assert.equal(a.length, 1_000_000);
    pool.release(a);
    assert.ok(pool.keptBytes >= 1_000_000);
    const b = pool.take(1_000_100);
    assert.equal(b.length, 1_000_100);
    assert.equal(b.buffer, a.buffer, 'the kept buffer was not reused');
    assert.equal(pool.keptBytes, 0);
    const small = pool.take(POOLED_MIN_BYTES - 1);
    assert.equal(pool.owns(small), false);
  });

  test('only frames it lent, once each; a foreign buffer or a view of a frame is ignored', () => {
    const pool = new JoinPool();
    const a = pool.take(200_000);
    pool.release(a.subarray(0, 100));
    pool.release(Buffer.alloc(200_000));
    assert.equal(pool.keptBytes, 0);
    pool.release(a);
    const kept = pool.keptBytes;
    pool.release(a);
    assert.equal(pool.keptBytes, kept, 'a frame released twice was kept twice');
  });

  test('a 16 MiB frame is not kept, and what is kept stays under the cap', () => {
    const pool = new JoinPool();
    const huge = pool.take(16 * 1024 * 1024);
    pool.release(huge);
    assert.equal(pool.keptBytes, 0);
    const frames = Array.from({ length: 12 }, () => pool.take(900_000));
    for (const f of frames) pool.release(f);
    assert.ok(pool.keptBytes > 0 && pool.keptBytes <= POOL_KEEP_BYTES, `kept ${pool.keptBytes}`);
  });

  test('the splitter joins a frame spread over reads into a pooled buffer, and its bytes are the line', () => {
    const pool = new JoinPool();
    const frames = [];
    const splitter = new LineSplitter(4 * 1024 * 1024, (e) => frames.push(e.frame), null, pool);
    const line = Buffer.concat([Buffer.alloc(300_000, 0x61), Buffer.from('\n')]);
    for (let at = 0; at < line.length; at += 65536) splitter.push(line.subarray(at, at + 65536));
    assert.equal(frames.length, 1);
    assert.ok(pool.owns(frames[0]));
    assert.deepEqual(frames[0], line);
  });
});
