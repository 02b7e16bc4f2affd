import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { canonical } from '../../dist/records/canonical.js';

// The model: the plain recursive definition, with an explicit code-unit comparison.
// (JSON.stringify cannot be the model: JS objects enumerate integer-like keys first.)
function compareUnits(a, b) {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a.charCodeAt(i) !== b.charCodeAt(i)) return a.charCodeAt(i) - b.charCodeAt(i);
  }
  return a.length - b.length;
}
function model(value) {
  if (Array.isArray(value)) return `[${value.map(model).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value).sort(([a], [b]) => compareUnits(a, b));
    return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${model(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

test('sorts keys at every depth and writes no whitespace', () => {
  assert.equal(canonical({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } }), '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}');
});

test('orders keys by UTF-16 code units, as RFC 8785 does', () => {
  const value = { '\u20ac': 'euro', '\r': 'cr', '\ud83d\ude00': 'smile', 1: 'one', a: 'a', A: 'A' };
  assert.equal(canonical(value), '{"\\r":"cr","1":"one","A":"A","a":"a","€":"euro","😀":"smile"}');
});

test('integer-like keys sort as strings, not first as JS enumerates them', () => {
  assert.equal(canonical({ 10: 'a', 9: 'b', '': 'c', x: 'd' }), '{"":"c","10":"a","9":"b","x":"d"}');
});

test('a "__proto__" key, as JSON.parse makes it, stays an ordinary key', () => {
  const parsed = JSON.parse('{"b":{"__proto__":{"x":1}},"__proto__":2}');
  assert.equal(canonical(parsed), '{"__proto__":2,"b":{"__proto__":{"x":1}}}');
});

test('prints numbers and strings exactly as JSON.stringify does', () => {
  for (const n of [0, -0, 1, -1, 0.1, 1e21, 1e-7, 123456789012345680000, 5e-324, 1.7976931348623157e308, 0.000001, 2 ** 53]) {
    assert.equal(canonical(n), JSON.stringify(n), String(n));
  }
  assert.equal(canonical(-0), '0');
  assert.equal(canonical('quote " backslash \\ newline \n nul \0 lone \ud800 é'), JSON.stringify('quote " backslash \\ newline \n nul \0 lone \ud800 é'));
  assert.equal(canonical([true, false, null]), '[true,false,null]');
});

test('undefined members are left out and undefined elements and holes become null, like JSON.stringify', () => {
  assert.equal(canonical({ a: undefined, b: 1 }), '{"b":1}');
  // eslint-disable-next-line no-sparse-arrays
  assert.equal(canonical([undefined, , 1]), '[null,null,1]');
  assert.equal(canonical({ when: new Date(0) }), '{"when":"1970-01-01T00:00:00.000Z"}');
});

test('refuses values JSON cannot represent faithfully, naming where they are', () => {
  assert.throws(() => canonical({ a: { b: NaN } }), /\$\.a\.b is NaN/);
  assert.throws(() => canonical([Infinity]), /\$\[0\] is Infinity/);
  assert.throws(() => canonical({ n: 1n }), /bigint/);
  assert.throws(() => canonical({ f() {} }), /function/);
  assert.throws(() => canonical({ s: Symbol('x') }), /symbol/);
  assert.throws(() => canonical(undefined), /undefined/);
  const cycle = { a: {} };
  cycle.a.back = cycle;
  assert.throws(() => canonical(cycle), /refers back to itself/);
  // The same object twice is not a cycle.
  const shared = { x: 1 };
  assert.equal(canonical({ a: shared, b: [shared] }), '{"a":{"x":1},"b":[{"x":1}]}');
});

test('property: equals the model, and is a fixed point of parse', () => {
  fc.assert(fc.property(fc.jsonValue(), (value) => {
    const text = canonical(value);
    assert.equal(text, model(value));
    assert.equal(canonical(JSON.parse(text)), text);
  }), { numRuns: 500 });
});

test('property: objects with integer-like keys (the slow path) still match the model', () => {
  const key = fc.oneof(fc.string(), fc.nat().map(String), fc.constantFrom('0', '00', '01', '4294967295', '-1', '1.5'));
  const tree = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small' }, fc.jsonValue({ maxDepth: 1 }), fc.array(tie('node'), { maxLength: 3 }), fc.dictionary(key, tie('node'), { maxKeys: 4 })),
  })).node;
  fc.assert(fc.property(fc.dictionary(key, tree), (value) => {
    assert.equal(canonical(value), model(value));
  }), { numRuns: 500 });
});

test('property: insertion order of keys does not matter', () => {
  fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (object) => {
    const reversed = Object.fromEntries(Object.entries(object).reverse());
    assert.equal(canonical(reversed), canonical(object));
  }), { numRuns: 300 });
});

test('property: the seal\'s line is canonical({...seal, hash}) and a newline, hash = H(canonical(seal)); a line\'s hash is H of its bytes', async () => {
  const { sealLine, recordHash, lineHash } = await import('../../dist/records/chain.js');
  const key = fc.oneof(fc.string(), fc.constantFrom('hasg', 'hasi', 'seq', '0', '10', '__proto__', 'type'));
  fc.assert(fc.property(fc.dictionary(key.filter((k) => k !== 'hash'), fc.jsonValue()), fc.boolean(), (record, keyed) => {
    const k = keyed ? Buffer.alloc(32, 7) : undefined;
    const line = sealLine(record, k);
    const h = keyed ? createHmac('sha256', k) : createHash('sha256');
    const hash = h.update(canonical(record)).digest('hex');
    assert.equal(recordHash(record, k), hash);
    const withHash = JSON.parse(JSON.stringify(record));
    Object.defineProperty(withHash, 'hash', { value: hash, enumerable: true, writable: true, configurable: true });
    assert.equal(line, `${canonical(withHash)}\n`);
    const h2 = keyed ? createHmac('sha256', k) : createHash('sha256');
    assert.equal(lineHash(line, k), h2.update(Buffer.from(line)).digest('hex'));
    assert.equal(lineHash(Buffer.from(line), k), lineHash(line, k));
  }), { numRuns: 500 });
});

test('property: a shaped record\'s line is canonical() of the same record and a newline', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  // Field names around the chain fields in sort order, and any others.
  const name = fc.oneof(fc.string(), fc.constantFrom('call_id', 'hasg', 'hasi', 'h', 'a', '0', '10', '__proto__', 'zzz', 'pre', 'prev0', 'seqq', 'ts0', 'typ'));
  const fields = fc.uniqueArray(name.filter((k) => !['seq', 'prev', 'hash', 'ts', 'type'].includes(k)), { maxLength: 8 });
  const value = fc.oneof(fc.constant(undefined), fc.jsonValue());
  fc.assert(fc.property(fields.chain((f) => fc.tuple(fc.constant(f), fc.array(value, { minLength: f.length, maxLength: f.length }))),
    fc.string(), fc.nat(), ([names, values], type, seq) => {
      const prev = 'ab'.repeat(32);
      const ts = '2026-11-29T13:10:23.636Z';
      const shape = new RecordShape(type, names);
      const record = {};
      names.forEach((n, i) => Object.defineProperty(record, n, { value: values[i], enumerable: true, writable: true, configurable: true }));
      Object.assign(record, { type, ts, seq, prev });
      assert.equal(shape.line(values, seq, prev, ts), `${canonical(record)}\n`);
    }), { numRuns: 500 });
});

test('a record shape refuses fields the chain owns, and repeated fields', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  assert.throws(() => new RecordShape('x', ['a', 'seq']), /may not set 'seq'/);
  assert.throws(() => new RecordShape('x', ['a', 'a']), /names a field twice/);
});
