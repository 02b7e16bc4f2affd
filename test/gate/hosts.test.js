// Host rules: a URL argument judged by the host the WHATWG URL parser (what
// fetch connects to) finds in it: userinfo tricks, IDN, trailing dots, IP
// spellings, percent-encoding. Compared over generated adversarial URLs with
// what `new URL` decides, and run through the real binary against a server
// that records every byte it reads: a denied call leaves none there.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';
import { buildHosts, judgeHosts, judgeUrl } from '../../dist/gate/hosts.js';
import { buildPolicy, decide } from '../../dist/gate/policy.js';

after(killStarted);

const TIMEOUT = 30000;
const ALLOWED = ['docs.python.org', '*.mozilla.org', '127.0.0.1', 'bücher.example'];
const noEngine = () => {
  throw new Error('no engine');
};

/** What the URL parser says the host is, and whether a person reading ALLOWED would call it inside. */
function reference(url) {
  let host;
  try {
    host = new URL(url).hostname;
  } catch {
    return null;
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  return ['docs.python.org', '127.0.0.1', 'xn--bcher-kva.example'].includes(host) || (host.endsWith('.mozilla.org') && host.length > '.mozilla.org'.length);
}

describe('judgeUrl against the WHATWG URL parser', () => {
  test('generated userinfo, case, trailing-dot, IDN, percent-encoded and IP forms: inside exactly when the parsed host is', () => {
    const schemes = ['https://', 'http://', 'HTTPS://', 'wss://', 'ftp://'];
    const users = ['', 'docs.python.org@', 'u:p@', 'a@docs.python.org@', '%40@'];
    const hosts = [
      'docs.python.org',
      'DOCS.Python.ORG',
      'docs.python.org.',
      'docs.python.org..',
      'evil.com',
      'docs.python.org.evil.com',
      'evildocs.python.org',
      'developer.mozilla.org',
      'mozilla.org',
      'xmozilla.org',
      'a.b.MOZILLA.org.',
      '%64ocs.python.org',
      'docs%2epython%2eorg',
      '0x7f.1',
      '2130706433',
      '0177.0.0.1',
      '127.1',
      '[::1]',
      'bücher.example',
      'BÜCHER.example',
      'xn--bcher-kva.example',
      'ｄｏｃｓ.python.org',
    ];
    const tails = ['', '/', ':443/x', '/@evil.com', '?u=https://evil.com', '#@evil.com', ':99999/'];
    const rule = buildHosts({ args: ['/url'], within: ALLOWED });
    let judged = 0;
    let inside = 0;
    for (const s of schemes)
      for (const u of users)
        for (const h of hosts)
          for (const t of tails) {
            const url = `${s}${u}${h}${t}`;
            const want = reference(url);
            const got = judgeHosts(rule, { url });
            if (want === null) {
              assert.equal(got.match, 'unknown', `${url} does not parse: cannot be judged`);
              continue;
            }
            assert.equal(got.match, want, url);
            judged++;
            if (want) inside++;
          }
    assert.ok(judged > 1000 && inside > 200 && inside < judged, `judged ${judged}, inside ${inside}`);
  });

  test('what cannot be judged: not a URL, no host, an opaque scheme, a backslash or control character parsers read differently', () => {
    for (const value of ['docs.python.org', '/etc/passwd', 'file:///etc/passwd', 'mailto:a@docs.python.org', 'foo://docs.python.org/'])
      assert.ok('unknown' in judgeUrl(value), value);
    assert.match(judgeUrl('https://docs.python.org\\@evil.com/').unknown, /backslash/, "Python's urllib finds evil.com there, the URL parser docs.python.org");
    assert.match(judgeUrl('https://docs.python\t.org/').unknown, /control character/);
    assert.deepEqual(judgeUrl('https://docs.python.org@evil.com/'), { host: 'evil.com' });
  });

  test('patterns are checked at load: scheme, port, path or a * over an IP is a policy error naming the rule', () => {
    for (const bad of ['https://docs.python.org', 'docs.python.org:443', 'docs.python.org/x', '*.127.0.0.1', '', 'a b'])
      assert.throws(
        () => buildPolicy({ rules: [{ tool: 'fetch', hosts: { args: ['/url'], outside: [bad] }, decision: 'deny' }] }, 'x', noEngine),
        /rule 1: "hosts"/,
        bad,
      );
    const p = buildPolicy({ default: 'deny', rules: [{ tool: 'fetch', hosts: { args: ['/url'], within: ALLOWED }, decision: 'allow' }] }, 'x', noEngine);
    const v = (url) => decide(p, 'fetch', { value: () => ({ url }) }, {});
    assert.equal(v('https://developer.mozilla.org/en-US/').decision, 'allow');
    assert.equal(v('https://docs.python.org@evil.com/').decision, 'deny');
    assert.equal(v(undefined).decision, 'deny', 'within, no URL given: the stricter outcome');
  });
});

describe('through the relay', () => {
  test('a fetch-like tool limited to documentation hosts: everything else is denied naming the parsed host, zero bytes at the server', {
    timeout: TIMEOUT,
  }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    const policy = {
      rules: [{ tool: 'echo', hosts: { args: ['/text'], outside: ['docs.python.org', '*.mozilla.org'] }, decision: 'deny', reason: 'documentation only' }],
    };
    writeFileSync(policyFile, JSON.stringify(policy));
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', `--policy=${policyFile}`]);
    const call = (id, text) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
    try {
      await c.initialize();
      const calls = {
        1: 'https://docs.python.org/3/library/',
        2: 'https://docs.python.org@evil.com/',
        3: 'https://DEVELOPER.mozilla.org./en-US/',
        4: 'https://mozilla.org.evil.com/',
        5: 'https://docs.python.org\\@evil.com/',
        6: 'http://0x7f.1/admin',
        7: 'not a url',
      };
      for (const [id, text] of Object.entries(calls)) c.send(call(Number(id), text));
      const answers = {};
      for (const id of Object.keys(calls)) answers[id] = (await c.waitFor((m) => m.id === Number(id), `answer to ${id}`)).result;
      const r = await c.finish();
      const reached = c.callsAtServer();
      assert.deepEqual(reached, [1, 3], 'only the documentation hosts reached the server');
      assert.match(
        answers[2].content[0].text,
        /denied by policy rule 1 \(documentation only; \/text is host "evil\.com", outside "docs\.python\.org", "\*\.mozilla\.org"\)/,
      );
      assert.match(answers[6].content[0].text, /host "127\.0\.0\.1"/);
      assert.match(answers[5].content[0].text, /cannot be judged: a backslash/);
      assert.equal(endOf(r.records, 4).state, 'denied');
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });
});
