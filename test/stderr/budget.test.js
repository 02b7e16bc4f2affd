// StderrStore: attribution to calls and the session, and one process budget
// over all rings that is never exceeded once write returns.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { StderrStore } from '../../dist/stderr/budget.js';

const fill = (n, c = 0x78) => Buffer.alloc(n, c);
const kept = (s) => (s ? s.head.length + s.tail.length : 0);

test('bytes count to every call in flight, or to the session when none is', () => {
  const store = new StderrStore();
  store.write(Buffer.from('banner\n'), []);
  store.openCall('a');
  store.write(Buffer.from('a only\n'), ['a']);
  store.write(Buffer.from('both\n'), ['a', 'b']);
  const a = store.closeCall('a');
  const b = store.closeCall('b');
  // Each call's stretch of the stream ends where its last byte does: a is [7, 19), b [14, 19).
  assert.deepEqual(a, { seen: 12, retained: 12, truncated: false, shared: true, evicted: 0, end: 19 });
  assert.deepEqual(b, { seen: 5, retained: 5, truncated: false, shared: true, evicted: 0, end: 19 });
  assert.equal(store.sessionSnapshot().tail.toString(), 'banner\n');
  assert.equal(store.callSnapshot('a').tail.toString(), 'a only\nboth\n');
  assert.equal(store.seen, 19, 'each chunk counts once in the total');
  assert.equal(store.retained, 7 + 12 + 5);
  store.releaseCall('a');
  store.releaseCall('b');
  assert.equal(store.retained, 7);
  assert.equal(store.callSnapshot('a'), undefined);
  assert.deepEqual(store.closeCall('never'), { seen: 0, retained: 0, truncated: false, shared: false, evicted: 0, end: null });
});

test('a call alone in flight is not shared', () => {
  const store = new StderrStore();
  store.write(Buffer.from('x'), ['solo']);
  assert.equal(store.closeCall('solo').shared, false);
});

test("per-call cap: the marker counts are the ring's, exact at cap - 1, cap, cap + 1", () => {
  for (const [n, truncated] of [
    [16383, false],
    [16384, false],
    [16385, true],
  ]) {
    const store = new StderrStore();
    store.write(fill(n), ['c']);
    const stats = store.closeCall('c');
    assert.deepEqual(stats, { seen: n, retained: Math.min(n, 16384), truncated, shared: false, evicted: 0, end: n });
  }
});

test('process budget: exact at budget - 1, budget, budget + 1', () => {
  const budget = 1000;
  for (const [n, retained, evicted] of [
    [999, 999, 0],
    [1000, 1000, 0],
    [1001, 1000, 1],
  ]) {
    const store = new StderrStore({ callBytes: 4096, processBytes: budget });
    store.write(fill(n), ['c']);
    assert.equal(store.retained, retained);
    const stats = store.closeCall('c');
    assert.equal(stats.retained, retained);
    assert.equal(stats.evicted, evicted);
    assert.equal(stats.truncated, n > budget);
  }
});

test('one write longer than the whole budget keeps its last bytes', () => {
  const store = new StderrStore({ callBytes: 1 << 20, processBytes: 1000 });
  const chunk = Buffer.concat([fill(5000, 0x61), Buffer.from('the end\n')]);
  store.write(chunk, ['c']);
  assert.equal(store.retained, 1000);
  const s = store.callSnapshot('c');
  assert.equal(s.tail.length, 1000);
  assert.ok(s.tail.toString().endsWith('the end\n'));
  assert.equal(s.seen, 5008);
  store.write(chunk, []);
  assert.ok(store.retained <= 1000);
});

test('50 concurrent calls, each flooded: the total never exceeds the process budget', () => {
  const store = new StderrStore();
  const ids = Array.from({ length: 50 }, (_, i) => `call-${i}`);
  for (const id of ids) store.openCall(id);
  const chunk = fill(65536);
  let total = 0;
  for (let round = 0; round < 20; round++) {
    // Every call floods on its own, then all of them at once.
    for (const id of ids) {
      store.write(chunk, [id]);
      total += chunk.length;
      assert.ok(store.retained <= 262144, `${store.retained}`);
    }
    store.write(chunk, ids);
    total += chunk.length;
    assert.ok(store.retained <= 262144, `${store.retained}`);
  }
  assert.equal(store.seen, total);
  let sum = 0;
  for (const id of ids) {
    const stats = store.closeCall(id);
    assert.equal(stats.seen, 40 * 65536);
    assert.ok(stats.truncated && stats.shared);
    sum += stats.retained;
  }
  assert.equal(sum, store.retained);
  assert.ok(sum > 262144 - 50, 'the budget is used, not wasted');
});

