// The masker's known leaks, closed: env values longer than the 64 bytes that
// confirm them, values that start inside another masked stretch, secrets
// written with JSON escapes, and the one-shot path (mask.ts) that masks
// mcpguard's own diagnostics with the same rules. Masking twice changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redactor } from '../../dist/mask/redact.js';
import { redactPieces } from '../helpers/redact.js';
import { UNDO_BACKSLASH, UNDO_QUOTE, rawIndex, unescapeJson } from '../../dist/mask/json-escapes.js';
import { Masker } from '../../dist/mask/mask.js';
import { Diagnostics, escapeBytes } from '../../dist/mask/diagnostics.js';

const LONG = 'Q7f2Kp9xLm3Vb8Rt1Wz6Yc4Nh5Jd0Gs2Ea7Uo9Ik3Pl8Mn1Bv6Cx4Zq2Ws5Ed7Rf/SUFFIX-0123456789';
const ENV = {
  API_SECRET: LONG,
  // Same first 64 bytes, then another tail, and longer: it is tried first.
  TWIN_TOKEN: `${LONG.slice(0, 64)}${'T'.repeat(40)}`,
  PERIODIC_SECRET: `${'A'.repeat(70)}SECRETSUFFIX`,
  SHORT_TOKEN: 'hunter2hunter2hunter2:colon-9',
  QUOTE_PASSWORD: 'pa"ss\\word-1',
};
const GHP = 'ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const SK = 'sk-proj-abcdefghijklmnopqrstuvwxyz0123';

/** Redact `input` fed as the given pieces. */
const run = (pieces, env = ENV) => redactPieces(pieces, env)[0];

function everySplit(input, env = ENV) {
  const whole = run([input], env);
  const bytes = Buffer.from(input);
  for (let cut = 0; cut <= bytes.length; cut++) assert.equal(run([bytes.subarray(0, cut), bytes.subarray(cut)], env), whole, `cut at ${cut}`);
  assert.equal(
    run(
      [...bytes].map((b) => Buffer.from([b])),
      env,
    ),
    whole,
    'byte by byte',
  );
  return whole;
}

const uEscaped = (text) => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');

// A value confirmed by 64 bytes it shares with another is named after the longer one.
const PAIR = '[REDACTED:TWIN_TOKEN]';

const CASES = [
  ['a long value beside a longer one with the same first 64 bytes', `v=${LONG}.`, `v=${PAIR}.`],
  ['the longer one of the pair', `v=${ENV.TWIN_TOKEN}.`, `v=${PAIR}.`],
  ['a long value after a near copy of its start', `v=${LONG.slice(0, 66)}${LONG}.`, `v=${PAIR}${PAIR}.`],
  ['a value whose start repeats, one repeat early', `x=A${ENV.PERIODIC_SECRET}.`, 'x=[REDACTED:PERIODIC_SECRET].'],
  ['a value that starts inside a bearer token and runs past it', `Bearer ${ENV.SHORT_TOKEN} x`, 'Bearer [REDACTED] x'],
  ['a token glued to a masked value', `${ENV.SHORT_TOKEN}${GHP} x`, '[REDACTED:SHORT_TOKEN]ghp_[REDACTED] x'],
  ['a value with \\/ for /', `{"v":"${LONG.replace('/', '\\/')}"}`, `{"v":"${PAIR}"}`],
  ['a value written all in \\u escapes', `{"v":"${uEscaped(LONG)}"}`, `{"v":"${PAIR}"}`],
  ['a value with " and \\, JSON-escaped', `{"p":${JSON.stringify(ENV.QUOTE_PASSWORD)}}`, '{"p":"[REDACTED:QUOTE_PASSWORD]"}'],
  ['a value with " and \\, as it is', `p=${ENV.QUOTE_PASSWORD};`, 'p=[REDACTED:QUOTE_PASSWORD];'],
  ['an sk- key with an escaped first letter', `{"k":"\\u0073k-${SK.slice(3)}"}`, '{"k":"\\u0073k-[REDACTED]"}'],
  ['a bearer token with \\/ inside', 'Bearer abcdefgh\\/ijklmnopqrstuvwxyz "', 'Bearer [REDACTED] "'],
  ['a header in JSON inside a JSON string', '{"log":"{\\"api-key\\": \\"abc123\\"}"}\nnext', '{"log":"{\\"api-key\\": [REDACTED]\nnext'],
  ['a surrogate pair and a cut escape are no secrets', 'ok \\ud83d\\ude00 \\u00e9 \\u12', 'ok \\ud83d\\ude00 \\u00e9 \\u12'],
  ['an escaped backslash before u', 'x \\\\u0073k-abcdefghijklmnopqrstuvwxyz', 'x \\\\u0073k-abcdefghijklmnopqrstuvwxyz'],
  ['an already masked header', 'Authorization: [REDACTED]" (reason)', 'Authorization: [REDACTED]" (reason)'],
];

for (const [name, input, expected] of CASES) {
  test(`${name}: masked whole, split anywhere`, () => {
    assert.equal(everySplit(input), expected);
  });
}

