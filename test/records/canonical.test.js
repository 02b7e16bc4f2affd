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
  // biome-ignore lint/suspicious/noSparseArray: a hole, on purpose
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
  fc.assert(
    fc.property(fc.jsonValue(), (value) => {
      const text = canonical(value);
      assert.equal(text, model(value));
      assert.equal(canonical(JSON.parse(text)), text);
    }),
    { numRuns: 500 },
  );
});

test('property: objects with integer-like keys (the slow path) still match the model', () => {
  const key = fc.oneof(fc.string(), fc.nat().map(String), fc.constantFrom('0', '00', '01', '4294967295', '-1', '1.5'));
  const tree = fc.letrec((tie) => ({
    node: fc.oneof(
      { depthSize: 'small' },
      fc.jsonValue({ maxDepth: 1 }),
      fc.array(tie('node'), { maxLength: 3 }),
      fc.dictionary(key, tie('node'), { maxKeys: 4 }),
    ),
  })).node;
  fc.assert(
    fc.property(fc.dictionary(key, tree), (value) => {
      assert.equal(canonical(value), model(value));
    }),
    { numRuns: 500 },
  );
});

test('property: insertion order of keys does not matter', () => {
  fc.assert(
    fc.property(fc.dictionary(fc.string(), fc.jsonValue()), (object) => {
      const reversed = Object.fromEntries(Object.entries(object).reverse());
      assert.equal(canonical(reversed), canonical(object));
    }),
    { numRuns: 300 },
  );
});

test("property: the seal's line is canonical({...seal, hash}) and a newline, hash = H(canonical(seal)); a line's hash is H of its bytes", async () => {
  const { sealLine, recordHash, lineHash } = await import('../../dist/records/chain.js');
  const key = fc.oneof(fc.string(), fc.constantFrom('hasg', 'hasi', 'seq', '0', '10', '__proto__', 'type'));
  fc.assert(
    fc.property(
      fc.dictionary(
        key.filter((k) => k !== 'hash'),
        fc.jsonValue(),
      ),
      fc.boolean(),
      (record, keyed) => {
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
      },
    ),
    { numRuns: 500 },
  );
});

test("property: a shaped record's line is canonical() of the same record and a newline", async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  // Field names around the chain fields in sort order, and any others.
  const name = fc.oneof(fc.string(), fc.constantFrom('call_id', 'hasg', 'hasi', 'h', 'a', '0', '10', '__proto__', 'zzz', 'pre', 'prev0', 'seqq', 'ts0', 'typ'));
  const fields = fc.uniqueArray(
    name.filter((k) => !['seq', 'prev', 'hash', 'ts', 'type'].includes(k)),
    { maxLength: 8 },
  );
  const value = fc.oneof(fc.constant(undefined), fc.jsonValue());
  fc.assert(
    fc.property(
      fields.chain((f) => fc.tuple(fc.constant(f), fc.array(value, { minLength: f.length, maxLength: f.length }))),
      fc.string(),
      fc.nat(),
      ([names, values], type, seq) => {
        const prev = 'ab'.repeat(32);
        const ts = '2026-11-29T13:10:23.636Z';
        const shape = new RecordShape(type, names);
        const record = {};
        names.forEach((n, i) => {
          Object.defineProperty(record, n, { value: values[i], enumerable: true, writable: true, configurable: true });
        });
        Object.assign(record, { type, ts, seq, prev });
        assert.equal(shape.line(values, seq, prev, ts), `${canonical(record)}\n`);
      },
    ),
    { numRuns: 500 },
  );
});

test('a record shape refuses fields the chain owns, and repeated fields', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  assert.throws(() => new RecordShape('x', ['a', 'seq']), /may not set 'seq'/);
  assert.throws(() => new RecordShape('x', ['a', 'a']), /names a field twice/);
});

test('property: a shaped record written into the line buffer is canonical() of the record, for any text and nesting', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  // Any UTF-16 text (lone surrogates, control characters, quotes, backslashes), nested to any depth, plus -0 and big numbers.
  const text = fc.string({ unit: 'binary' });
  const leaf = fc.oneof(
    text,
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    fc.constantFrom(-0, 1e21, 2 ** 53, -(2 ** 53) - 2, 0.1),
    fc.boolean(),
    fc.constant(null),
  );
  const { tree } = fc.letrec((tie) => ({
    tree: fc.oneof(
      { depthSize: 'small' },
      leaf,
      fc.array(fc.oneof(tie('tree'), fc.constant(undefined))),
      fc.dictionary(fc.oneof(text, fc.constantFrom('__proto__', '0', '10', 'toJSON')), fc.oneof(tie('tree'), fc.constant(undefined))),
    ),
  }));
  fc.assert(
    fc.property(fc.array(fc.oneof(tree, fc.constant(undefined)), { minLength: 3, maxLength: 3 }), text, fc.nat(), (values, type, seq) => {
      const names = ['a', 'b', 'z'];
      const shape = new RecordShape(type, names);
      const prev = 'cd'.repeat(32);
      const ts = '2026-11-30T23:54:20.024Z';
      const record = {};
      names.forEach((n, i) => {
        Object.defineProperty(record, n, { value: values[i], enumerable: true, writable: true, configurable: true });
      });
      Object.assign(record, { type, ts, seq, prev });
      let expected;
      try {
        expected = `${canonical(record)}\n`;
      } catch (error) {
        // What canonical() refuses, the line refuses too.
        assert.throws(() => shape.line(values, seq, prev, ts), { message: error.message });
        return;
      }
      assert.equal(shape.line(values, seq, prev, ts), expected);
    }),
    { numRuns: 1000 },
  );
});

