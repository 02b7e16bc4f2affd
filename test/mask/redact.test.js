// The streaming masker: every shape is masked whole or in pieces, counts are
// exact, clean text is untouched, and the output never depends on how the
// input was split.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Redactor, MAX_HOLD_BYTES } from '../../dist/mask/redact.js';
import { redactPieces } from '../helpers/redact.js';

const ENV = {
  GITHUB_TOKEN: 'tok-3f9a1c77e2',
  DB_PASSWORD: 'pässwört-ünïcode',
  LONG_SECRET: 'L'.repeat(30) + '0123456789'.repeat(10) + '-end',
  PREFIX_KEY: 'tok-3f9a1c77e2-and-more',
  SHORT_TOKEN: 'abc12',
  PATH: '/usr/local/bin:/usr/bin',
  XDG_SESSION_TYPE: 'wayland',
};

const GHP = 'ghp_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8';
const PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Zq\nx9Yc+/Zz1==\n-----END RSA PRIVATE KEY-----';
const JWT = 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';

/** Redact `input` fed as the given pieces; returns [text, count]. */
const run = (pieces, env = ENV) => redactPieces(pieces, env);

function bytewise(text) {
  return [...Buffer.from(text)].map((b) => Buffer.from([b]));
}

const CASES = [
  ['env value', `login with tok-3f9a1c77e2 failed`, `login with [REDACTED:GITHUB_TOKEN] failed`, 1],
  ['env value inside a word', `x=abctok-3f9a1c77e2xyz`, `x=abc[REDACTED:GITHUB_TOKEN]xyz`, 1],
  ['longer env value wins over its prefix', `tok-3f9a1c77e2-and-more!`, `[REDACTED:PREFIX_KEY]!`, 1],
  ['UTF-8 env value', `pw=pässwört-ünïcode;`, `pw=[REDACTED:DB_PASSWORD];`, 1],
  ['long env value', `v=${ENV.LONG_SECRET}.`, `v=[REDACTED:LONG_SECRET].`, 1],
  ['authorization header', `> Authorization: Basic dXNlcjpwYXNz\r\nHost: x\n`, `> Authorization: [REDACTED]\r\nHost: x\n`, 1],
  ['header in a dict', `{'authorization': 'Bearer abc'}\nok`, `{'authorization': [REDACTED]\nok`, 1],
  ['bearer token', `sent Bearer abcdefghijklmnop.qrstuv-wx/yz= then`, `sent Bearer [REDACTED] then`, 1],
  ['github token', `token ${GHP} ok`, `token ghp_[REDACTED] ok`, 1],
  ['fine-grained github token', `github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz`, `github_pat_[REDACTED]`, 1],
  ['openai key', `key=sk-proj-abcdefghijklmnopqrstuvwxyz0123`, `key=sk-[REDACTED]`, 1],
  ['anthropic key', `"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-yz_09"`, `"sk-[REDACTED]"`, 1],
  ['slack token', `xoxb-123456789012-abcdefABCDEF\n`, `xoxb-[REDACTED]\n`, 1],
  ['aws key id', `AKIAIOSFODNN7EXAMPLE,`, `AKIA[REDACTED],`, 1],
  ['google api key', `AIzaSyA-abcdefghijklmnopqrstuvwxyz01234`, `AIza[REDACTED]`, 1],
  ['gitlab token', `glpat-xxxxxxxxxxxxxxxxxxxx`, `glpat-[REDACTED]`, 1],
  ['jwt', `jwt=${JWT} end`, `jwt=[REDACTED:JWT] end`, 1],
  ['pem block', `before\n${PEM}\nafter\n`, `before\n[REDACTED:PRIVATE KEY]\nafter\n`, 1],
  [
    'pem block in json',
    `{"private_key":"-----BEGIN PRIVATE KEY-----\\nMIIabc\\n-----END PRIVATE KEY-----\\n","x":1}`,
    `{"private_key":"[REDACTED:PRIVATE KEY]\\n","x":1}`,
    1,
  ],
  ['two secrets', `${GHP} and tok-3f9a1c77e2`, `ghp_[REDACTED] and [REDACTED:GITHUB_TOKEN]`, 2],
];

