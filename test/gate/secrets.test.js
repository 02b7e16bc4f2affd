// Secrets in a call's arguments: the value of one of mcpguard's secret
// environment variables (planted by helpers/run.js in every run), or a known
// credential shape, anywhere in the parsed arguments: nested, JSON-escaped,
// JSON inside a string. By default an env value is denied and a shape is
// asked about; a policy rule with `secrets` says otherwise. Through the real
// binary, with a server that records every line it reads; stdout, stderr and
// the records are searched for the planted secret.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PLANTED_ENV, PLANTED_SHAPES, assertNoPlanted, fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';
import { buildPolicy } from '../../dist/gate/policy.js';
import { findSecret } from '../../dist/gate/secrets.js';

after(killStarted);

const TIMEOUT = 30000;
const TOKEN = PLANTED_ENV.MCPGUARD_TEST_API_TOKEN;
// findSecret below runs in this process: the planted variable is mcpguard's own there too (read once, at first use).
process.env.MCPGUARD_TEST_API_TOKEN = TOKEN;
const SK = PLANTED_SHAPES.MCPGUARD_TEST_SHAPE_OPENAI.value;
const noEngine = () => {
  throw new Error('no engine');
};
/** Every character as a `\u00XX` escape: the same string to a JSON parser. */
const uEscaped = (text) => [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
const rawCall = (id, name, argsText) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":${argsText}}}\n`;
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** A legacy session with these options, initialized; no elicitation unless asked. */
async function session(args, env = {}, capabilities = {}) {
  const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', ...args], env);
  c.send({
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 't', version: '1' } },
  });
  await c.waitFor((m) => m.id === 'init', 'initialize answer');
  c.send({ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 'list', method: 'tools/list' });
  await c.waitFor((m) => m.id === 'list', 'tools/list answer');
  return c;
}

const reached = (c) => c.callsAtServer();

/** JSON inside JSON inside a string, its first character escaped in the innermost text: beyond the card's one level of unescaping. */
const deepCommand = JSON.stringify({ x: `{"y":"${uEscaped(TOKEN.slice(0, 1))}${TOKEN.slice(1)}"}` });

describe('secrets: true on a rule', () => {
  test('checked at load: true or absent; a rule with it needs a decision', () => {
    assert.throws(
      () => buildPolicy({ rules: [{ tool: '*', secrets: 'yes', decision: 'deny' }] }, "'p'", noEngine),
      /rule 1: "secrets" must be true .* got "yes"/,
    );
    assert.throws(
      () => buildPolicy({ rules: [{ tool: '*', secrets: true, timeout: '1s' }] }, "'p'", noEngine),
      /rule 1: a rule with "limit", "secrets" or "reason" needs a "decision"/,
    );
  });
});

describe('findSecret', () => {
  test('JSON nested past 1024 levels inside a string is refused, not skipped; a plain large string is judged in bounded time', () => {
    const deep = `${'['.repeat(2000)}${']'.repeat(2000)}`;
    assert.throws(() => findSecret({ text: deep }), /the arguments nest more than 1024 levels/);
    assert.equal(findSecret({ text: `${'['.repeat(500)}${']'.repeat(500)}` }), null);
    const big = `${'ünïcödé text '.repeat(80_000)}${TOKEN}`;
    const started = process.hrtime.bigint();
    assert.equal(findSecret({ content: big }).kind, 'the value of $MCPGUARD_TEST_API_TOKEN');
    assert.ok(Number(process.hrtime.bigint() - started) / 1e6 < 5000, 'about 1 MiB in well under the bound');
  });
});