test('eviction order: ended calls, then running calls (largest first), then the session', () => {
  const store = new StderrStore({ callBytes: 200, sessionBytes: 400, processBytes: 300 });
  store.write(fill(100), []);
  store.write(fill(150), ['ended']);
  store.closeCall('ended');
  store.write(fill(200), ['big']);
  // 100 + 150 + 200 = 450: the ended call gives up its 150 first.
  assert.equal(store.closeCall('ended').retained, 0);
  assert.equal(store.callSnapshot('big').tail.length, 200);
  assert.equal(store.sessionSnapshot().tail.length, 100);
  store.write(fill(100), ['big', 'small']);
  // 100 + 200 + 100 = 400: the largest running call is cut to the level of the next.
  assert.equal(kept(store.callSnapshot('big')), 100);
  assert.equal(kept(store.callSnapshot('small')), 100);
  assert.equal(kept(store.sessionSnapshot()), 100);
  store.write(fill(400), []);
  // The session ring (400) plus calls (200) = 600: calls go to 0 before the session is cut.
  assert.equal(kept(store.callSnapshot('big')), 0);
  assert.equal(kept(store.callSnapshot('small')), 0);
  assert.equal(kept(store.sessionSnapshot()), 300);
  assert.equal(store.retained, 300);
  assert.equal(store.sessionSnapshot().evicted, 100);
});

test("a flooding call cannot push a quiet call's lines out", () => {
  const store = new StderrStore({ callBytes: 16384, processBytes: 20000 });
  store.write(Buffer.from('quiet: the one useful line\n'), ['quiet']);
  for (let i = 0; i < 10; i++) store.write(fill(65536), ['loud']);
  store.write(fill(8192), ['other']);
  assert.equal(store.callSnapshot('quiet').tail.toString(), 'quiet: the one useful line\n');
  assert.ok(store.retained <= 20000);
});

test('a cut running call keeps its cut capacity: it does not refill and churn', () => {
  const store = new StderrStore({ callBytes: 1000, processBytes: 1500 });
  store.write(fill(1000), ['a', 'b']);
  assert.equal(store.retained, 1500);
  store.write(fill(1000), ['a', 'b']);
  assert.equal(store.retained, 1500);
  assert.equal(store.closeCall('a').evicted, 250);
});

test('reusing an ended call id starts a new call', () => {
  const store = new StderrStore();
  store.write(Buffer.from('first'), ['x']);
  store.closeCall('x');
  store.openCall('x');
  store.write(Buffer.from('second'), ['x']);
  assert.equal(store.callSnapshot('x').tail.toString(), 'second');
  assert.equal(store.retained, 6);
});

test('random operations: attribution is exact and the budget always holds', () => {
  const op = fc.oneof(
    fc.record({ write: fc.nat(3000), calls: fc.subarray(['a', 'b', 'c', 'd', 'e']) }),
    fc.record({ close: fc.constantFrom('a', 'b', 'c', 'd', 'e') }),
    fc.record({ release: fc.constantFrom('a', 'b', 'c', 'd', 'e') }),
  );
  fc.assert(
    fc.property(
      fc.nat(2000),
      fc.nat(4000),
      fc.constantFrom('tail', 'head', 'head+tail'),
      fc.array(op, { maxLength: 60 }),
      (callBytes, processBytes, retain, ops) => {
        const store = new StderrStore({ callBytes, processBytes, retain });
        const seen = new Map();
        const live = new Set();
        for (const o of ops) {
          if ('write' in o) {
            store.write(fill(o.write), o.calls);
            // An empty chunk is ignored: it opens no call.
            for (const id of o.write === 0 ? [] : o.calls) {
              if (!live.has(id)) seen.set(id, 0);
              live.add(id);
              seen.set(id, seen.get(id) + o.write);
            }
            assert.ok(store.retained <= processBytes);
          } else if ('close' in o) {
            const stats = store.closeCall(o.close);
            assert.equal(stats.seen, live.has(o.close) || seen.has(o.close) ? (seen.get(o.close) ?? 0) : 0);
            assert.ok(stats.retained <= callBytes);
            live.delete(o.close);
          } else {
            store.releaseCall(o.release);
            live.delete(o.release);
            seen.delete(o.release);
          }
          let sum = kept(store.sessionSnapshot());
          for (const id of ['a', 'b', 'c', 'd', 'e']) sum += kept(store.callSnapshot(id));
          assert.equal(store.retained, sum);
        }
      },
    ),
    { numRuns: 1000 },
  );
});

test('rejects budgets that are not byte counts', () => {
  assert.throws(() => new StderrStore({ callBytes: -1 }), /callBytes/);
  assert.throws(() => new StderrStore({ processBytes: 1.5 }), /processBytes/);
});
