// The quick check on bytes (src/gate/schema/quick-bytes.ts) against the library and
// against the value quick check it repeats. Values are written out as JSON
// text the way clients may write them (any whitespace, any character escaped
// or not, numbers spelled many ways), placed inside a tools/call frame, and
// found by the scanner as the gate finds them; the truth is what the library
// says of JSON.parse of that text. The bytes check must never say valid where
// the library says invalid, and must say what the value quick check says,
// except where it answers "unsure" (asks the slow path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { validate } from '@cfworker/json-schema';
import { compileRule, quickCheck } from '../../../dist/gate/schema/quick-check.js';
import { bytesVerdict, countCodePoints, DECODE_MAX } from '../../../dist/gate/schema/quick-bytes.js';
import { scanJson } from '../../../dist/wire/json-scan.js';
import { ToolSchemas } from '../../../dist/gate/schema/schema.js';
import { BYTES_CHECK_MIN } from '../../../dist/gate/schema/engine.js';
import { DIALECTS, json, schema } from './json-arbitraries.js';

const libraryValid = (value, s, dialect) => validate(value, s, dialect, undefined, false).valid;

/** A tiny seeded generator, so one fast-check integer decides every spelling choice of a value. */
function random(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

const SPACES = ['', '', ' ', '\n', '\t', '\r\n  ', '   '];
const SHORT = { '"': '\\"', '\\': '\\\\', '/': '\\/', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const hex4 = (unit, pick) => {
  const h = unit.toString(16).padStart(4, '0');
  return `\\u${pick(2) ? h : h.toUpperCase()}`;
};

/** One character of a string literal: raw where JSON allows it, else (or by chance) a short or \u escape. */
function spellChar(ch, pick) {
  const code = ch.codePointAt(0);
  const mustEscape = ch === '"' || ch === '\\' || code < 0x20;
  const how = pick(mustEscape ? 2 : 5);
  if (!mustEscape && how >= 2) return ch;
  if (how === 0 && SHORT[ch] !== undefined) return SHORT[ch];
  if (code > 0xffff) return hex4(ch.charCodeAt(0), pick) + hex4(ch.charCodeAt(1), pick);
  return hex4(code, pick);
}

const spellString = (s, pick) => `"${Array.from(s.toWellFormed(), (ch) => spellChar(ch, pick)).join('')}"`;

/** A JSON number text that JSON.parse reads as `n` (or near it: the truth is what it reads). */
function spellNumber(n, pick) {
  if (n === Infinity) return ['1e400', '1E+999', '123e456'][pick(3)];
  if (n === -Infinity) return ['-1e400', '-9.9E999'][pick(2)];
  if (Object.is(n, -0)) return ['-0', '-0.0', '-0e0', '-0E+3'][pick(4)];
  const plain = JSON.stringify(n);
  const forms = Number.isInteger(n)
    ? [plain, `${plain}.0`, `${plain}.000`, `${plain}e0`, `${plain}0E-1`, n.toExponential()]
    : [plain, n.toExponential(), n.toExponential().toUpperCase(), `${plain}0`];
  const form = forms[pick(forms.length)];
  // Some forms are not JSON for some numbers (`00E-1`, `1e+21.0`): then the plain one.
  return /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(form) ? form : plain;
}

/** `value` as JSON text with random whitespace, escapes and number spellings. */
function spell(value, pick) {
  const ws = () => SPACES[pick(SPACES.length)];
  if (value === null || typeof value === 'boolean') return String(value);
  if (typeof value === 'number') return spellNumber(value, pick);
  if (typeof value === 'string') return spellString(value, pick);
  if (Array.isArray(value)) return `[${ws()}${value.map((v) => spell(v, pick)).join(`${ws()},${ws()}`)}${ws()}]`;
  // Own keys, `__proto__` included (JSON.parse makes it an own member).
  const members = Object.keys(value).map((k) => `${spellString(k, pick)}${ws()}:${ws()}${spell(value[k], pick)}`);
  return `{${ws()}${members.join(`${ws()},${ws()}`)}${ws()}}`;
}

/** The arguments text inside a tools/call frame, and their node as the scanner finds it. */
function inFrame(text, pick = () => 0) {
  const frame = Buffer.from(
    `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t",${SPACES[pick(SPACES.length)]}"arguments":${SPACES[pick(SPACES.length)]}${text}${SPACES[pick(SPACES.length)]}}}\n`,
  );
  const scanned = scanJson(frame, 0, frame.length - 1);
  assert.ok(scanned.ok, `the scanner refused ${text}: ${scanned.reason}`);
  const node = scanned.value.members.get('params').members.get('arguments');
  return { frame, node };
}

const verdictOf = (rule, text) => {
  const { frame, node } = inFrame(text);
  return bytesVerdict(rule, frame, node.start, node.end);
};

test('on random schemas and spelled values, the bytes check never passes what the library refuses, and agrees with the value quick check', (t) => {
  const tally = { valid: 0, invalid: 0, unsure: 0, schemas: 0 };
  fc.assert(
    fc.property(schema, fc.constantFrom(...DIALECTS), fc.array(fc.tuple(json, fc.integer()), { minLength: 1, maxLength: 8 }), (s, dialect, values) => {
      const rule = compileRule(s, dialect);
      if (rule === null) return;
      tally.schemas++;
      const quick = quickCheck(s, dialect);
      for (const [v, seed] of values) {
        const pick = random(seed);
        const text = spell(v, pick);
        const { frame, node } = inFrame(text, pick);
        const value = JSON.parse(text);
        const verdict = bytesVerdict(rule, frame, node.start, node.end);
        tally[verdict]++;
        const what = `schema ${JSON.stringify(s)} (${dialect}), text ${text}`;
        if (verdict === 'valid') assert.equal(libraryValid(value, s, dialect), true, `passed what the library refuses: ${what}`);
        if (verdict !== 'unsure') assert.equal(verdict === 'valid', quick(value), `disagrees with the value quick check: ${what}`);
      }
    }),
    { numRuns: 15000 },
  );
  t.diagnostic(`bytes verdicts: ${JSON.stringify(tally)}`);
  // Both answers must be exercised, and "unsure" (only for nesting that needs too many rescans) must stay rare.
  assert.ok(tally.schemas > 4000 && tally.valid > 2000 && tally.invalid > 2000, JSON.stringify(tally));
  assert.ok(tally.unsure <= (tally.valid + tally.invalid) / 100, JSON.stringify(tally));
});

test('numbers read as JSON.parse reads them: 1e400 is Infinity, -0 is -0, 1.0 is an integer', () => {
  const cases = [
    [{ type: 'integer' }, '1e400', 'valid'], // the library's lone-integer quirk lets Infinity through
    [{ type: ['integer'] }, '1e400', 'invalid'],
    [{ maximum: 1e308 }, '1e400', 'invalid'],
    [{ type: 'integer' }, '1.0', 'valid'],
    [{ type: 'integer' }, '10E-1', 'valid'],
    [{ type: 'integer' }, '1.5', 'invalid'],
    [{ type: 'integer', minimum: 1 }, '0.1e1', 'valid'],
    [{ exclusiveMinimum: 0 }, '-0', 'invalid'],
    [{ const: 0 }, '-0.0', 'valid'],
    [{ enum: [2, 3] }, '3.000', 'valid'],
    [{ maximum: 9007199254740992 }, '9007199254740993', 'valid'], // rounds to 2^53, as JSON.parse does
    [{ exclusiveMaximum: 9007199254740992 }, '9007199254740993', 'invalid'],
  ];
  for (const [s, text, expected] of cases) {
    const rule = compileRule(s, '2020-12');
    assert.equal(verdictOf(rule, text), expected, `${JSON.stringify(s)} ${text}`);
    assert.equal(expected === 'valid', libraryValid(JSON.parse(text), s, '2020-12'), `the case itself: ${JSON.stringify(s)} ${text}`);
  }
});

test('keys: __proto__ is an own member, escaped keys are their text', () => {
  const cases = [
    [{ required: ['__proto__'] }, '{"__proto__": 1}', 'valid'],
    [JSON.parse('{"properties": {"__proto__": {"type": "string"}}}'), '{"__proto__": 1}', 'invalid'],
    [{ additionalProperties: false }, '{"\\u005f_proto__": {}}', 'invalid'],
    [{ properties: { a: { type: 'string' } }, additionalProperties: false }, '{"\\u0061": "x"}', 'valid'],
    [{ properties: { a: { type: 'string' } }, additionalProperties: false }, '{"\\u0061": 1}', 'invalid'],
    [{ required: ['toString'] }, '{}', 'invalid'],
    [{ properties: { é: { const: 'ü' } }, required: ['é'] }, '{"\\u00e9": "\\u00FC"}', 'valid'],
  ];
  for (const [s, text, expected] of cases) {
    assert.equal(verdictOf(compileRule(s, '7'), text), expected, `${JSON.stringify(s)} ${text}`);
    assert.equal(expected === 'valid', libraryValid(JSON.parse(text), s, '7'), `the case itself: ${JSON.stringify(s)} ${text}`);
  }
});

/** Text of about `size` UTF-16 units mixing ASCII, multibyte and astral characters, quotes, backslashes and controls. */
function mixedText(size, seed) {
  const pick = random(seed);
  const alphabet = [...'abc xyz"\\\n\t/é数€😀\u2028\u0001'];
  let s = '';
  while (s.length < size) s += alphabet[pick(alphabet.length)].repeat(1 + pick(30));
  return s.slice(0, size).toWellFormed();
}

const LENGTHS = ['a', '😀', 'a😀b\\u0041\\ud83d\\ude00\\n'];

test('string lengths from bytes: counted as the library counts (code units, a pair once), escapes as what they denote', () => {
  for (const text of LENGTHS) {
    const body = Buffer.from(text);
    const value = JSON.parse(`"${text}"`);
    assert.equal(countCodePoints(body, 0, body.length), [...value].length, text);
  }
  let checked = 0;
  for (const size of [300, 20_000, DECODE_MAX + 5_000]) {
    for (let seed = 1; seed <= 6; seed++) {
      const value = mixedText(size, seed);
      const literal = spellString(value, random(seed * 7));
      const length = [...value].length;
      const bodyBytes = Buffer.byteLength(literal) - 2;
      assert.equal(countCodePoints(Buffer.from(literal), 1, bodyBytes + 1), length, `size ${size} seed ${seed}`);
      for (const s of [
        { maxLength: length },
        { maxLength: length - 1 },
        { minLength: length },
        { minLength: length + 1 },
        { minLength: 1, maxLength: bodyBytes },
        { maxLength: bodyBytes + 1, type: 'string' },
      ]) {
        const expected = libraryValid(value, s, '7');
        assert.equal(verdictOf(compileRule(s, '7'), literal), expected ? 'valid' : 'invalid', `${JSON.stringify(s)}, size ${size} seed ${seed}`);
        checked++;
      }
    }
  }
  assert.ok(checked === 108);
});

test('long strings: const and enum settled without a wrong answer; a pattern on a string past DECODE_MAX asks the slow path', () => {
  const value = mixedText(DECODE_MAX + 100, 3);
  const literal = spellString(value, random(5));
  const object = `{"blob": ${literal}}`;
  const cases = [
    [{ const: value }, literal, 'valid'],
    [{ const: `${value.slice(0, -1)}!` }, literal, 'invalid'],
    [{ enum: ['short', value] }, literal, 'valid'],
    [{ enum: ['short', 'other'] }, literal, 'invalid'],
    [{ pattern: '^' }, literal, 'unsure'],
    [{ type: 'object', properties: { blob: { type: 'string' } }, additionalProperties: false }, object, 'valid'],
    [{ type: 'object', properties: { blob: { type: 'number' } } }, object, 'invalid'],
    [{ type: 'object', properties: { blob: { not: { pattern: 'x' } } } }, object, 'unsure'],
    [{ anyOf: [{ type: 'number' }, { type: 'string', maxLength: 5 }] }, literal, 'invalid'],
  ];
  for (const [s, text, expected] of cases) {
    const verdict = verdictOf(compileRule(s, '2020-12'), text);
    assert.equal(verdict, expected, JSON.stringify(s).slice(0, 120));
    if (expected !== 'unsure')
      assert.equal(expected === 'valid', libraryValid(JSON.parse(text), s, '2020-12'), `the case itself: ${JSON.stringify(s).slice(0, 120)}`);
  }
});

test('nested arrays past the rescan budget ask the slow path rather than rescanning for ever', () => {
  // Each level of arrays needs a rescan of its own (the scanner records items one level at a time).
  const nested = (depth, inner) => (depth === 0 ? inner : { items: nested(depth - 1, inner) });
  const deep = `${'['.repeat(100)}1${']'.repeat(100)}`;
  assert.equal(verdictOf(compileRule(nested(100, { type: 'number' }), '7'), deep), 'unsure');
  assert.equal(libraryValid(JSON.parse(deep), nested(100, { type: 'number' }), '7'), true);
  assert.equal(verdictOf(compileRule(nested(3, {}), '7'), deep), 'valid', 'levels the schema does not look into are not rescanned');
  assert.equal(verdictOf(compileRule(nested(2, {}), '7'), '[[[1]], [[2, 3]]]'), 'valid');
  assert.equal(verdictOf(compileRule(nested(2, { type: 'string' }), '7'), '[[[1]], [[2, 3]]]'), 'invalid');
});

test('through the tool schemas: a large valid call is never parsed; a small one, and a large invalid one, are, with the refusal the value gives', async () => {
  const tools = new ToolSchemas();
  const inputSchema = { type: 'object', properties: { size: { type: 'integer', minimum: 1 }, blob: { type: 'string' } }, additionalProperties: false };
  tools.learnPage([{ name: 'echo', inputSchema }], true, '2025-06-18');
  const source = (text) => {
    const { frame, node } = inFrame(text);
    const counted = {
      frame,
      start: node.start,
      end: node.end,
      parsed: 0,
      value() {
        this.parsed++;
        return JSON.parse(text);
      },
    };
    return counted;
  };
  const large = mixedText(BYTES_CHECK_MIN * 3, 9);
  const valid = source(`{"size": 2, "blob": ${spellString(large, random(1))}}`);
  assert.deepEqual(await tools.checkCall('echo', valid), { ok: true });
  assert.equal(valid.parsed, 0, 'a large valid call is checked from its bytes only');
  for (const text of [
    `{"size": 0, "blob": ${JSON.stringify(large)}}`,
    `{"blob": ${JSON.stringify(large)}, "more": 1}`,
    `{"blob": [${JSON.stringify(large)}]}`,
  ]) {
    const invalid = source(text);
    const verdict = tools.checkCallNow('echo', invalid);
    assert.equal(invalid.parsed, 1, 'a refusal is made by the value path');
    assert.deepEqual(verdict, tools.checkArgumentsNow('echo', JSON.parse(text)));
    assert.equal(verdict.kind, 'invalid');
  }
  const small = source('{"size": 2, "blob": "x"}');
  assert.deepEqual(tools.checkCallNow('echo', small), { ok: true });
  assert.equal(small.parsed, 1, `arguments under ${BYTES_CHECK_MIN} bytes take the value path`);
});
