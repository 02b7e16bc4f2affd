// Differential test of classifyFrame against the MCP SDK as an oracle: what the
// SDK's stdio transport does with a line, `JSONRPCMessageSchema.parse(JSON.parse(line))`
// (@modelcontextprotocol/sdk 1.32.2, shared/stdio.js deserializeMessage).
//
// Generated frames are near-valid JSON-RPC messages (requests, notifications,
// result and error responses, with wrong versions, ids of every JSON type, big
// and oddly written integers, params of every type, members missing, extra or
// doubled up), serialised with JSON.stringify except for number tokens that
// JSON.stringify cannot write (`1.0`, `1e3`, `9007199254740993`), which are
// spliced in as raw text. classifyFrame must accept exactly when the SDK does,
// with the same kind, id and method, except for these deliberate differences,
// each found by experiment and encoded below as a narrow exclusion:
//
// mcpguard rejects, the SDK accepts:
//   ID_SPELLING    an integer id written with a fraction or exponent (`1.0`, `1e3`, `-5E+0`):
//                  JSON.parse forgets the spelling; mcpguard compares ids as written, and
//                  another peer may parse `1.0` as a float that matches no request.
//   CODE_SPELLING  the same for `error.code`.
//   ERROR_NO_ID    an error response without an `id` member: the SDK makes `id` optional on
//                  errors; JSON-RPC 2.0 requires the member, and mcpguard must pair every
//                  response with a request.
//   (duplicate keys: JSON.parse keeps the last copy, mcpguard rejects. JSON.stringify never
//   writes them, so they appear only in the mutation property below.)
//
// mcpguard accepts, the SDK rejects (mcpguard checks JSON-RPC framing, not MCP method schemas):
//   META           `params._meta` or `result._meta` that breaks the SDK's RequestMetaSchema
//                  (not an object, `progressToken` neither string nor safe integer,
//                  `io.modelcontextprotocol/related-task` without a string `taskId`).
//
// Agreements worth knowing (no exclusion needed): both reject a `result` that is not an
// object (JSON-RPC allows any value, every MCP result is an object), an `error.code` beyond
// ±(2^53−1),  `{"id":null,"error":...}`
// (the standard parse-error reply: the SDK's id schema has no null, mcpguard pairs ids), any
// id beyond ±(2^53−1), ids that are null/boolean/fractional/objects, params that are not an
// object, `result` together with `error`, unknown top-level members, `jsonrpc` other than
// "2.0", and JSON arrays (batches; with --allow-batch mcpguard accepts a non-empty array of
// messages it would accept one by one, which the last property checks).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import {
  JSONRPCErrorResponseSchema,
  JSONRPCMessageSchema,
  JSONRPCNotificationSchema,
  JSONRPCRequestSchema,
  JSONRPCResultResponseSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { classifyFrame } from '../../dist/wire/jsonrpc.js';

const NUM_RUNS = 3000;

/** An id as a JS value: a RawId (an id whose spelling mcpguard keeps, such as `"\u0061"` or `-0`) stands for its value. */
const idValue = (id) => (id !== null && typeof id === 'object' ? id.value : id);
const SINGLE = { allowBatch: false };

/** A number token written verbatim into the frame (JSON.stringify cannot spell it). */
class Raw {
  constructor(text) {
    this.text = text;
  }
}

/** JSON.stringify, except that Raw tokens are written as their text and `__proto__` keys survive. */
function serialise(value) {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(serialise).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${serialise(v)}`)
      .join(',')}}`;
  }
  return JSON.stringify(value);
}

/** An object with exactly these own members, in this order (`__proto__` included). */
const fromEntries = (entries) => Object.fromEntries(entries);

// ---------------------------------------------------------------- generators

const text = fc.string({ unit: 'binary', maxLength: 12 });
const json = fc.jsonValue({ maxDepth: 2, stringUnit: 'binary' });
const jsonObject = fc.dictionary(text, json, { maxKeys: 4 });

const LIMIT = 2n ** 53n;
const bigIntText = fc
  .oneof(
    fc.constantFrom(LIMIT - 1n, LIMIT, LIMIT + 1n, -(LIMIT - 1n), -LIMIT, -LIMIT - 1n, 10n ** 20n, -(10n ** 30n)),
    fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }),
  )
  .map((n) => new Raw(String(n)));

