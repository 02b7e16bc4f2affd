// LineReader hands its buffer to the next reader when it closes (a view that
// streams many logs keeps one buffer, not one per log): what a closed reader
// still answers (its torn tail) and readers open at the same time must not
// see each other's bytes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LineReader } from '../../dist/records/read.js';

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