test('without the other values, a long value is still masked to its end', () => {
  assert.equal(everySplit(`v=${LONG}.`, { API_SECRET: LONG }), 'v=[REDACTED:API_SECRET].');
});

// ---- JSON escapes: a model ----

const BMP_OR_ASTRAL = fc.oneof(
  fc.constantFrom('a', 'Z', '0', '-', '_', '/', '"', '\\', ' ', 'é', '€', '日', '\u{1F600}'),
  fc
    .integer({ min: 0x20, max: 0x10ffff })
    .filter((c) => c < 0xd800 || c > 0xdfff)
    .map((c) => String.fromCodePoint(c)),
);

/** `text` JSON-escaped, each character chosen raw or as \u (the JSON-required escapes always). */
function escapeEach(text, choices) {
  return [...text]
    .map((c, i) => {
      const escaped = choices[i % choices.length];
      if (c === '"' || c === '\\') return escaped ? uEscaped(c) : `\\${c}`;
      if (c === '/' && escaped) return '\\/';
      if (!escaped) return c;
      return c.length === 2 ? uEscaped(c[0]) + uEscaped(c[1]) : uEscaped(c).replace(/[a-f]/g, (h) => (i % 2 ? h.toUpperCase() : h));
    })
    .join('');
}

test('unescapeJson undoes any mix of escapes (a model: JSON.parse), and maps back to raw bytes', () => {
  fc.assert(
    fc.property(fc.array(BMP_OR_ASTRAL, { maxLength: 30 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }), (chars, choices) => {
      const text = chars.join('');
      const escaped = escapeEach(text, choices);
      assert.equal(JSON.parse(`"${escaped}"`), text, 'the model agrees the escaping is valid');
      const raw = Buffer.from(escaped);
      const u = unescapeJson(raw, true, UNDO_QUOTE | UNDO_BACKSLASH);
      assert.deepEqual(u === null ? raw : u.bytes, Buffer.from(text));
      if (u !== null) {
        assert.equal(rawIndex(u.spans, u.bytes.length, false), raw.length);
        let last = 0;
        for (let i = 0; i <= u.bytes.length; i++) {
          const at = rawIndex(u.spans, i, false);
          assert.ok(at >= last && rawIndex(u.spans, i, true) >= at);
          last = at;
        }
      }
      // Cut anywhere: what is decided never changes, and what is held is at most one escape.
      for (let cut = 0; cut <= raw.length; cut++) {
        const part = unescapeJson(raw.subarray(0, cut), false, UNDO_QUOTE | UNDO_BACKSLASH);
        const decided = part === null ? raw.subarray(0, cut) : part.bytes;
        assert.ok(Buffer.from(text).subarray(0, decided.length).equals(decided), `cut ${cut}`);
        assert.ok(cut - (part === null ? cut : part.rawEnd) <= 12);
      }
    }),
    { numRuns: 1000 },
  );
});

const SECRETS = [LONG, ENV.PERIODIC_SECRET, ENV.SHORT_TOKEN, ENV.QUOTE_PASSWORD, GHP, SK, 'Bearer abcdefghijklmnopqrstuv', 'AKIAIOSFODNN7EXAMPLE'];
/** What must not be seen of each secret: its tail (the prefix of a shape is kept on purpose). */
const tailOf = (secret) => secret.slice(-10);

const noise = fc.oneof(
  fc.constantFrom(
    ' ',
    '\n',
    '"',
    ':',
    '=',
    'x',
    'A',
    '\\',
    '\\\\',
    '\\"',
    '\\n',
    '\\u00',
    '\\u00e9',
    '\\/',
    'Bearer ',
    'sk-',
    'ghp_',
    LONG.slice(0, 64),
    'A'.repeat(20),
  ),
  fc.string({ maxLength: 8 }),
);

