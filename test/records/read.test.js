// LineReader hands its buffer to the next reader when it closes (a view that
// streams many logs keeps one buffer, not one per log): what a closed reader
// still answers (its torn tail) and readers open at the same time must not
// see each other's bytes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { forEachLine, LineReader } from '../../dist/records/read.js';

const dir = mkdtempSync(join(tmpdir(), 'mcpguard-read-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function file(name, text) {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function all(reader) {
  const lines = [];
  for (let line = reader.next(); line !== null; line = reader.next()) lines.push(line.toString());
  return lines;
}

test('a closed reader keeps its torn tail while the next reader reuses the buffer', () => {
  const torn = file('torn.jsonl', 'a\nb\n{"cut":');
  const other = file('other.jsonl', `${'x'.repeat(5000)}\ny\n`);
  const first = new LineReader(torn);
  assert.deepEqual(all(first), ['a', 'b']);
  assert.equal(first.torn, true);
  assert.equal(first.rest.toString(), '{"cut":');
  const second = new LineReader(other);
  assert.deepEqual(all(second), ['x'.repeat(5000), 'y']);
  // Asked again after the buffer went on to `second`: the same answers.
  assert.equal(first.next(), null);
  assert.equal(first.torn, true);
  assert.equal(first.rest.toString(), '{"cut":');
});

test('readers open at the same time, and one closed early, read their own files', () => {
  const a = file('a.jsonl', 'a1\na2\na3\n');
  const b = file('b.jsonl', 'b1\nb2\n');
  const c = file('c.jsonl', 'c1\nc2\n');
  const ra = new LineReader(a);
  assert.equal(ra.next().toString(), 'a1');
  const early = new LineReader(c);
  assert.equal(early.next().toString(), 'c1');
  early.close(); // its buffer is free now; `ra` still reads from its own
  const rb = new LineReader(b);
  assert.deepEqual(all(rb), ['b1', 'b2']);
  assert.deepEqual(all(ra), ['a2', 'a3']);
  assert.equal(ra.torn, false);
});

test('nextContaining finds exactly the lines next() would, wherever lines and the needle fall against the 1 MiB buffer', () => {
  const needle = '"call_id":"c_ab';
  // A deterministic mix: short and long lines (some longer than the buffer), the needle at a line's start,
  // middle and end, lines that hold only part of it, and a torn last line that holds it.
  let seed = 7;
  const rand = (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  for (let round = 0; round < 6; round++) {
    const lines = [];
    let size = 0;
    while (size < 3.5 * (1 << 20)) {
      const kind = rand(10);
      const filler = 'x'.repeat(kind === 0 && rand(30) === 0 ? (1 << 20) + rand(300000) : rand(kind < 4 ? 40 : 3000));
      const line =
        kind % 3 === 0
          ? `${filler}${needle}${rand(2) ? filler.slice(0, 7) : ''}`
          : kind === 5
            ? `${filler}${needle.slice(0, 1 + rand(needle.length - 1))}`
            : filler;
      lines.push(line);
      size += line.length + 1;
    }
    const path = file(`needle-${round}.jsonl`, `${lines.join('\n')}\n${round % 2 ? `torn ${needle}` : ''}`);
    const expected = all(new LineReader(path)).filter((l) => l.includes(needle));
    const reader = new LineReader(path);
    const got = [];
    for (let line = reader.nextContaining(Buffer.from(needle)); line !== null; line = reader.nextContaining(Buffer.from(needle))) got.push(line.toString());
    assert.ok(expected.length > 20, 'the file has matching lines');
    assert.equal(got.length, expected.length, `round ${round}`);
    assert.ok(
      got.every((l, i) => l === expected[i]),
      `round ${round}: the same lines in the same order`,
    );
  }
});

test('forEachLine with needles visits exactly the records a line-by-line filter does, batch by batch', () => {
  const needles = ['"call_id":"c_ab', '"type":"session_end"'];
  let seed = 11;
  const rand = (n) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 8) % n;
  };
  for (let round = 0; round < 4; round++) {
    const lines = [];
    let size = 0;
    for (let n = 0; size < 3.5 * (1 << 20); n++) {
      const kind = rand(10);
      // Padding from a few bytes to past the 256 KiB read size now and then, so lines and needles fall across reads.
      const pad = 'x'.repeat(kind === 0 && rand(8) === 0 ? (256 << 10) + rand(300000) : rand(kind < 4 ? 40 : 3000));
      const record =
        kind % 3 === 0
          ? { n, call_id: `c_ab${rand(100)}`, pad }
          : kind === 5
            ? { n, pad, note: needles[0].slice(0, 1 + rand(needles[0].length - 1)) }
            : kind === 7 && rand(4) === 0
              ? { n, type: 'session_end' }
              : { n, pad };
      const line = JSON.stringify(record);
      lines.push(line);
      size += line.length + 1;
    }
    const path = file(`visit-${round}.jsonl`, `${lines.join('\n')}\n${round % 2 ? '{"n":-1,"call_id":"c_ab0"' : ''}`);
    const run = (keep) => {
      const seen = [];
      const steps = [];
      for (let offset = 0, eof = false; !eof; ) {
        ({ offset, eof } = forEachLine(path, offset, keep, (r) => seen.push(r.n)));
        steps.push([offset, eof]);
      }
      return { seen, steps };
    };
    const expected = run((line) => needles.some((needle) => line.includes(needle)));
    const got = run(needles.map((needle) => Buffer.from(needle)));
    assert.ok(expected.seen.length > 20, 'the file has matching lines');
    assert.deepEqual(got.seen, expected.seen, `round ${round}: the same records in the same order`);
    assert.deepEqual(got.steps, expected.steps, `round ${round}: the same offsets and ends, batch by batch`);
  }
});
