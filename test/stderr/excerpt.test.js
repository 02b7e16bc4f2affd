// renderExcerpt: the marker, the label, character boundaries at every cut,
// and the byte budget of the whole string.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ByteRing } from '../../dist/stderr/ring.js';
import { renderExcerpt, CAPTURED_LABEL } from '../../dist/stderr/excerpt.js';

function snap(mode, cap, ...chunks) {
  const ring = new ByteRing(cap, mode);
  for (const c of chunks) ring.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return ring.snapshot();
}
const ALL = { maxBytes: Infinity, label: false };

test('tail marker is exactly the documented form', () => {
  const lines = Buffer.from('connection retry failed: remote side closed the channel\n'.repeat(4000)).subarray(0, 184320);
  const text = renderExcerpt(snap('tail', 16384, lines), ALL);
  const [first] = text.split('\n', 1);
  assert.equal(first, '[stderr truncated: kept last 16384 of 184320 bytes]');
  assert.equal(text.length, first.length + 1 + 16384);
});

test('label comes first, then the marker', () => {
  const text = renderExcerpt(snap('tail', 4, 'abcdefgh'), { maxBytes: Infinity, label: true });
  assert.equal(text, `${CAPTURED_LABEL}\n[stderr truncated: kept last 4 of 8 bytes]\nefgh`);
});

test('head marker', () => {
  assert.equal(renderExcerpt(snap('head', 4, 'abcdefgh'), ALL), '[stderr truncated: kept first 4 of 8 bytes]\nabcd');
});

test('head+tail marker states both parts and the omitted count, with an omission line between', () => {
  assert.equal(
    renderExcerpt(snap('head+tail', 8, 'usage: x\n', 'noise '.repeat(10), 'fatal\n'), ALL),
    '[stderr truncated: kept first 4 and last 4 of 75 bytes, omitted 67]\nusag\n[... 67 bytes omitted ...]\ntal\n',
  );
});

test('nothing missing: no marker, head and tail joined', () => {
  assert.equal(renderExcerpt(snap('tail', 100, 'all of it\n'), ALL), 'all of it\n');
  assert.equal(renderExcerpt(snap('head+tail', 10, 'abcdefghij'), ALL), 'abcdefghij');
  // A character spanning the head/tail split of a full, uncut ring stays whole.
  assert.equal(renderExcerpt(snap('head+tail', 8, 'abc日de'), ALL), 'abc日de');
});

test('empty input', () => {
  assert.equal(renderExcerpt(snap('tail', 16, ''), ALL), '');
  assert.equal(renderExcerpt(snap('tail', 16, ''), { maxBytes: 100, label: true }), `${CAPTURED_LABEL}\n`);
  assert.equal(renderExcerpt(snap('tail', 0, 'abc'), ALL), '[stderr truncated: kept last 0 of 3 bytes]\n');
});

test('a tail that starts inside a multibyte character skips to the next character and says so', () => {
  for (const ch of ['é', '日', '\u{1F600}']) {
    const size = Buffer.byteLength(ch);
    for (let into = 1; into < size; into++) {
      // Keep `into`... bytes of the character's end, then 'ok'.
      const ring = snap('tail', size - into + 2, 'x' + ch + 'ok');
      const text = renderExcerpt(ring, ALL);
      assert.equal(text, `[stderr truncated: kept last 2 of ${size + 3} bytes]\nok`, `${ch} ${into}`);
      assert.ok(!text.includes('\ufffd'));
    }
  }
});

test('a head that ends inside a multibyte character stops before it', () => {
  for (const ch of ['é', '日', '\u{1F600}']) {
    const size = Buffer.byteLength(ch);
    for (let into = 1; into < size; into++) {
      const text = renderExcerpt(snap('head', 2 + into, 'ok' + ch + 'x'), ALL);
      assert.equal(text, `[stderr truncated: kept first 2 of ${size + 3} bytes]\nok`);
    }
  }
});

test('invalid UTF-8 decodes with replacement and still fits the budget', () => {
  const bad = Buffer.alloc(5000, 0xff);
  const s = snap('tail', 4096, bad);
  const text = renderExcerpt(s, { maxBytes: 1000, label: true });
  assert.ok(Buffer.byteLength(text) <= 1000, `${Buffer.byteLength(text)}`);
  const [label, mark, body] = text.split('\n');
  assert.equal(label, CAPTURED_LABEL);
  const kept = Number(/kept last (\d+) of 5000 bytes/.exec(mark)[1]);
  assert.equal(body, '\ufffd'.repeat(kept));
  // The true start of a stream is not a cut: a stray continuation byte there is shown.
  assert.equal(renderExcerpt(snap('tail', 10, Buffer.from([0x80, 0x41])), ALL), '\ufffdA');
});

