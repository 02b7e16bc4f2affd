// Per-rule deadlines: `timeout` on a policy rule replaces --call-timeout for
// the calls it matches. A rule with only a timeout sets the deadline and lets
// evaluation go on; a rule with a decision and a timeout does both. Through
// the real binary, with a server whose tools answer after sleeping.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';
import { alwaysDenied, buildPolicy, decide } from '../../dist/gate/policy.js';

after(killStarted);

const TIMEOUT = 30000;
const noEngine = () => {
  throw new Error('no engine');
};

describe('timeout on a rule', () => {
  test('checked at load: a duration; only a rule with nothing but a timeout may go without a decision', () => {
    const load = (rule) => () => buildPolicy({ rules: [rule] }, "'p.json'", noEngine);
    assert.throws(load({ tool: 'slow_*', timeout: 30 }), /policy 'p\.json': rule 1: "timeout" must be a duration such as .* got 30/);
    assert.throws(load({ tool: 'slow_*', timeout: '0ms' }), /rule 1: "timeout" must be a duration .* got "0ms"/);
    assert.throws(load({ tool: 'slow_*', timeout: '30s', reason: 'slow' }), /rule 1: a rule with "limit", "secrets" or "reason" needs a "decision"/);
    assert.throws(load({ tool: 'slow_*' }), /rule 1: "decision" must be one of allow, ask, deny, got null/);
    const p = buildPolicy(
      {
        default: 'ask',
        rules: [
          { tool: 'slow_*', timeout: '30s' },
          { tool: 'slow_b', timeout: '1m', decision: 'deny' },
          { tool: 'slow_*', timeout: '2m', decision: 'allow' },
        ],
      },
      'x',
      noEngine,
    );
    const args = { value: () => ({}) };
    assert.deepEqual(
      decide(p, 'slow_a', args, {}),
      { decision: 'allow', rule: 2, reason: null, timeout: { ms: 30000, rule: 0 } },
      'the first matching timeout',
    );
    assert.deepEqual(decide(p, 'slow_b', args, {}).decision, 'deny', 'a rule with only a timeout decides nothing');
    assert.deepEqual(decide(p, 'fast', args, {}), { decision: 'ask', rule: null, reason: null }, 'no timeout: --call-timeout applies');
    assert.equal(alwaysDenied(p, 'slow_b', {}), true, 'hide_denied looks past a rule with only a timeout');
    assert.equal(alwaysDenied(p, 'slow_a', {}), false);
  });

  test('through the relay: the rule deadline answers a slow tool with the timeout error; other calls keep --call-timeout; the record names the deadline', {
    timeout: TIMEOUT,
  }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    const policy = {
      rules: [
        { tool: 'slow_*', timeout: '300ms' },
        { tool: 'slow_*', when: { required: ['no'] }, decision: 'deny' },
        { tool: 'wait', when: { properties: { seconds: { minimum: 2 } }, required: ['seconds'] }, timeout: '6s', decision: 'allow' },
      ],
    };
    writeFileSync(policyFile, JSON.stringify(policy));
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', '--call-timeout=1500ms', `--policy=${policyFile}`], {
      SLOW_TOOLS: '1',
    });
    const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
    try {
      await c.initialize({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
      await c.waitFor((m) => m.id === 'list', 'tools/list answer');
      c.send(
        call(1, 'slow_wait', { seconds: 4 }), // rule 1's 300 ms
        call(2, 'slow_wait', { no: 1 }), // rule 1 sets a deadline and evaluation goes on: rule 2 denies
        call(3, 'wait', { seconds: 0.3 }), // no rule: --call-timeout 1500 ms, and it answers in time
        call(4, 'wait', { seconds: 2.5 }), // rule 3: allowed, with 6 s
        call(5, 'wait', { seconds: 1.9 }), // no rule: --call-timeout 1500 ms runs out
      );
      const answers = {};
      for (const id of [1, 2, 3, 4, 5]) answers[id] = await c.waitFor((m) => m.id === id, `answer to ${id}`, 15000);
      const r = await c.finish();
      assert.deepEqual(answers[1].error, {
        code: -32001,
        message: 'mcpguard: request timed out after 300 ms (the timeout of policy rule 1)',
        data: { source: 'mcpguard', state: 'timed_out_after_dispatch' },
      });
      assert.match(answers[2].result.content[0].text, /denied by policy rule 2$/);
      assert.equal(answers[3].result.content[0].text, 'slept');
      assert.equal(answers[4].result.content[0].text, 'slept', 'a rule deadline longer than --call-timeout replaces it');
      assert.equal(answers[5].error.message, 'mcpguard: request timed out after 1500 ms (--call-timeout)');
      const atServer = c.atServer();
      assert.deepEqual(
        atServer.filter((m) => m.method === 'tools/call').map((m) => m.id),
        [1, 3, 4, 5],
      );
      const cancel = atServer.find((m) => m.method === 'notifications/cancelled' && m.params.requestId === 1);
      assert.equal(cancel.params.reason, 'mcpguard: the timeout of policy rule 1 300 ms expired');
      assert.deepEqual([endOf(r.records, 1).state, endOf(r.records, 1).detail], ['timed_out_after_dispatch', 'the timeout of policy rule 1 300 ms expired']);
      assert.deepEqual([endOf(r.records, 5).state, endOf(r.records, 5).detail], ['timed_out_after_dispatch', '--call-timeout 1500 ms expired']);
      assert.equal(endOf(r.records, 4).state, 'completed');
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });

  test('2026-07-28: the retry of an approved card keeps the deadline of the rule that asked', { timeout: TIMEOUT }, async () => {
    const t = tempDir();
    const policyFile = join(t.dir, 'policy.json');
    writeFileSync(policyFile, JSON.stringify({ rules: [{ tool: 'slow_*', timeout: '300ms', decision: 'ask' }] }));
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', `--policy=${policyFile}`], { SLOW_TOOLS: '1' });
    const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
    const accept = { 'io.mcpguard/approval': { action: 'accept', content: {} } };
    const slow = (id, extra = {}) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'slow_wait', arguments: { seconds: 4 }, ...extra, _meta: META },
    });
    try {
      c.send(slow(1));
      const card = await c.waitFor((m) => m.id === 1, 'the card');
      assert.equal(card.result.resultType, 'input_required');
      c.send(slow(2, { inputResponses: accept, requestState: card.result.requestState }));
      const two = await c.waitFor((m) => m.id === 2, 'answer to the retry', 15000);
      assert.deepEqual(two.error, {
        code: -32001,
        message: 'mcpguard: request timed out after 300 ms (the timeout of policy rule 1)',
        data: { source: 'mcpguard', state: 'timed_out_after_dispatch' },
      });
      const r = await c.finish();
      assert.equal(endOf(r.records, 2).detail, 'the timeout of policy rule 1 300 ms expired');
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });

  test('policy test names the deadline a rule sets', { timeout: TIMEOUT }, async () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'p.json');
      writeFileSync(file, JSON.stringify({ rules: [{ tool: 'slow_*', timeout: '30s' }] }));
      const json = await runGuard(['policy', 'test', file, '--tool', 'slow_x', '--json'], { timeout: TIMEOUT }).done;
      assert.equal(json.code, 0, json.stderr);
      assert.deepEqual(JSON.parse(json.stdout), {
        decision: 'allow',
        rule: null,
        reason: null,
        why: "the policy's default is allow",
        timeout_ms: 30000,
        timeout_rule: 0,
      });
      const text = await runGuard(['policy', 'test', file, '--tool', 'slow_x'], { timeout: TIMEOUT }).done;
      assert.equal(text.stdout.toString(), "allow: the policy's default is allow\ndeadline: 30000 ms, set by policy rule 1 (instead of --call-timeout)\n");
    } finally {
      t.cleanup();
    }
  });
});
