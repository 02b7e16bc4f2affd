// The session tail's stretches (stretches.ts): where each part of the tail's
// text lies in the session's stderr stream, bounded however many gaps between
// calls a session has, never cutting a character.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { StderrTap } from '../../dist/stderr/tap.js';
import { MAX_TAIL_STRETCHES } from '../../dist/stderr/stretches.js';

const tap = (callBytes, retain = 'tail') =>
  new StderrTap({ callBytes, processBytes: 1 << 20, excerptBytes: 4096, retain, passthroughBytes: null }, {}, () => true);

/** The tail's text as the entries describe it: after the label and the marker. */
function body(summary) {
  const text = summary.tail.replace(/^\[captured stderr\]\n/, '');
  return summary.tail_truncated ? text.slice(text.indexOf('\n') + 1) : text;
}

test('every stretch of ASCII text lies exactly where the entries say, in any retention, within the bound', () => {
  const chunk = fc.record({ text: fc.stringMatching(/^[a-e\n]{1,40}$/), inCall: fc.boolean() });
  fc.assert(
    fc.property(fc.array(chunk, { maxLength: 400 }), fc.integer({ min: 8, max: 600 }), fc.constantFrom('tail', 'head', 'head+tail'), (chunks, cap, retain) => {
      const t = tap(cap, retain);
      let stream = '';
      chunks.forEach((c, i) => {
        t.write(Buffer.from(c.text), c.inCall ? [`c${i}`] : []);
        stream += c.text;
      });
      t.end();
      const s = t.summary();
      if (s.tail_bytes_seen === 0) return assert.equal(s.tail_stretches, undefined);
      const entries = s.tail_stretches;
      assert.ok(entries.length <= MAX_TAIL_STRETCHES + 1);
      const text = body(s);
      let at = 0;
      let last = -1;
      for (const e of entries) {
        const piece = text.slice(at, at + e.bytes);
        at += e.bytes;
        if ('omitted' in e) {
          assert.match(piece, /^\n?\[\.\.\. \d+ bytes omitted \.\.\.\]\n$/);
          continue;
        }
        assert.ok(e.start > last && e.end > e.start, JSON.stringify(entries));
        last = e.start;
        // Exact: the bytes of the stream; merged: all of them within [start, end), in order.
        if (e.merged) assert.ok(stream.slice(e.start, e.end).length >= e.bytes);
        else assert.equal(piece, stream.slice(e.start, e.end));
      }
      assert.equal(at, Buffer.byteLength(text), 'the entries cover the text');
    }),
    { numRuns: 300 },
  );
});

test('thousands of gaps between calls: at most MAX_TAIL_STRETCHES entries, the closest merged, the record a few KB', () => {
  const t = tap(1 << 20);
  for (let i = 0; i < 5000; i++) {
    t.write(Buffer.from(`idle ${i}\n`), []);
    t.write(Buffer.from('x'.repeat(1 + (i % 97))), [`c${i}`]);
  }
  t.end();
  const s = t.summary();
  // Merged down to half the bound whenever it is passed.
  assert.ok(s.tail_stretches.length <= MAX_TAIL_STRETCHES && s.tail_stretches.length >= MAX_TAIL_STRETCHES / 2, `${s.tail_stretches.length}`);
  assert.ok(s.tail_stretches.some((e) => e.merged));
  assert.equal(
    s.tail_stretches.reduce((n, e) => n + e.bytes, 0),
    Buffer.byteLength(body(s)),
  );
  assert.ok(JSON.stringify(s.tail_stretches).length < 8 * 1024, `${JSON.stringify(s.tail_stretches).length} bytes`);
});

test('a character split by a call between two stretches goes whole with the first; invalid UTF-8 leaves the tail unplaced', () => {
  const t = tap(1000);
  t.write(Buffer.from('ok \xe2\x82', 'latin1'), []);
  t.write(Buffer.from('in the call\n'), ['a']);
  t.write(Buffer.from('\xac!\n', 'latin1'), []);
  t.end();
  const s = t.summary();
  assert.equal(body(s), 'ok €!\n');
  assert.deepEqual(s.tail_stretches, [
    { start: 0, end: 5, bytes: 6 },
    { start: 18, end: 20, bytes: 2 },
  ]);
  const bad = tap(1000);
  bad.write(Buffer.from([0x61, 0xff, 0x0a]), []);
  bad.end();
  assert.equal(bad.summary().tail_stretches, null);
});

test('a secret split across the start of a call is masked before the stream is counted: no stretch holds a part of it', () => {
  const secret = 'Zq7vN2kLp9xR4tW8mB3cY6hJ1dF5gS0a';
  const t = new StderrTap(
    { callBytes: 4096, processBytes: 1 << 20, excerptBytes: 4096, retain: 'tail', passthroughBytes: null },
    { SERVICE_API_TOKEN: secret },
    () => true,
  );
  t.write(Buffer.from(`boot token=${secret.slice(0, 16)}`), []);
  const call = { callId: 'a' };
  t.write(Buffer.from(`${secret.slice(16)} ok\n`), ['a']);
  t.write(Buffer.from('after\n'), []);
  t.end();
  t.callEnded(call);
  const s = t.summary();
  const texts = [s.tail, call.stderr.text];
  for (let i = 0; i + 6 <= secret.length; i++) for (const text of texts) assert.ok(!text.includes(secret.slice(i, i + 6)), `${text} holds part of the secret`);
  assert.equal(
    s.tail_stretches.reduce((n, e) => n + e.bytes, 0),
    Buffer.byteLength(body(s)),
  );
  assert.equal(s.tail_stretches.length, 2);
});