/** Integer values spelled with a fraction or exponent, and other number spellings. */
const numberText = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map((n) => new Raw(`${n}.0`)),
  fc.integer({ min: -1000, max: 1000 }).map((n) => new Raw(`${n}e0`)),
  fc.integer({ min: 1, max: 99 }).map((n) => new Raw(`${n}E+1`)),
  fc.integer({ min: 1, max: 99 }).map((n) => new Raw(`${n * 10}e-1`)),
  fc.constantFrom('-0', '0', '1e400', '-1E400', '1.5', '2.50', '1e-7', '9007199254740991.0', '9007199254740993.0').map((t) => new Raw(t)),
);

const integer = fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.constantFrom(0, -1, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER));

const id = fc.oneof(
  { weight: 6, arbitrary: text },
  { weight: 6, arbitrary: integer },
  { weight: 2, arbitrary: fc.double() }, // fractions, ±0, huge values, and NaN/±Infinity (written as null)
  { weight: 2, arbitrary: bigIntText },
  { weight: 2, arbitrary: numberText },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.oneof(fc.array(json, { maxLength: 2 }), jsonObject) },
);

const jsonrpc = fc.oneof(
  { weight: 12, arbitrary: fc.constant('2.0') },
  { weight: 1, arbitrary: fc.constantFrom('1.0', '2', '2.0 ', '', '2.00', 2, 2.5, null, true) },
);

const method = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom('initialize', 'tools/call', 'ping', 'notifications/progress', '') },
  { weight: 3, arbitrary: text },
  { weight: 1, arbitrary: fc.oneof(integer, fc.constant(null), fc.boolean(), jsonObject) },
);

const meta = fc.oneof(
  fc.record({ progressToken: id }, { requiredKeys: [] }),
  fc.record({ 'io.modelcontextprotocol/related-task': fc.oneof(fc.record({ taskId: fc.oneof(text, integer) }), json) }),
  json,
);
const withMeta = fc.tuple(jsonObject, meta).map(([o, m]) => fromEntries([['_meta', m], ...Object.entries(o).filter(([k]) => k !== '_meta')]));

const params = fc.oneof(
  { weight: 6, arbitrary: jsonObject },
  { weight: 2, arbitrary: withMeta },
  { weight: 2, arbitrary: fc.oneof(fc.array(json, { maxLength: 3 }), text, integer, fc.constant(null), fc.boolean()) },
);

const result = fc.oneof({ weight: 6, arbitrary: jsonObject }, { weight: 2, arbitrary: withMeta }, { weight: 2, arbitrary: json });

const code = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(-32700, -32600, -32601, -32602, -32603, -32000, -32001) },
  { weight: 4, arbitrary: integer },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: bigIntText },
  { weight: 1, arbitrary: numberText },
  { weight: 1, arbitrary: fc.oneof(text, fc.constant(null), fc.boolean()) },
);

const errorObject = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record(
      { code, message: fc.oneof({ weight: 5, arbitrary: text }, { weight: 1, arbitrary: json }), data: json },
      { requiredKeys: ['code', 'message'] },
    ),
  },
  { weight: 1, arbitrary: fc.record({ code, message: text, extra: json }, { requiredKeys: [] }) },
  { weight: 1, arbitrary: json },
);

const MEMBER_VALUES = { jsonrpc, id, method, params, result, error: errorObject };
const memberName = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...Object.keys(MEMBER_VALUES)) },
  { weight: 2, arbitrary: fc.constantFrom('extra', 'ID', 'Method', 'data', '__proto__', 'jsonrpc ', '') },
  { weight: 1, arbitrary: text },
);
/** Set (or add) a member: the value arbitrary follows the name. */
const setMember = memberName.chain((name) => (Object.hasOwn(MEMBER_VALUES, name) ? MEMBER_VALUES[name] : json).map((value) => ({ op: 'set', name, value })));
const deleteMember = fc.constantFrom(...Object.keys(MEMBER_VALUES)).map((name) => ({ op: 'delete', name }));

