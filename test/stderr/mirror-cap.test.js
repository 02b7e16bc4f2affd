// The mirror's notice when its budget is first spent (Passthrough onCapReached):
// once, right after the last bytes that fit, and never in the way of the drain.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Passthrough } from '../../dist/stderr/passthrough.js';

function recorder() {
  const events = [];
  return {
    events,
    write: (b) => {
      events.push(`bytes ${b.toString()}`);
      return true;
    },
    onCapReached: (limit) => events.push(`cap ${limit}`),
  };
}

test('the cap is announced once, after the last mirrored bytes, not before', () => {
  const r = recorder();
  const p = new Passthrough({ limitBytes: 10, ...r });
  p.write(Buffer.from('1234\n'));
  p.write(Buffer.from('678\n'));
  assert.deepEqual(r.events, ['bytes 1234\n', 'bytes 678\n'], 'under the cap: no notice');
  p.write(Buffer.from('ab\ncd\n'));
  p.write(Buffer.from('more\n'));
  p.write(Buffer.from('and more\n'));
  // One byte of room and no newline in it: cut exactly at the cap.
  assert.deepEqual(r.events, ['bytes 1234\n', 'bytes 678\n', 'bytes a', 'cap 10']);
  assert.equal(p.mirrored, 10);
  assert.equal(p.overBudget, 5 + 5 + 9);
});

test('exactly at the cap is not over it: the notice comes with the first byte that does not fit', () => {
  const r = recorder();
  const p = new Passthrough({ limitBytes: 4, ...r });
  p.write(Buffer.from('abc\n'));
  assert.deepEqual(r.events, ['bytes abc\n']);
  p.write(Buffer.from('x'));
  assert.deepEqual(r.events, ['bytes abc\n', 'cap 4']);
});

test('a cut chunk is mirrored up to its last newline that fits, then the notice', () => {
  const r = recorder();
  const p = new Passthrough({ limitBytes: 8, ...r });
  p.write(Buffer.from('ab\ncd\nefgh\n'));
  assert.deepEqual(r.events, ['bytes ab\ncd\n', 'cap 8']);
});

test('a notice that throws does not stop the mirror from counting', () => {
  const p = new Passthrough({
    limitBytes: 2,
    write: () => true,
    onCapReached: () => {
      throw new Error('boom');
    },
  });
  p.write(Buffer.from('abcdef'));
  p.write(Buffer.from('gh'));
  assert.equal(p.mirrored, 2);
  assert.equal(p.overBudget, 6);
});
