// Random JSON Schemas and JSON values for the quick checks' differential
// tests (quick-check.test.js, quick-bytes.test.js): schemas drawn from the
// keywords the quick check repeats, mixed with annotations and with keywords
// it must refuse to repeat; values over the same few member names.
import fc from 'fast-check';

export const DIALECTS = ['7', '2019-09', '2020-12'];
export const NAMES = ['a', 'b', 'size', '__proto__', 'toString', '0'];
export const TYPES = ['null', 'boolean', 'object', 'array', 'number', 'string', 'integer'];

export const name = fc.constantFrom(...NAMES);
export const text = fc.oneof(
  fc.constantFrom('', 'a', 'ab', 'abc', 'b', '1', '\u{1F600}', '\u{1F600}a', '\ud800', 'é'),
  fc.string({ unit: 'binary', maxLength: 6 }),
);
const number = fc.oneof(
  fc.constantFrom(0, -0, 1, -1, 2, 1.5, -2.5, 64, 1e21, 2 ** 53, 2 ** 53 + 2, 0.1, Infinity, -Infinity),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ min: -10, max: 10, noNaN: true }),
);
export const primitive = fc.oneof(fc.constant(null), fc.boolean(), number.filter(Number.isFinite), text);

/** Any JSON value over NAMES, as JSON.parse makes it (`__proto__` an own member; 1e999 is Infinity). */
export const json = fc
  .letrec((tie) => ({
    value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, primitive, fc.constantFrom('1e999', '-1e999'), tie('array'), tie('object')),
    array: fc.array(tie('value'), { maxLength: 4 }),
    object: fc.dictionary(name, tie('value'), { maxKeys: 4 }),
  }))
  .value.map((v) => (v === '1e999' ? Infinity : v === '-1e999' ? -Infinity : v))
  .map((v) =>
    JSON.parse(
      JSON.stringify(v, (_, x) => (x === Infinity ? 'INF' : x === -Infinity ? 'NINF' : x)),
      (_, x) => (x === 'INF' ? Infinity : x === 'NINF' ? -Infinity : x),
    ),
  );

const count = fc.integer({ min: 0, max: 4 });
const bound = fc.oneof(fc.integer({ min: -2, max: 3 }), fc.constantFrom(0.5, 1.5, -0.5, 64, 2 ** 53));
export const pattern = fc.constantFrom('^a', 'b$', '^[a-z]*$', '\\d', '^\\p{L}+$', '.', '^.{2}$');

/** Keywords the quick check repeats, and what it must give up on. */
export const schema = fc
  .letrec((tie) => {
    const sub = tie('schema');
    const keyword = fc.oneof(
      fc.record({ type: fc.oneof(fc.constantFrom(...TYPES), fc.uniqueArray(fc.constantFrom(...TYPES), { maxLength: 3 })) }),
      fc.record({ const: primitive }),
      fc.record({ enum: fc.array(primitive, { minLength: 1, maxLength: 3 }) }),
      fc.record({ required: fc.uniqueArray(name, { maxLength: 3 }) }),
      fc.record({ properties: fc.dictionary(name, sub, { maxKeys: 3 }) }),
      fc.record({ additionalProperties: sub }),
      fc.record({ items: sub }),
      fc.record({ minItems: count }),
      fc.record({ maxItems: count }),
      fc.record({ minLength: count }),
      fc.record({ maxLength: count }),
      fc.record({ minimum: bound }),
      fc.record({ maximum: bound }),
      fc.record({ exclusiveMinimum: bound }),
      fc.record({ exclusiveMaximum: bound }),
      fc.record({ pattern }),
      fc.record({ not: sub }),
      fc.record({ anyOf: fc.array(sub, { minLength: 1, maxLength: 3 }) }),
      fc.record({ allOf: fc.array(sub, { minLength: 1, maxLength: 3 }) }),
      fc.record({ oneOf: fc.array(sub, { minLength: 1, maxLength: 3 }) }),
      fc.record({ if: sub, then: sub, else: sub }, { requiredKeys: ['if'] }),
      // Annotations: read by nobody.
      fc.record({ description: text, title: text, default: primitive, $comment: text, examples: fc.array(primitive, { maxLength: 2 }) }, { requiredKeys: [] }),
      // Keywords the quick check does not repeat: it must give up on the whole schema.
      fc.record({ multipleOf: fc.constantFrom(1, 2, 0.5) }),
      fc.record({ uniqueItems: fc.boolean() }),
      fc.record({ minProperties: count }),
      fc.record({ maxProperties: count }),
      fc.record({ patternProperties: fc.dictionary(pattern, sub, { maxKeys: 2 }) }),
      fc.record({ propertyNames: sub }),
      fc.record({ contains: sub }),
      fc.record({ dependentRequired: fc.dictionary(name, fc.uniqueArray(name, { maxLength: 2 }), { maxKeys: 2 }) }),
      fc.record({ items: fc.array(sub, { maxLength: 2 }) }),
      fc.record({ then: sub }),
    );
    return {
      schema: fc.oneof(
        { depthSize: 'small', withCrossShrink: true },
        fc.boolean(),
        fc.array(keyword, { maxLength: 4 }).map((parts) => Object.assign({}, ...parts)),
      ),
    };
  })
  .schema.map((s) => JSON.parse(JSON.stringify(s)));
