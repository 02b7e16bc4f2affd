// Numbers judged on the digits the server reads (src/gate/schema/numbers.ts):
// which number of an arguments' text a double does not hold, and where.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { inexactNumber } from '../../../dist/gate/schema/numbers.js';

const find = (text) => inexactNumber(Buffer.from(text), 0, Buffer.byteLength(text));

describe('inexact numbers in arguments', () => {
  test("integers past a double's exact ones and numbers past its range are found, with their JSON Pointer; exact ones are not", () => {
    assert.equal(
      find('{"a":9007199254740992,"b":-9007199254740991,"c":1.5e300,"d":-0,"e":-0.0,"f":123456789012345678901234567890.5,"g":18446744073709551616}'),
      null,
    );
    assert.deepEqual(find('{"a":[1,2,{"b\\"/~c":9007199254740993}]}'), { path: '/a/2/b"~1~0c', finite: true });
    assert.deepEqual(find('{"s":"9007199254740993 \\" 1e400","t":[0,1e400]}'), { path: '/t/1', finite: false });
    assert.deepEqual(find('{"r":12345678901234567891,"t":-1e999}'), { path: '/t', finite: false }, 'one past the range comes first, wherever it is');
    assert.deepEqual(find('-99999999999999999999'), { path: '', finite: true });
    assert.deepEqual(find(`{"k":1${'0'.repeat(400)}}`), { path: '/k', finite: false });
  });

  test('levels are kept between calls without leaking into the next: deep texts (past the first 64 levels), then shallow ones, point right', () => {
    const deep = (n, inner) => `${'{"k":['.repeat(n)}${inner}${']}'.repeat(n)}`;
    const path = (n, tail) => `${'/k/0'.repeat(n)}${tail}`;
    assert.deepEqual(find(deep(100, '{"x":1,"y":[2,9007199254740993]}')), { path: path(100, '/y/1'), finite: true });
    assert.deepEqual(find(deep(200, '1e400')), { path: path(200, ''), finite: false });
    assert.equal(find(deep(150, '{"a":"9007199254740993"}')), null);
    assert.deepEqual(find('[1,{"b":[3,{"c":1e999}]}]'), { path: '/1/b/1/c', finite: false });
    assert.deepEqual(find('{"a":{"b":1},"c":9007199254740993}'), { path: '/c', finite: true }, 'a key of a closed object is not the next one');
    assert.equal(find('{"size":64}'), null);
  });

  test("random JSON: found exactly where an integer literal's BigInt differs from its double's, or a double is infinite", () => {
    const big = fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map((n) => ({ raw: String(n) }));
    const value = fc.letrec((tie) => ({
      v: fc.oneof(
        { depthSize: 'small' },
        big,
        fc.string(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.array(tie('v'), { maxLength: 4 }),
        fc.dictionary(fc.string(), tie('v'), { maxKeys: 3 }),
      ),
    })).v;
    const text = (v) =>
      v !== null && typeof v === 'object' && 'raw' in v && Object.keys(v).length === 1
        ? v.raw
        : Array.isArray(v)
          ? `[${v.map(text).join(',')}]`
          : v !== null && typeof v === 'object'
            ? `{${Object.entries(v)
                .map(([k, x]) => `${JSON.stringify(k)}:${text(x)}`)
                .join(',')}}`
            : JSON.stringify(v);
    fc.assert(
      fc.property(value, (v) => {
        const t = text(v);
        const expected = [...t.matchAll(/(?<=[[:,]|^)-?\d+(?=[,\]}]|$)/g)].some((m) => BigInt(m[0]) !== BigInt(Number(m[0])));
        assert.equal(find(t) !== null, expected, t);
      }),
      { numRuns: 500 },
    );
  });
});