test('a secret JSON-escaped any way, among noise and split anywhere, never shows (raw or unescaped)', () => {
  fc.assert(
    fc.property(
      fc.constantFrom(...SECRETS),
      fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
      fc.array(noise, { maxLength: 6 }),
      fc.array(noise, { maxLength: 6 }),
      fc.array(fc.nat(30), { maxLength: 12 }),
      (secret, choices, before, after, sizes) => {
        const input = Buffer.from(`${before.join('')} ${escapeEach(secret, choices)} ${after.join('')}`);
        const whole = run([input]);
        const pieces = [];
        let at = 0;
        for (const s of sizes) {
          if (at >= input.length) break;
          pieces.push(input.subarray(at, at + s + 1));
          at += s + 1;
        }
        pieces.push(input.subarray(at));
        assert.equal(run(pieces), whole, 'split-independent');
        const unescaped = whole.replace(/\\(u[0-9a-fA-F]{4}|[\\/"])/g, (_, e) => (e[0] === 'u' ? String.fromCharCode(parseInt(e.slice(1), 16)) : e));
        for (const text of [whole, unescaped]) assert.ok(!text.includes(tailOf(secret)), `${JSON.stringify(input.toString())} → ${JSON.stringify(whole)}`);
      },
    ),
    { numRuns: 3000 },
  );
});

test('large reads after a held tail (the junction path) give the same output as one push, escapes included', () => {
  const piece = fc.oneof(
    noise,
    fc.constantFrom(
      ...SECRETS,
      uEscaped(LONG),
      `\\u0073k-${SK.slice(3)}`,
      'Bearer abcdefgh\\/ijklmnopqrstuvwxyz',
      uEscaped(`eyJ${'a'.repeat(296)}.eyJzdWIi`),
      uEscaped(`eyJ${'a'.repeat(296)}`),
    ),
  );
  fc.assert(
    fc.property(
      fc.array(piece, { minLength: 50, maxLength: 400 }),
      fc.array(fc.integer({ min: 1, max: 9000 }), { minLength: 1, maxLength: 20 }),
      (frags, sizes) => {
        const bytes = Buffer.from(frags.join(''));
        const whole = run([bytes]);
        const pieces = [];
        for (let at = 0, k = 0; at < bytes.length; k++) {
          pieces.push(bytes.subarray(at, at + sizes[k % sizes.length]));
          at += sizes[k % sizes.length];
        }
        assert.equal(run(pieces), whole);
      },
    ),
    { numRuns: 300 },
  );
});

const fragment = fc.oneof(
  fc.constantFrom(
    ...SECRETS,
    'Authorization: x y\n',
    '"cookie": "a=b"',
    '{\\"auth-token\\": \\"q\\"}',
    '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n',
    'eyJhbGciOi.eyJzdWIi.sig',
  ),
  noise,
  fc.constantFrom('\\u0073k-', uEscaped('ghp_'), '[REDACTED]', '[REDACTED:API_SECRET]', 'é', '\u{1F600}'),
);

test('masking masked text changes nothing', () => {
  fc.assert(
    fc.property(fc.array(fragment, { maxLength: 25 }), (frags) => {
      const once = run([frags.join('')]);
      assert.equal(run([once]), once);
    }),
    { numRuns: 3000 },
  );
});

test('mayMatch is never false where masking would change the text', () => {
  const r = new Redactor({ env: ENV });
  fc.assert(
    fc.property(fc.array(fc.oneof(fragment, fc.string({ maxLength: 10 })), { maxLength: 12 }), (frags) => {
      const text = frags.join('');
      if (!r.mayMatch(text)) assert.equal(run([text]), text);
    }),
    { numRuns: 3000 },
  );
  assert.equal(r.mayMatch('tools/call'), false);
  assert.equal(r.mayMatch(`x ${SK}`), true);
});

// ---- the one-shot path ----

test('Masker.quote masks before it cuts: a secret across the cut shows none of itself', () => {
  const m = new Masker(ENV);
  for (const secret of [SK, GHP, LONG, ENV.SHORT_TOKEN, 'Bearer abcdefghijklmnopqrstuv']) {
    for (let start = 100; start <= 120; start++) {
      const line = Buffer.from(`${'n'.repeat(start - 1)} ${secret} and more text after it`);
      const shown = m.quote(line, 120);
      assert.ok(!shown.includes(secret.slice(-12)) && !shown.includes(secret.slice(8, 16)), `${start}: ${shown}`);
      assert.match(shown, /…\(\+\d+ bytes\)$/);
    }
  }
  assert.equal(m.quote(Buffer.from('plain words'), 120), '"plain words"');
  assert.equal(m.quote(Buffer.alloc(200, 0x61), 5), '"aaaaa"…(+195 bytes)');
  // A line longer than the masked window is cut the same way.
  const long = Buffer.from(`${'n'.repeat(110)} ${SK}${' tail'.repeat(2000)}`);
  const shown = m.quote(long, 120);
  assert.ok(!shown.includes('abcdefgh') && shown.includes('sk-[REDAC'), shown);
});

test('Masker.text and Masker.value mask strings, keys and nested values, and return unmasked input as is', () => {
  const m = new Masker(ENV);
  const clean = 'tools/call';
  assert.equal(m.text(clean), clean);
  assert.equal(m.text(`--api-key ${SK}`), '--api-key sk-[REDACTED]');
  assert.deepEqual(m.value({ args: ['--key', LONG], n: 3, nested: { [SK]: [ENV.SHORT_TOKEN, null, true] } }), {
    args: ['--key', PAIR],
    n: 3,
    nested: { 'sk-[REDACTED]': ['[REDACTED:SHORT_TOKEN]', null, true] },
  });
  const before = m.count;
  m.text('nothing here at all');
  assert.equal(m.count, before);
});

test('Diagnostics.line masks the whole line; escapeBytes masks what it quotes', () => {
  const written = [];
  const stream = { writableLength: 0, on() {}, write: (b) => written.push(Buffer.from(b).toString()) };
  const m = new Masker(ENV);
  const diag = new Diagnostics(stream, m);
  diag.line(`unexpected member ${JSON.stringify(ENV.SHORT_TOKEN)}: ${escapeBytes(Buffer.from(`{"a":"${SK}"}`), 120, m)}`);
  assert.deepEqual(written, ['mcpguard: unexpected member "[REDACTED:SHORT_TOKEN]": "{\\"a\\":\\"sk-[REDACTED]\\"}"\n']);
});