test('an agent excerpt is cut from the retained bytes to maxBytes, marker included', () => {
  const s = snap('tail', 16384, Buffer.from('x'.repeat(20000) + 'the error\n'));
  const text = renderExcerpt(s, { maxBytes: 4096, label: true });
  assert.ok(Buffer.byteLength(text) <= 4096);
  assert.ok(text.endsWith('the error\n'));
  const m = /\[stderr truncated: kept last (\d+) of 20010 bytes\]/.exec(text);
  assert.ok(m);
  assert.equal(Buffer.byteLength(text), CAPTURED_LABEL.length + 1 + m[0].length + 1 + Number(m[1]));
});

test('a ring cut by the process budget says so', () => {
  const ring = new ByteRing(100, 'tail');
  ring.push(Buffer.alloc(100, 0x61));
  ring.limit(10);
  assert.equal(renderExcerpt(ring.snapshot(), ALL), '[stderr truncated: kept last 10 of 100 bytes (process budget)]\n' + 'a'.repeat(10));
});

test("any input, mode and budget: within maxBytes, counts add up, shown bytes are the stream's", () => {
  const bytes = fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b));
  const text = fc.string({ unit: 'grapheme', maxLength: 100 }).map((s) => Buffer.from(s));
  fc.assert(
    fc.property(
      fc.constantFrom('tail', 'head', 'head+tail'),
      fc.nat(200),
      fc.array(fc.oneof(bytes, text), { maxLength: 5 }),
      fc.integer({ min: 150, max: 600 }),
      fc.boolean(),
      (mode, cap, chunks, maxBytes, label) => {
        const s = snap(mode, cap, ...chunks);
        const out = renderExcerpt(s, { maxBytes, label });
        assert.ok(Buffer.byteLength(out) <= maxBytes, `${Buffer.byteLength(out)} > ${maxBytes}`);
        const stream = Buffer.concat(chunks);
        const body = label ? out.slice(CAPTURED_LABEL.length + 1) : out;
        if (!body.startsWith('[stderr truncated: ')) {
          assert.equal(body, stream.toString('utf8'));
          return;
        }
        const nl = body.indexOf('\n');
        const mark = body.slice(0, nl);
        const rest = body.slice(nl + 1);
        const nums = mark.match(/\d+/g).map(Number);
        if (mode === 'tail') {
          const [keep, seen] = nums;
          assert.equal(seen, stream.length);
          assert.equal(rest, stream.subarray(stream.length - keep).toString('utf8'));
          // Starting on a continuation byte is allowed only for a stray one (3 skipped before it).
          const at = stream.length - keep;
          if (keep > 0 && (stream[at] & 0xc0) === 0x80) {
            for (let k = at - 3; k < at; k++) assert.equal(stream[k] & 0xc0, 0x80);
          }
        } else if (mode === 'head') {
          const [keep, seen] = nums;
          assert.equal(seen, stream.length);
          assert.equal(rest, stream.subarray(0, keep).toString('utf8'));
        } else {
          const [h, t, seen, omitted] = nums;
          assert.equal(seen, stream.length);
          assert.equal(h + t + omitted, seen);
          const head = stream.subarray(0, h).toString('utf8');
          const tail = stream.subarray(stream.length - t).toString('utf8');
          const sep = head.length > 0 && !head.endsWith('\n') ? '\n' : '';
          assert.equal(rest, `${head}${sep}[... ${omitted} bytes omitted ...]\n${tail}`);
        }
      },
    ),
    { numRuns: 3000 },
  );
});

test('characters split across pushes and across the ring cut render whole or not at all', () => {
  const text = 'début 日本語 fin \u{1F600}\n'.repeat(20);
  const bytes = Buffer.from(text);
  for (let cap = 1; cap < 60; cap++) {
    const ring = new ByteRing(cap, 'tail');
    for (let i = 0; i < bytes.length; i += 5) ring.push(bytes.subarray(i, i + 5));
    const out = renderExcerpt(ring.snapshot(), ALL);
    assert.ok(!out.includes('\ufffd'), `cap ${cap}: ${out}`);
    const body = out.slice(out.indexOf('\n') + 1);
    assert.ok(text.endsWith(body));
  }
});