const base = fc.oneof(
  fc.record({ jsonrpc, id, method, params }, { requiredKeys: ['jsonrpc', 'id', 'method'] }),
  fc.record({ jsonrpc, method, params }, { requiredKeys: ['jsonrpc', 'method'] }),
  fc.record({ jsonrpc, id, result }),
  fc.record({ jsonrpc, id, error: errorObject }),
);

/** A near-valid message: a well-shaped base with 0–2 members set, added or deleted, in any member order. */
const message = fc
  .tuple(
    base,
    fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 2, arbitrary: fc.array(fc.oneof(setMember, deleteMember), { minLength: 1, maxLength: 2 }) }),
  )
  .map(([b, edits]) => {
    const members = new Map(Object.entries(b));
    for (const e of edits) {
      if (e.op === 'delete') members.delete(e.name);
      else members.set(e.name, e.value);
    }
    return [...members];
  })
  .chain((entries) => fc.shuffledSubarray(entries, { minLength: entries.length, maxLength: entries.length }))
  .map(fromEntries);

// ---------------------------------------------------------------- the two sides

const frameOf = (textLine) => Buffer.from(`${textLine}\n`, 'utf8');

function sdkKind(value) {
  if (!JSONRPCMessageSchema.safeParse(value).success) return null;
  if (JSONRPCRequestSchema.safeParse(value).success) return 'request';
  if (JSONRPCNotificationSchema.safeParse(value).success) return 'notification';
  if (JSONRPCResultResponseSchema.safeParse(value).success || JSONRPCErrorResponseSchema.safeParse(value).success) return 'response';
  throw new Error('the SDK accepted a message none of its member schemas accepts');
}

const has = (o, k) => o !== null && typeof o === 'object' && !Array.isArray(o) && Object.hasOwn(o, k);
const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isRaw = (v, pattern) => v instanceof Raw && pattern.test(v.text);
const SPELLED = /[.eE]/;

/**
 * Why mcpguard may reject what the SDK accepts: each entry pairs mcpguard's
 * reason with the feature of the generated message that must be present.
 */
const STRICTER = [
  { name: 'ID_SPELLING', reason: /^"id" must be a string or an integer written without fraction or exponent$/, applies: (m) => isRaw(m.id, SPELLED) },
  { name: 'CODE_SPELLING', reason: /^"error.code" must be an integer$/, applies: (m) => has(m, 'error') && isRaw(m.error.code, SPELLED) },
  { name: 'ERROR_NO_ID', reason: /^neither "method" nor "id"/, applies: (m) => has(m, 'error') && !has(m, 'id') },
];

/**
 * Why the SDK may reject what mcpguard accepts: each entry repairs the parsed
 * message; after the applicable repairs the SDK must accept it.
 */
const LENIENT = [
  {
    name: 'META',
    applies: (p) => (isPlainObject(p.params) && has(p.params, '_meta')) || (isPlainObject(p.result) && has(p.result, '_meta')),
    repair: (p) => {
      if (isPlainObject(p.params)) delete p.params._meta;
      if (isPlainObject(p.result)) delete p.result._meta;
    },
  },
];

const seen = { accepted: 0, rejected: 0, differences: new Map() };
const note = (name) => seen.differences.set(name, (seen.differences.get(name) ?? 0) + 1);