describe('through the relay', () => {
  test('the default: an env value is denied (plain, nested, escaped, deep), a credential shape asked; zero bytes at the server; never shown', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session([]);
    try {
      c.send(call(1, 'echo', { text: `use ${TOKEN} please` }), call(2, 'exec', { command: 'ls', env: { deep: ['x', TOKEN] } }));
      c.child.stdin.write(rawCall(3, 'echo', `{"text":"${uEscaped(TOKEN)}"}`));
      c.send(call(4, 'exec', { command: deepCommand }), call(5, 'echo', { text: SK }), call(6, 'echo', { text: 'hello' }));
      const answers = {};
      for (const id of [1, 2, 3, 4, 5, 6]) answers[id] = (await c.waitFor((m) => m.id === id, `answer to ${id}`)).result;
      const r = await c.finish();
      assert.deepEqual(reached(c), [6], 'no call carrying a secret left a byte at the server');
      const text = (id) => answers[id].content[0].text;
      assert.equal(
        text(1),
        'mcpguard denied this call before it reached the server: denied by --secrets-in-args deny-env: the arguments carry the value of $MCPGUARD_TEST_API_TOKEN (at "/text")',
      );
      assert.match(text(2), /the value of \$MCPGUARD_TEST_API_TOKEN \(at "\/env\/deep\/1"\)/);
      assert.match(text(3), /the value of \$MCPGUARD_TEST_API_TOKEN \(at "\/text"\)/, 'escapes in the frame are judged as the parsed value');
      assert.match(text(4), /the value of \$MCPGUARD_TEST_API_TOKEN \(at "\/command\/x", encoded inside the string\)/);
      assert.match(
        text(5),
        /^mcpguard denied this call before it reached the server: --secrets-in-args deny-env: the arguments carry a token \(sk-…\) \(at "\/text"\) asks for a person's approval/,
      );
      assert.match(text(5), /there is no way to ask/, 'a shape asks; with no way to ask, denied as any ask is');
      assert.equal(answers[6].isError, undefined);
      assert.deepEqual(
        [1, 2, 3, 4, 5].map((id) => [endOf(r.records, id).state, endOf(r.records, id).decision.by, endOf(r.records, id).decision.rule]),
        Array(5).fill(['denied', 'policy', null]),
      );
      assertNoPlanted(Buffer.concat([Buffer.from(JSON.stringify(r.out))]), 'the answers');
      assertNoPlanted(r.stderr, 'stderr');
      assertNoPlanted(JSON.stringify(r.records), 'the records');
    } finally {
      c.cleanup(); // also scans every record file for the planted secrets
    }
  });

  test('a rule with secrets: ask replaces the default: the approver is asked, and never sees the secret; one the card could not mask is denied', {
    timeout: TIMEOUT,
  }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    const stdinFile = join(t.dir, 'approver-stdin');
    writeFileSync(policyFile, JSON.stringify({ rules: [{ tool: '*', secrets: true, decision: 'ask', reason: 'a secret leaves' }] }));
    const c = await session([`--policy=${policyFile}`, `--approve-cmd=python3 ${fixture('approve.py')}`], {
      APPROVE_ALL: '1',
      APPROVE_STDIN_TO: stdinFile,
      SLOW_TOOLS: '1',
    });
    try {
      // `wait` answers "slept": a tool that echoed the secret back would put it on stdout itself.
      c.send(call(1, 'wait', { seconds: 0, text: `token=${TOKEN}` }));
      const one = (await c.waitFor((m) => m.id === 1, 'answer to 1')).result;
      c.send(call(2, 'exec', { command: deepCommand }));
      const two = (await c.waitFor((m) => m.id === 2, 'answer to 2')).result;
      const r = await c.finish();
      assert.equal(one.isError, undefined, 'approved');
      assert.deepEqual(reached(c), [1]);
      const approver = readFileSync(stdinFile, 'utf8');
      assertNoPlanted(approver, 'what the approver read');
      const action = JSON.parse(approver);
      assert.equal(action.reason, 'policy rule 1 (a secret leaves; the arguments carry the value of $MCPGUARD_TEST_API_TOKEN (at "/text"))');
      assert.equal(action.arguments_text, '{"seconds":0,"text":"token=[REDACTED:MCPGUARD_TEST_API_TOKEN]"}');
      assert.match(
        two.content[0].text,
        /denied by policy rule 1 \(a secret leaves; .*encoded inside the string\); denied: an approval card could not mask it\)$/,
      );
      assertNoPlanted(r.stderr, 'stderr');
      assertNoPlanted(JSON.stringify(r.records), 'the records');
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });

  test('--secrets-in-args off lets the call through; a value it does not know stops mcpguard naming the option and the value', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session(['--secrets-in-args=off'], { SLOW_TOOLS: '1' });
    try {
      c.send(call(1, 'wait', { seconds: 0, text: TOKEN }));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      await c.finish();
      assert.deepEqual(reached(c), [1]);
    } finally {
      c.cleanup();
    }
    const bad = await runGuard(['--secrets-in-args=maybe', '--', 'python3', fixture('gate-server.py')], { timeout: TIMEOUT }).done;
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr.toString(), /--secrets-in-args .*maybe/);
  });
});

describe('mcpguard policy test', () => {
  test('reports a secrets rule, and the default where no rule names secrets, never the secret', { timeout: TIMEOUT }, async () => {
    const t = tempDir();
    try {
      const empty = join(t.dir, 'empty.json');
      const ruled = join(t.dir, 'ruled.json');
      writeFileSync(empty, JSON.stringify({ rules: [] }));
      writeFileSync(ruled, JSON.stringify({ rules: [{ tool: 'fetch', secrets: true, decision: 'ask' }] }));
      const one = async (file, tool, args) => {
        const r = await runGuard(['policy', 'test', file, '--tool', tool, '--args', JSON.stringify(args), '--json'], { timeout: TIMEOUT }).done;
        assert.equal(r.code, 0, r.stderr);
        assertNoPlanted(r.stdout, 'policy test');
        return JSON.parse(r.stdout);
      };
      assert.deepEqual(await one(empty, 'fetch', { url: `https://x.example/?k=${TOKEN}` }), {
        decision: 'deny',
        rule: null,
        reason: '--secrets-in-args deny-env: the arguments carry the value of $MCPGUARD_TEST_API_TOKEN (at "/url")',
        why: '--secrets-in-args deny-env: the arguments carry the value of $MCPGUARD_TEST_API_TOKEN (at "/url")',
      });
      assert.equal((await one(empty, 'fetch', { h: SK })).decision, 'ask');
      const ruledHit = await one(ruled, 'fetch', { url: TOKEN });
      assert.deepEqual([ruledHit.decision, ruledHit.rule], ['ask', 0], 'the rule, not the default');
      assert.equal((await one(ruled, 'other', { url: TOKEN })).decision, 'allow', 'a policy that names secrets says everything about them');
    } finally {
      t.cleanup();
    }
  });
});