test('a shaped record: objects with toJSON, class instances and cycles take canonical(), and a throw leaves nothing half-written', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  const { LineBuffer } = await import('../../dist/records/line-buffer.js');
  const shape = new RecordShape('t', ['v']);
  const prev = 'ef'.repeat(32);
  const ts = '2026-11-30T23:54:20.024Z';
  class Point {
    constructor() {
      this.y = 2;
      this.x = 1;
    }
  }
  const withToJson = { b: 1, toJSON: () => ({ z: [1, { y: 'x' }], a: null }) };
  const inherited = Object.create({ toJSON: () => 'from the prototype' });
  const hidden = Object.defineProperty({ a: 1 }, 'toJSON', { value: () => 'hidden toJSON', enumerable: false });
  for (const value of [
    new Point(),
    withToJson,
    inherited,
    hidden,
    { h: hidden },
    { nested: withToJson },
    [withToJson],
    { a: { b: { c: { d: { e: { f: 'deep' } } } } } },
  ]) {
    assert.equal(shape.line([value], 1, prev, ts), `${canonical({ v: value, type: 't', ts, seq: 1, prev })}\n`);
  }
  const cycle = { a: 1 };
  cycle.self = cycle;
  const out = new LineBuffer();
  out.ascii('kept');
  for (const bad of [cycle, { n: Number.NaN }, [1, Infinity], { f: () => 1 }, 10n]) {
    assert.throws(() => shape.write(out, [bad], 1, prev, ts), TypeError);
    assert.equal(out.bytes.toString('latin1', 0, out.length), 'kept', 'a refused value leaves the buffer as it was');
  }
});

test('property: times in ms are written as toISOString() spells them', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  const shape = new RecordShape('t', ['at', 'n'], ['at']);
  const prev = '01'.repeat(32);
  const edges = [
    0, 1, 999, 86_399_999, 86_400_000, 951_782_400_000, 951_868_799_999, 4_107_542_400_000, 253_402_300_799_999, 253_402_300_800_000, -1, -62_198_755_200_000,
  ];
  const ms = fc.oneof(fc.constantFrom(...edges), fc.integer({ min: 0, max: 253_402_300_799_999 }), fc.integer({ min: -8.64e15, max: 8.64e15 }));
  fc.assert(
    fc.property(ms, fc.oneof(ms, fc.constant(null)), (ts, at) => {
      const iso = (t) => new Date(t).toISOString();
      const expected = `${canonical({ at: at === null ? null : iso(at), n: 7, type: 't', ts: iso(ts), seq: 3, prev })}\n`;
      assert.equal(shape.line([at, 7], 3, prev, ts), expected);
    }),
    { numRuns: 3000 },
  );
  // A field not named as a time keeps its number.
  assert.match(shape.line([null, 1_700_000_000_000], 0, prev, 0), /"n":1700000000000/);
});

test('property: a shape writing record after record (members repeating, changing, left out) writes each line as canonical() of its record', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  const { LineBuffer } = await import('../../dist/records/line-buffer.js');
  const { lineDigest } = await import('../../dist/records/chain.js');
  // Few values, so members repeat from one line to the next (the shape then copies the bytes it wrote last): 0 and -0,
  // strings that need escaping, one past the bytes a member keeps, objects (never kept), times in ms and as text.
  const long = 'x'.repeat(70);
  const value = fc.oneof(
    fc.constantFrom(null, true, false, 0, -0, 1, 12, 1.5, 'completed', 'a"b', 'é', '\u2028', '', long, `${long}y`, 1_796_196_551_500, 1_796_196_551_501),
    fc.constantFrom({ a: 1 }, [1, 'x'], undefined),
    fc.string({ unit: 'binary', maxLength: 5 }),
  );
  const record = fc.tuple(fc.array(value, { minLength: 4, maxLength: 4 }), fc.constantFrom(1_796_196_551_500, 1_796_196_551_501, '2026-12-02T07:29:11.622Z'));
  fc.assert(
    fc.property(fc.array(record, { minLength: 1, maxLength: 12 }), (records) => {
      const shape = new RecordShape('call_end', ['call_id', 'started_at', 'state', 'zz'], ['started_at']);
      const out = new LineBuffer();
      records.forEach(([values, ts], seq) => {
        const prev = seq % 2 === 0 ? 'ab'.repeat(32) : lineDigest(`line ${seq}`, undefined);
        const iso = (t) => (typeof t === 'number' ? new Date(t).toISOString() : t);
        const expected = `${canonical({
          call_id: values[0],
          started_at: typeof values[1] === 'number' ? iso(values[1]) : values[1],
          state: values[2],
          zz: values[3],
          type: 'call_end',
          ts: iso(ts),
          seq,
          prev: prev.length === 64 ? prev : Buffer.from(prev, 'latin1').toString('hex'),
        })}\n`;
        const start = out.length;
        shape.write(out, values, seq, prev, ts);
        assert.equal(out.bytes.toString('utf8', start, out.length), expected);
      });
    }),
    { numRuns: 2000 },
  );
});
