// ByteRing against its model: head = the first bytes, tail = the last bytes of
// everything pushed, within a capacity that limit() only ever lowers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ByteRing } from '../../dist/stderr/ring.js';

const MODES = ['tail', 'head', 'head+tail'];

/** What a ring with this capacity history must hold for this stream. */
function model(mode, cap, stream) {
  const hc = mode === 'tail' ? 0 : mode === 'head' ? cap : Math.floor(cap / 2);
  const tc = cap - hc;
  const head = stream.subarray(0, Math.min(hc, stream.length));
  const tailLen = Math.min(tc, stream.length - head.length);
  const tail = stream.subarray(stream.length - tailLen);
  return { head, tail, omitted: stream.length - head.length - tail.length };
}

const op = fc.oneof(
  { weight: 5, arbitrary: fc.uint8Array({ maxLength: 48 }).map((b) => ({ push: Buffer.from(b) })) },
  { weight: 1, arbitrary: fc.nat(40).map((n) => ({ limit: n })) },
);

test('matches the model for every mode, push sizes and limits', () => {
  fc.assert(
    fc.property(fc.constantFrom(...MODES), fc.nat(40), fc.array(op, { maxLength: 40 }), (mode, capacity, ops) => {
      const ring = new ByteRing(capacity, mode);
      let cap = capacity;
      let stream = Buffer.alloc(0);
      let evicted = 0;
      for (const o of ops) {
        if (o.push) {
          ring.push(o.push);
          stream = Buffer.concat([stream, o.push]);
        } else {
          const before = model(mode, cap, stream);
          cap = Math.min(cap, o.limit);
          const after = model(mode, cap, stream);
          const freed = ring.limit(o.limit);
          const expected = before.head.length + before.tail.length - after.head.length - after.tail.length;
          assert.equal(freed, expected);
          evicted += expected;
        }
        const m = model(mode, cap, stream);
        const s = ring.snapshot();
        assert.deepEqual(s.head, m.head);
        assert.deepEqual(s.tail, m.tail);
        assert.equal(s.omitted, m.omitted);
        assert.equal(s.seen, stream.length);
        assert.equal(s.evicted, evicted);
        assert.equal(ring.seen, stream.length);
        assert.equal(ring.retained, m.head.length + m.tail.length);
        assert.equal(ring.truncated, m.omitted > 0);
        assert.ok(ring.retained <= ring.capacity);
      }
    }),
    { numRuns: 2000 },
  );
});

test('tail mode keeps exactly the last N bytes of the concatenated input', () => {
  fc.assert(
    fc.property(fc.nat(64), fc.array(fc.uint8Array({ maxLength: 100 }), { maxLength: 30 }), (cap, chunks) => {
      const ring = new ByteRing(cap, 'tail');
      for (const c of chunks) ring.push(Buffer.from(c));
      const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
      assert.deepEqual(ring.snapshot().tail, all.subarray(Math.max(0, all.length - cap)));
    }),
  );
});

test('head mode keeps exactly the first N bytes of the concatenated input', () => {
  fc.assert(
    fc.property(fc.nat(64), fc.array(fc.uint8Array({ maxLength: 100 }), { maxLength: 30 }), (cap, chunks) => {
      const ring = new ByteRing(cap, 'head');
      for (const c of chunks) ring.push(Buffer.from(c));
      const all = Buffer.concat(chunks.map((c) => Buffer.from(c)));
      assert.deepEqual(ring.snapshot().head, all.subarray(0, cap));
    }),
  );
});

test('capacity 0 keeps nothing and counts everything', () => {
  for (const mode of MODES) {
    const ring = new ByteRing(0, mode);
    ring.push(Buffer.from('abc'));
    ring.push(Buffer.alloc(0));
    ring.push(Buffer.from('de'));
    const s = ring.snapshot();
    assert.equal(s.head.length + s.tail.length, 0);
    assert.equal(s.omitted, 5);
    assert.equal(ring.seen, 5);
    assert.equal(ring.truncated, true);
  }
});

test('boundaries: capacity - 1, capacity, capacity + 1', () => {
  for (const mode of MODES) {
    for (const [n, truncated] of [
      [15, false],
      [16, false],
      [17, true],
    ]) {
      const ring = new ByteRing(16, mode);
      ring.push(Buffer.alloc(n, 0x61));
      assert.equal(ring.truncated, truncated, `${mode} ${n}`);
      assert.equal(ring.retained, Math.min(n, 16));
    }
  }
});

test('seen stays exact past 4 GiB', () => {
  const ring = new ByteRing(1024, 'head+tail');
  const big = Buffer.alloc(64 * 1024 * 1024, 0x78);
  for (let i = 0; i < 65; i++) ring.push(big);
  ring.push(Buffer.from('!'));
  assert.equal(ring.seen, 65 * 64 * 1024 * 1024 + 1);
  assert.ok(ring.seen > 2 ** 32);
  const s = ring.snapshot();
  assert.equal(s.omitted, ring.seen - 1024);
  assert.equal(s.tail.at(-1), 0x21);
});

test('a snapshot is a copy: later pushes do not change it', () => {
  const ring = new ByteRing(4, 'tail');
  ring.push(Buffer.from('abcd'));
  const s = ring.snapshot();
  ring.push(Buffer.from('wxyz'));
  assert.equal(s.tail.toString(), 'abcd');
  assert.equal(ring.snapshot().tail.toString(), 'wxyz');
});

test('clear forgets bytes and counters and restores the capacity', () => {
  const ring = new ByteRing(8, 'tail');
  ring.push(Buffer.from('0123456789'));
  ring.limit(2);
  ring.clear();
  assert.equal(ring.seen, 0);
  assert.equal(ring.retained, 0);
  assert.equal(ring.evicted, 0);
  assert.equal(ring.capacity, 8);
  ring.push(Buffer.from('abcdefghij'));
  assert.equal(ring.snapshot().tail.toString(), 'cdefghij');
});

test('rejects a capacity that is not a byte count', () => {
  assert.throws(() => new ByteRing(-1), RangeError);
  assert.throws(() => new ByteRing(1.5), RangeError);
  assert.throws(() => new ByteRing(NaN), RangeError);
});