/** Compare both sides on one generated message; returns nothing, throws on disagreement. */
function compare(msg) {
  const line = serialise(msg);
  const got = classifyFrame(frameOf(line), SINGLE);
  const parsed = JSON.parse(line);
  const kind = sdkKind(parsed);
  const why = `frame ${line}\nmcpguard: ${got.kind === 'invalid' ? `${got.code} ${got.reason}` : got.kind}\nsdk: ${kind ?? 'rejects'}`;
  got.kind === 'invalid' ? seen.rejected++ : seen.accepted++;

  if (got.kind === 'invalid') {
    // Valid JSON: a parse error could only come from a duplicate key, which we never write.
    assert.ok(got.code === -32600 || (got.code === -32602 && has(parsed, 'params') && has(parsed, 'method')), why);
    if (kind === null) return;
    const excuse = STRICTER.find((s) => s.reason.test(got.reason) && s.applies(msg));
    assert.ok(excuse, `mcpguard rejects what the SDK accepts, outside the listed differences:\n${why}`);
    note(excuse.name);
    return;
  }

  if (kind !== null) {
    assert.equal(got.kind, kind, why);
    if (has(parsed, 'id')) assert.ok(idValue(got.id) === parsed.id, `id: ${why}`);
    if (has(parsed, 'method')) assert.equal(got.method, parsed.method, why);
    return;
  }
  const excuses = LENIENT.filter((l) => l.applies(parsed));
  assert.ok(excuses.length > 0, `the SDK rejects what mcpguard accepts, outside the listed differences:\n${why}`);
  for (const e of excuses) e.repair(parsed);
  assert.equal(sdkKind(parsed), got.kind, `the listed differences do not explain the SDK's rejection:\n${why}\nrepaired: ${JSON.stringify(parsed)}`);
  for (const e of excuses) note(e.name);
}

