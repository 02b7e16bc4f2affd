// The gate's quick check (src/gate/schema/quick-check.ts) against the library it
// stands in for: on any schema it accepts and any JSON value, its yes must be
// the library's valid, and its no the library's invalid (a no only hands the
// value to the library, but a quick check that said no to valid values would
// be useless, and one that says yes to invalid ones lets bad calls through).
// Schemas are drawn from the keywords it repeats, mixed with annotations and
// with keywords it must refuse to repeat; values are JSON values (parsed from
// text, as the gate parses arguments) over the same few member names.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { validate } from '@cfworker/json-schema';
import { ROOT } from '../../helpers/run.js';
import { quickCheck } from '../../../dist/gate/schema/quick-check.js';
import { compileSchema } from '../../../dist/gate/schema/engine.js';
import { prepareSchema } from '../../../dist/gate/schema/inspect.js';
import { DIALECTS, json, schema } from './json-arbitraries.js';

const libraryValid = (value, s, dialect) => validate(value, s, dialect, undefined, false).valid;

test('whenever the quick check is made, it agrees with the library on every value', () => {
  let made = 0;
  let passed = 0;
  fc.assert(
    fc.property(schema, fc.constantFrom(...DIALECTS), fc.array(json, { minLength: 1, maxLength: 8 }), (s, dialect, values) => {
      const quick = quickCheck(s, dialect);
      if (quick === null) return;
      made++;
      for (const value of values) {
        const expected = libraryValid(value, s, dialect);
        if (expected) passed++;
        assert.equal(quick(value), expected, `schema ${JSON.stringify(s)} (${dialect}), value ${JSON.stringify(value)}`);
      }
    }),
    { numRuns: 20000 },
  );
  // The generator must exercise both sides, or the agreement proves little.
  assert.ok(made > 5000 && passed > 2000, `quick checks made ${made}, values passed ${passed}`);
});

test('a schema with a keyword the quick check does not repeat gets none', () => {
  for (const extra of [
    { multipleOf: 2 },
    { uniqueItems: true },
    { minProperties: 1 },
    { $ref: '#' },
    { patternProperties: { a: {} } },
    { items: [{}] },
    { format: 'email' },
    { then: {} },
    { $recursiveAnchor: true },
  ]) {
    assert.equal(quickCheck({ type: 'object', properties: { a: { type: 'string', ...extra } } }, '2019-09'), null, JSON.stringify(extra));
  }
  assert.equal(quickCheck({ type: 'objekt' }, '7'), null);
  assert.equal(quickCheck({ enum: [{ a: 1 }] }, '7'), null);
  assert.notEqual(
    quickCheck(
      { type: 'object', properties: { a: { type: 'string', description: 'x', default: 'y' } }, additionalProperties: false, $schema: 'x', $id: 'y' },
      '7',
    ),
    null,
  );
});

test('the lone-integer quirk is the library\'s: Infinity passes "integer" and fails ["integer"]', () => {
  for (const [s, value] of [
    [{ type: 'integer' }, Infinity],
    [{ type: ['integer'] }, Infinity],
    [{ type: 'integer' }, 2.5],
    [{ type: ['integer', 'string'] }, 3],
  ]) {
    assert.equal(quickCheck(s, '7')(value), libraryValid(value, s, '7'), JSON.stringify([s, value]));
  }
  assert.equal(quickCheck({ type: 'integer' }, '7')(Infinity), true);
  assert.equal(quickCheck({ type: ['integer'] }, '7')(Infinity), false);
});

test('the tools of server-everything: which get a quick check, and agreement on values that pass and fail', () => {
  const { tools } = JSON.parse(readFileSync(join(ROOT, 'bench', 'fixtures', 'everything-tools.json'), 'utf8'));
  let quick = 0;
  for (const tool of tools) {
    const compiled = compileSchema(tool.inputSchema, '7');
    // What the library is given: the gate's prepared copy (format removed: an annotation in the gate).
    const { copy } = prepareSchema(tool.inputSchema, '7');
    const q = quickCheck(copy, '7');
    if (q !== null) quick++;
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...Object.keys(tool.inputSchema.properties ?? {}), 'other'), json, { maxKeys: 4 }), (value) => {
        const expected = libraryValid(value, copy, '7');
        assert.equal(compiled.check(value).ok, expected, `${tool.name} ${JSON.stringify(value)}`);
        if (q !== null) assert.equal(q(value), expected, `${tool.name} ${JSON.stringify(value)}`);
      }),
      { numRuns: 300 },
    );
  }
  // Every one of them uses only the keywords repeated here (type, properties, required, enum, bounds, annotations; format is gone).
  assert.equal(quick, tools.length);
});

test('bounds at their edges: every numeric, length and count keyword against values on, just inside and just outside it', () => {
  const numbers = [-1, -0, 0, 0.5, 1, 1.5, 2, 3, Infinity, -Infinity];
  const strings = ['', 'a', 'ab', 'abc', '\u{1F600}', '\u{1F600}\u{1F600}', '\ud800', '\ud800a', 'a\udc00', '\udc00\ud800', '\ud800\ud800', '\udc00\udc00'];
  const arrays = [[], [1], [1, 2], [1, 2, 3]];
  let checked = 0;
  for (const dialect of DIALECTS) {
    for (const bound of [-1, 0, 1, 1.5, 2]) {
      for (const keyword of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) {
        for (const value of numbers) {
          const s = { [keyword]: bound };
          assert.equal(quickCheck(s, dialect)(value), libraryValid(value, s, dialect), JSON.stringify([s, value]));
          checked++;
        }
      }
      if (!Number.isInteger(bound) || bound < 0) continue;
      for (const keyword of ['minLength', 'maxLength']) {
        for (const value of strings) {
          const s = { [keyword]: bound };
          assert.equal(quickCheck(s, dialect)(value), libraryValid(value, s, dialect), JSON.stringify([s, value]));
          checked++;
        }
      }
      for (const keyword of ['minItems', 'maxItems']) {
        for (const value of arrays) {
          const s = { [keyword]: bound };
          assert.equal(quickCheck(s, dialect)(value), libraryValid(value, s, dialect), JSON.stringify([s, value]));
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 600);
});
