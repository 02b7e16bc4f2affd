// Passthrough: mirrors within its budget, never queues for a backed-up or
// closed destination, and accounts for every byte it did not mirror.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough as StreamPassThrough } from 'node:stream';
import { Passthrough, DEFAULT_PASSTHROUGH_BYTES } from '../../dist/stderr/passthrough.js';

function sink(accept = () => true) {
  const got = [];
  return {
    got,
    write: (b) => {
      const ok = accept(b);
      if (ok) got.push(Buffer.from(b));
      return ok;
    },
  };
}

test('mirrors everything under the budget and has no summary', () => {
  const s = sink();
  const p = new Passthrough({ limitBytes: 100, write: s.write });
  p.write(Buffer.from('one\n'));
  p.write(Buffer.alloc(0));
  p.write(Buffer.from('two\n'));
  assert.equal(Buffer.concat(s.got).toString(), 'one\ntwo\n');
  assert.equal(p.mirrored, 8);
  assert.equal(p.summary(), null);
  assert.equal(DEFAULT_PASSTHROUGH_BYTES, 1048576);
});

test('exact budget boundaries: limit - 1, limit, limit + 1', () => {
  for (const [n, suppressed] of [
    [9, 0],
    [10, 0],
    [11, 1],
  ]) {
    const s = sink();
    const p = new Passthrough({ limitBytes: 10, write: s.write });
    p.write(Buffer.alloc(n, 0x61));
    assert.equal(p.mirrored, n - suppressed);
    assert.equal(p.suppressed, suppressed);
    assert.equal(p.summary(), suppressed ? 'mcpguard: suppressed 1 bytes of child stderr (passthrough budget 10 bytes)' : null);
  }
});

test('the last mirrored chunk is cut after a newline, and nothing is mirrored after the budget', () => {
  const s = sink();
  const p = new Passthrough({ limitBytes: 20, write: s.write });
  p.write(Buffer.from('line one\nline two is long\n'));
  p.write(Buffer.from('x\n'));
  assert.equal(Buffer.concat(s.got).toString(), 'line one\n');
  assert.equal(p.mirrored + p.suppressed, 28);
  assert.equal(p.summary(), 'mcpguard: suppressed 19 bytes of child stderr (passthrough budget 20 bytes)');
});

test('a backed-up destination: drop and count until resume, never queue', () => {
  let full = false;
  const s = sink(() => !full);
  const p = new Passthrough({ limitBytes: 1 << 20, write: s.write });
  p.write(Buffer.from('a\n'));
  full = true;
  p.write(Buffer.from('b\n'));
  full = false;
  p.write(Buffer.from('c\n'));
  assert.equal(Buffer.concat(s.got).toString(), 'a\n');
  p.resume();
  p.write(Buffer.from('d\n'));
  assert.equal(Buffer.concat(s.got).toString(), 'a\nd\n');
  assert.equal(p.dropped, 4);
  assert.equal(
    p.summary(),
    'mcpguard: suppressed 4 bytes of child stderr (passthrough budget 1048576 bytes; 4 dropped while the destination was backed up or closed)',
  );
});

test('a throwing destination closes the mirror; later writes are counted', () => {
  let calls = 0;
  const p = new Passthrough({
    write: () => {
      calls++;
      throw Object.assign(new Error('EPIPE'), { code: 'EPIPE' });
    },
  });
  p.write(Buffer.from('x'));
  p.resume();
  p.write(Buffer.from('yz'));
  assert.equal(calls, 1);
  assert.equal(p.dropped, 3);
});

test('a never-read stream: a flood through stream.write stays bounded', () => {
  // highWaterMark 64 KiB and nobody reads: write() returns false once it is full.
  const dest = new StreamPassThrough({ highWaterMark: 65536 });
  const p = new Passthrough({ limitBytes: 1 << 30, write: (b) => dest.write(b) });
  const chunk = Buffer.alloc(65536, 0x61);
  for (let i = 0; i < 1000; i++) p.write(chunk);
  assert.ok(dest.writableLength <= 2 * 65536, `${dest.writableLength}`);
  assert.equal(p.mirrored + p.dropped, 1000 * 65536);
  assert.ok(p.dropped >= 998 * 65536);
});

test('rejects a limit that is not a byte count', () => {
  assert.throws(() => new Passthrough({ limitBytes: -5, write: () => true }), /passthrough limit/);
});