for (const [name, input, expected, count] of CASES) {
  test(`masks ${name}: whole, split in two at every byte, byte by byte`, () => {
    assert.deepEqual(run([input]), [expected, count]);
    const bytes = Buffer.from(input);
    for (let cut = 0; cut <= bytes.length; cut++) {
      assert.deepEqual(run([bytes.subarray(0, cut), bytes.subarray(cut)]), [expected, count], `cut at ${cut}`);
    }
    assert.deepEqual(run(bytewise(input)), [expected, count]);
  });
}

const CLEAN = [
  'helper-diagnostic\n',
  'task-runner-with-a-very-long-name-0123 disk-full\n',
  'authorization failed for user bob\n',
  'a bearer token is required\n',
  'AKIA is an AWS prefix; AKIAshort\n',
  '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n',
  'short env abc12 and wayland and /usr/local/bin:/usr/bin\n',
  'ünïcödé ✓ 日本語 \u{1F600}\n',
];

test('clean text passes through byte-identical, and unsplit clean chunks are not copied', () => {
  for (const text of CLEAN) {
    assert.deepEqual(run([text]), [text, 0], text);
    assert.deepEqual(run(bytewise(text)), [text, 0], text);
  }
  const r = new Redactor({ env: ENV });
  const chunk = Buffer.from('helper-diagnostic\n'.repeat(100));
  assert.equal(r.push(chunk), chunk);
});

test('invalid UTF-8 passes through as the same bytes', () => {
  const bytes = Buffer.from([0xff, 0xfe, 0x80, 0x41, 0xe2, 0x82, 0x0a, 0xc3]);
  const r = new Redactor({ env: ENV });
  assert.deepEqual(Buffer.concat([r.push(bytes), r.flush()]), bytes);
});

test('a PEM block split over many reads is one redaction; bytes after its end are kept', () => {
  const lines = ['log start\n', '-----BEGIN OPENSSH PRIVATE KEY-----\n'];
  for (let i = 0; i < 200; i++) lines.push('b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n');
  lines.push('-----END OPENSSH PRIVATE KEY-----\n', 'log end\n');
  assert.deepEqual(run(lines), ['log start\n[REDACTED:PRIVATE KEY]\nlog end\n', 1]);
});

test('a PEM block that never ends keeps masking, with bounded hold-back', () => {
  const pieces = ['ok\n-----BEGIN EC PRIVATE KEY-----\n'];
  for (let i = 0; i < 1000; i++) pieces.push('MHcCAQEEIBvK-----EN\n');
  const [text, count] = run(pieces);
  assert.equal(text, 'ok\n[REDACTED:PRIVATE KEY]');
  assert.equal(count, 1);
});

test('hold-back stays bounded under adversarial near-misses', () => {
  const near = [
    'eyJ' + 'a'.repeat(10000),
    'tok-3f9a1c77e'.repeat(500),
    '-----BEGIN ' + 'A'.repeat(5000),
    'Authorization' + ' '.repeat(5000),
    'Bearer ' + 'x'.repeat(15) + ' ',
    'L'.repeat(20000),
  ];
  for (const text of near) {
    const [out, count] = run(bytewise(text));
    assert.equal(count, 0, text.slice(0, 20));
    assert.equal(out, text);
  }
});

test('counts are exact over many secrets', () => {
  const input = Array.from({ length: 250 }, (_, i) => `${i}: ${GHP} tok-3f9a1c77e2 ${JWT}\n`).join('');
  const [text, count] = run([input]);
  assert.equal(count, 750);
  assert.ok(!text.includes('tok-3f9a1c77e2') && !text.includes('A1b2C3') && !text.includes('SflKx'));
});

// Fragments that make the fuzz hit secrets, near-misses, multibyte and invalid bytes.
const fragment = fc.oneof(
  fc.constantFrom(
    GHP,
    JWT,
    PEM,
    'tok-3f9a1c77e2',
    ENV.LONG_SECRET,
    'pässwört-ünïcode',
    'Authorization: x y\n',
    'Bearer abcdefghijklmnopq ',
    'AKIAIOSFODNN7EXAMPLE',
  ),
  fc.constantFrom('ghp_', 'eyJ', '-----BEGIN ', '-----END RSA PRIVATE KEY-----', 'tok-3f9', 'sk-', 'L'.repeat(70), '\n', ' ', 'é', '日', '\u{1F600}'),
  fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.string({ maxLength: 12 }),
);