describe("classifyFrame against the SDK's JSONRPCMessageSchema", () => {
  test('agreement on generated near-valid messages, except the listed differences', () => {
    fc.assert(fc.property(message, compare), { numRuns: NUM_RUNS });
    // Not vacuous: both outcomes and every listed difference occurred.
    assert.ok(seen.accepted > NUM_RUNS / 5 && seen.rejected > NUM_RUNS / 5, JSON.stringify(seen));
    for (const name of [...STRICTER, ...LENIENT].map((d) => d.name)) assert.ok(seen.differences.get(name) > 0, `difference ${name} never generated`);
  });

  // The differences, pinned by example, so that a change on either side shows up here by name.
  const EXAMPLES = [
    { name: 'ID_SPELLING', line: '{"jsonrpc":"2.0","id":1.0,"method":"ping"}', sdk: true, guard: -32600 },
    { name: 'ID_SPELLING', line: '{"jsonrpc":"2.0","id":1e3,"method":"ping"}', sdk: true, guard: -32600 },
    { name: 'CODE_SPELLING', line: '{"jsonrpc":"2.0","id":1,"error":{"code":-32600.0,"message":"x"}}', sdk: true, guard: -32600 },
    { name: 'ERROR_NO_ID', line: '{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}', sdk: true, guard: -32600 },
    { name: 'agree: result null', line: '{"jsonrpc":"2.0","id":1,"result":null}', sdk: false, guard: -32600 },
    { name: 'agree: result array', line: '{"jsonrpc":"2.0","id":1,"result":[1,2]}', sdk: false, guard: -32600 },
    { name: 'META', line: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":1.5}}}', sdk: false, guard: 'request' },
    { name: 'META', line: '{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":5}}', sdk: false, guard: 'notification' },
    { name: 'agree: error.code beyond 2^53', line: '{"jsonrpc":"2.0","id":1,"error":{"code":9007199254740993,"message":"x"}}', sdk: false, guard: -32600 },
    { name: 'duplicate key', line: '{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}', sdk: true, guard: -32700 },
    { name: 'agree: id null on an error', line: '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}', sdk: false, guard: -32600 },
    { name: 'agree: id 2^53', line: '{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}', sdk: false, guard: -32600 },
    { name: 'agree: id 2^53-1', line: '{"jsonrpc":"2.0","id":-9007199254740991,"method":"ping"}', sdk: true, guard: 'request' },
    { name: 'agree: unknown member', line: '{"jsonrpc":"2.0","id":1,"result":{},"extra":1}', sdk: false, guard: -32600 },
    { name: 'agree: batch', line: '[{"jsonrpc":"2.0","id":1,"method":"ping"}]', sdk: false, guard: -32600 },
  ];
  for (const e of EXAMPLES) {
    test(`${e.name}: ${e.line}`, () => {
      assert.equal(JSONRPCMessageSchema.safeParse(JSON.parse(e.line)).success, e.sdk, 'SDK');
      const got = classifyFrame(frameOf(e.line), SINGLE);
      assert.equal(got.kind === 'invalid' ? got.code : got.kind, e.guard, `mcpguard: ${got.reason ?? got.kind}`);
    });
  }

  test('with allowBatch, an array is accepted iff it is non-empty and every item is accepted alone', () => {
    fc.assert(
      fc.property(fc.array(message, { maxLength: 4 }), (items) => {
        const lines = items.map(serialise);
        const got = classifyFrame(frameOf(`[${lines.join(',')}]`), { allowBatch: true });
        const alone = lines.map((l) => classifyFrame(frameOf(l), SINGLE));
        const expected = items.length > 0 && alone.every((a) => a.kind !== 'invalid');
        assert.equal(got.kind, expected ? 'batch' : 'invalid', `[${lines.join(',')}]`);
        if (expected)
          assert.deepEqual(
            got.items.map((i) => i.kind),
            alone.map((a) => a.kind),
          );
        else {
          // The whole batch is refused with the first bad item's code (-32600 when empty).
          const first = alone.findIndex((a) => a.kind === 'invalid');
          assert.equal(got.code, first === -1 ? -32600 : alone[first].code);
          if (first !== -1) assert.match(got.reason, new RegExp(`^batch item ${first}: `));
        }
      }),
      { numRuns: 500 },
    );
  });
});

// ---------------------------------------------------------------- robustness

const CODES = new Set([-32700, -32600, -32602]);
const KINDS = new Set(['request', 'notification', 'response', 'batch', 'invalid']);

/** classifyFrame returns a well-formed value (it must never throw) for both batch settings. */
function classifyBoth(body) {
  const frame = Buffer.concat([body, Buffer.from('\n')]);
  return [false, true].map((allowBatch) => {
    const got = classifyFrame(frame, { allowBatch });
    assert.ok(KINDS.has(got.kind));
    if (got.kind === 'invalid') assert.ok(CODES.has(got.code) && typeof got.reason === 'string', JSON.stringify(got));
    return got;
  });
}

/**
 * The scanner against JSON.parse on any valid UTF-8: what JSON.parse rejects is
 * a -32700; what the scanner rejects but JSON.parse takes is a duplicate key,
 * nesting beyond MAX_DEPTH or a bare CR (a CR that is not the line's CRLF),
 * the scanner's deliberate extras.
 */
function agreeWithJsonParse(body, got) {
  if (!isUtf8(body)) {
    assert.equal(got.code, -32700);
    return;
  }
  let parses = true;
  try {
    JSON.parse(body.toString('utf8'));
  } catch {
    parses = false;
  }
  const parseError = got.kind === 'invalid' && got.code === -32700;
  if (!parses) assert.ok(parseError, `JSON.parse rejects, mcpguard says ${got.kind} ${got.reason ?? ''}: ${JSON.stringify(body.toString('utf8'))}`);
  else if (parseError) assert.match(got.reason, /duplicate key|nesting deeper|bare CR/, JSON.stringify(body.toString('utf8')));
}

describe('classifyFrame never throws', () => {
  test('on arbitrary bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const body = Buffer.from(bytes);
        const [single] = classifyBoth(body);
        agreeWithJsonParse(body, single);
      }),
      { numRuns: 5000 },
    );
  });

  const flips = fc.array(fc.tuple(fc.nat(), fc.oneof(fc.constantFrom(...Buffer.from('{}[]",:\\ .-+0e1nul\t\r\n')), fc.integer({ min: 0, max: 255 }))), {
    minLength: 1,
    maxLength: 4,
  });
  const mutate = (line, edits) => {
    const body = Buffer.from(line, 'utf8');
    for (const [at, byte] of edits) if (body.length > 0) body[at % body.length] = byte;
    return body;
  };

  test('on generated messages with random byte flips', () => {
    fc.assert(
      fc.property(message, flips, (msg, edits) => {
        const body = mutate(serialise(msg), edits);
        const [single] = classifyBoth(body);
        agreeWithJsonParse(body, single);
      }),
      { numRuns: 5000 },
    );
  });

  test('on arbitrary JSON text with random byte flips', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 4, stringUnit: 'binary' }), flips, (jsonText, edits) => {
        const body = mutate(jsonText, edits);
        const [single] = classifyBoth(body);
        agreeWithJsonParse(body, single);
      }),
      { numRuns: 5000 },
    );
  });
});
