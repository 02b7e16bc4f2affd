// One-line masking, for the JSON text of a tool call's arguments on an
// approval card: each secret is masked alone and whatever follows it stays
// shown (the stderr rules mask a header or an unended PEM block to the end of
// the line, which in one-line JSON is the rest of the arguments), and each
// masked stretch is named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Masker } from '../../dist/mask/mask.js';
import { Redactor } from '../../dist/mask/redact.js';

const masker = new Masker({ DEPLOY_TOKEN: 'Zq7secretvalue42', PATH: '/usr/bin' });
const json = (v) => JSON.stringify(v);
const PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Zq\nx9Yc+/Zz1==\n-----END RSA PRIVATE KEY-----';

const CASES = [
  [
    'a header inside a command string',
    json({ command: "curl -H 'Authorization: Bearer abcdef123456' https://x; rm -rf ~" }),
    json({ command: "curl -H 'Authorization: Bearer [REDACTED]' https://x; rm -rf ~" }),
    ['an Authorization header value'],
  ],
  [
    'a header as a member name',
    json({ headers: { Authorization: 'Basic dXNlcjpwYXNz' }, command: 'rm -rf ~' }),
    json({ headers: { Authorization: 'Basic [REDACTED]' }, command: 'rm -rf ~' }),
    ['an Authorization header value'],
  ],
  [
    'X-Api-Key as a member name',
    json({ headers: { 'X-Api-Key': 'k3y-value-123' }, command: 'deploy; rm -rf ~' }),
    json({ headers: { 'X-Api-Key': '[REDACTED]' }, command: 'deploy; rm -rf ~' }),
    ['an API key header value'],
  ],
  [
    'a header in escaped quotes',
    json({ c: 'curl -H "X-Api-Key: abc123" x && rm -rf ~' }),
    json({ c: 'curl -H "X-Api-Key: [REDACTED]" x && rm -rf ~' }),
    ['an API key header value'],
  ],
  [
    'a header ends at an escaped line break',
    json({ c: 'Authorization: Basic dXNlcg==\nrm -rf ~' }),
    json({ c: 'Authorization: Basic [REDACTED]\nrm -rf ~' }),
    ['an Authorization header value'],
  ],
  [
    'a query parameter',
    json({ url: 'https://x/?api-key=s3cr3t&then=rm' }),
    json({ url: 'https://x/?api-key=[REDACTED]&then=rm' }),
    ['an API key header value'],
  ],
  ['cookie pairs, then a command', json({ c: 'Cookie: a=b; sid=xyz; rm -rf ~' }), json({ c: 'Cookie: [REDACTED]; rm -rf ~' }), ['a Cookie header value']],
  ['a PEM block, then a member', json({ key: PEM, then: 'rm -rf ~' }), json({ key: '[REDACTED:PRIVATE KEY]', then: 'rm -rf ~' }), ['a PEM private key']],
  [
    'a PEM block that never ends: its body only',
    json({ key: '-----BEGIN PRIVATE KEY-----\nMIIEowIBAAKCAQEA7Zq\n; rm -rf ~', cwd: '/' }),
    json({ key: '[REDACTED:PRIVATE KEY]; rm -rf ~', cwd: '/' }),
    ['a PEM private key'],
  ],
  [
    'a PEM block in JSON inside a JSON string',
    json({ s: json({ key: PEM, then: 'rm -rf ~' }) }),
    json({ s: json({ key: '[REDACTED:PRIVATE KEY]', then: 'rm -rf ~' }) }),
    ['a PEM private key'],
  ],
  [
    'a PEM body ends at a space: words after it are shown',
    json({ key: '-----BEGIN PRIVATE KEY-----\nMIIE\nrm /home/me\n-----END PRIVATE KEY-----' }),
    json({ key: '[REDACTED:PRIVATE KEY] /home/me\n-----END PRIVATE KEY-----' }),
    ['a PEM private key'],
  ],
  [
    'a PEM BEGIN line followed by a command',
    json({ key: '-----BEGIN PRIVATE KEY-----; rm -rf ~' }),
    json({ key: '[REDACTED:PRIVATE KEY]; rm -rf ~' }),
    ['a PEM private key'],
  ],
  [
    'env value and token shapes',
    json({ t: 'use Zq7secretvalue42 and sk-proj-TPEdALh8bvBrD2Y8GXZUIFgXgV9weU2rIHag; rm -rf ~' }),
    json({ t: 'use [REDACTED:DEPLOY_TOKEN] and sk-[REDACTED]; rm -rf ~' }),
    ['the value of $DEPLOY_TOKEN', 'a token (sk-…)'],
  ],
  [
    'escapes hide no header',
    '{"c":"x \\u0041uthorization: Bearer zzzzzzzzzzzz; rm -rf ~"}',
    '{"c":"x \\u0041uthorization: Bearer [REDACTED]; rm -rf ~"}',
    ['an Authorization header value'],
  ],
  [
    'JSON inside a JSON string',
    json({ s: json({ authorization: 'Bearer qqqqqqqqqq', cmd: 'rm -rf ~' }) }),
    json({ s: json({ authorization: 'Bearer [REDACTED]', cmd: 'rm -rf ~' }) }),
    ['an Authorization header value'],
  ],
  ['already masked text is left as it is, and not counted', json({ auth: 'Authorization: [REDACTED] x' }), json({ auth: 'Authorization: [REDACTED] x' }), []],
  ['nothing to mask', json({ command: 'ls -l', n: 1 }), json({ command: 'ls -l', n: 1 }), []],
];

for (const [name, input, expected, kinds] of CASES) {
  test(`one line: ${name}`, () => {
    const out = masker.oneLine(input);
    assert.equal(out.text, expected);
    assert.deepEqual(out.masked, kinds);
    assert.deepEqual(masker.oneLine(out.text).text, out.text, 'masking masked text changes nothing');
  });
}

test('the stderr rules are unchanged: there a header and an unended PEM block still mask to the end of the line', () => {
  const r = new Redactor({ env: {} });
  const line = Buffer.from("curl -H 'Authorization: Bearer abcdef123456' https://x; rm -rf ~\nnext\n");
  assert.equal(Buffer.concat([r.push(line), r.flush()]).toString(), "curl -H 'Authorization: [REDACTED]\nnext\n");
  r.reset();
  const pem = Buffer.from('-----BEGIN PRIVATE KEY-----\nMIIE\n; rm -rf ~\n');
  assert.equal(Buffer.concat([r.push(pem), r.flush()]).toString(), '[REDACTED:PRIVATE KEY]');
});

test('whatever follows a masked header value after a separator is shown, and the value is not', () => {
  const credential = fc.stringMatching(/^[A-Za-z0-9._~+/=-]{6,40}$/);
  const after = fc.stringMatching(/^[a-z ~/-]{1,30}$/);
  const name = fc.constantFrom('Authorization: Bearer ', 'Authorization: ', 'X-Api-Key: ', 'api-key=', 'Auth-Token: ');
  const sep = fc.constantFrom('; ', ' && ', '|', '\n', '" ', "' ", ', ');
  fc.assert(
    fc.property(name, credential, sep, after, (n, cred, s, rest) => {
      const input = json({ command: `x ${n}${cred}${s}${rest}`, cwd: '/tmp' });
      const out = masker.oneLine(input);
      assert.ok(!out.text.includes(cred), out.text);
      assert.ok(out.text.endsWith(`${json(`${s}${rest}`).slice(1, -1)}","cwd":"/tmp"}`), out.text);
      assert.equal(out.masked.length, 1);
    }),
    { numRuns: 500 },
  );
});