test('random splits give the same output and count as one push', () => {
  fc.assert(
    fc.property(fc.array(fragment, { maxLength: 30 }), fc.array(fc.nat(40), { maxLength: 40 }), (frags, sizes) => {
      const bytes = Buffer.concat(frags.map((f) => Buffer.from(f, f.length && /[^\x00-\xff]/.test(f) ? 'utf8' : 'latin1')));
      const whole = run([bytes]);
      const pieces = [];
      let at = 0;
      for (const s of sizes) {
        if (at >= bytes.length) break;
        pieces.push(bytes.subarray(at, at + s + 1));
        at += s + 1;
      }
      pieces.push(bytes.subarray(at));
      assert.deepEqual(run(pieces), whole);
    }),
    { numRuns: 3000 },
  );
});

test('when nothing was masked the output is the input', () => {
  fc.assert(
    fc.property(fc.array(fragment, { maxLength: 20 }), (frags) => {
      const bytes = Buffer.from(frags.join(''));
      const r = new Redactor({ env: ENV });
      const out = Buffer.concat([r.push(bytes), r.flush()]);
      if (r.count === 0) assert.deepEqual(out, bytes);
      assert.equal(r.bytesIn, bytes.length);
      assert.equal(r.bytesOut, out.length);
    }),
    { numRuns: 2000 },
  );
});

test('a secret split across two writes reaches neither the store, the excerpt nor the mirror', async () => {
  const { StderrStore } = await import('../../dist/stderr/budget.js');
  const { Passthrough } = await import('../../dist/stderr/passthrough.js');
  const { renderExcerpt } = await import('../../dist/stderr/excerpt.js');
  const secret = ENV.GITHUB_TOKEN;
  for (let cut = 1; cut < secret.length; cut++) {
    const r = new Redactor({ env: ENV });
    const store = new StderrStore();
    const mirrored = [];
    const mirror = new Passthrough({
      write: (b) => {
        mirrored.push(Buffer.from(b));
        return true;
      },
    });
    const feed = (chunk) => {
      const safe = r.push(Buffer.from(chunk));
      store.write(safe, ['call']);
      mirror.write(safe);
    };
    feed(`auth with ${secret.slice(0, cut)}`);
    feed(`${secret.slice(cut)} failed\n`);
    const rest = r.flush();
    store.write(rest, ['call']);
    mirror.write(rest);
    const kept = renderExcerpt(store.callSnapshot('call'), { maxBytes: 4096, label: true });
    const shown = Buffer.concat(mirrored).toString();
    for (const text of [kept, shown]) {
      assert.ok(!text.includes(secret.slice(0, 6)) && !text.includes(secret.slice(-6)), `cut ${cut}: ${text}`);
      assert.ok(text.includes('auth with [REDACTED:GITHUB_TOKEN] failed\n'));
    }
    assert.equal(r.count, 1);
  }
});

test('large reads after a held tail (the junction path) give the same output as one push', () => {
  fc.assert(
    fc.property(
      fc.array(fragment, { minLength: 50, maxLength: 400 }),
      fc.array(fc.integer({ min: 1, max: 3000 }), { minLength: 1, maxLength: 20 }),
      (frags, sizes) => {
        const bytes = Buffer.from(frags.join(''), 'latin1');
        const whole = run([bytes]);
        const pieces = [];
        let at = 0;
        for (let k = 0; at < bytes.length; k++) {
          const s = sizes[k % sizes.length];
          pieces.push(bytes.subarray(at, at + s));
          at += s;
        }
        assert.deepEqual(run(pieces), whole);
      },
    ),
    { numRuns: 500 },
  );
});

test('feed hands out the chunk itself, or views of it, and copies only a small junction', () => {
  const r = new Redactor({ env: ENV });
  const chunk1 = Buffer.from('x'.repeat(5000) + '\nh');
  const chunk2 = Buffer.from('f_ is not a token here\n' + 'y'.repeat(5000));
  const parts1 = [];
  r.feed(chunk1, (b) => parts1.push(b));
  assert.equal(r.pending, 1);
  assert.equal(parts1.length, 1);
  assert.equal(parts1[0].buffer, chunk1.buffer);
  const parts2 = [];
  r.feed(chunk2, (b) => parts2.push(b));
  assert.equal(parts2.length, 2);
  assert.ok(parts2[0].length <= 2 * MAX_HOLD_BYTES + 1);
  assert.equal(parts2[1].buffer, chunk2.buffer);
  assert.equal(Buffer.concat([...parts1, ...parts2]).toString(), chunk1.toString() + chunk2.toString());
});
