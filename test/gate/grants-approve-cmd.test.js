// --approve-cmd's answer with a scope (src/gate/approve-cmd.ts): a JSON
// object on its stdout, `{"scope":"session-tool"}`, grants; anything else it
// prints is an approval once, as before grants; a scope the action did not
// offer denies. The approver is test/fixtures/approve.py, which counts its
// runs; the server records every line it reads.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PLANTED_SHAPES, fixture, killStarted, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';

const TIMEOUT = 30000;
const GATE_SERVER = () => ['python3', fixture('gate-server.py')];
const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  killStarted();
});

describe('--approve-cmd answers a scope on its stdout', () => {
  const ask = { default: 'allow', rules: [{ tool: 'delete_file', decision: 'ask' }] };
  const init = {
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
  };
  const call = (id, path) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'delete_file', arguments: { path } } });

  /** Three delete_file calls under /tmp through a client that cannot show a card; the approver prints `answer`. */
  async function approverRun(answer, policy = ask, paths = ['/tmp/1', '/tmp/2', '/tmp/3']) {
    const scratch = tempDir('mcpguard-grants-cmd-');
    cleanups.push(scratch.cleanup);
    const policyFile = join(scratch.dir, 'policy.json');
    const runs = join(scratch.dir, 'runs');
    writeFileSync(policyFile, JSON.stringify(policy));
    const c = conversation(GATE_SERVER(), ['--validate-args=on', `--policy=${policyFile}`, `--approve-cmd=python3 ${fixture('approve.py')}`], {
      APPROVE_RUNS: runs,
      ...(answer === undefined ? {} : { APPROVE_ANSWER: answer }),
    });
    cleanups.push(c.cleanup);
    c.send(init);
    await c.waitFor((m) => m.id === 'init', 'initialize answer');
    c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const answers = [];
    for (const [i, path] of paths.entries()) {
      const id = i + 1;
      c.send(call(id, path));
      answers.push(await c.waitFor((m) => m.id === id, `answer to ${id}`));
    }
    const r = await c.finish();
    const ran = existsSync(runs) ? readFileSync(runs, 'utf8').split('\n').filter(Boolean).length : 0;
    const reached = c.callsAtServer();
    return { answers, records: r.records, ran, reached };
  }

  test('{"scope":"session-tool"}: the approver runs once, the later calls reach the server by the grant', { timeout: TIMEOUT }, async () => {
    const run = await approverRun('{"scope": "session-tool"}\n');
    assert.equal(run.ran, 1);
    assert.deepEqual(run.reached, [1, 2, 3]);
    const first = endOf(run.records, 1);
    assert.deepEqual([first.decision.by, first.decision.channel, first.decision.scope], ['approve-cmd', 'approve-cmd', 'session-tool']);
    for (const id of [2, 3]) assert.deepEqual(endOf(run.records, id).decision.grant.call_id, first.call_id);
    assert.equal(endOf(run.records, 2).decision.grant.channel, 'approve-cmd');
  });

  test('no scope (an old approver: nothing, or text, on stdout) is once: the approver runs for each call', { timeout: TIMEOUT }, async () => {
    for (const answer of [undefined, 'approved, go ahead\n']) {
      const run = await approverRun(answer);
      assert.equal(run.ran, 3, String(answer));
      assert.deepEqual(run.reached, [1, 2, 3]);
      assert.equal(endOf(run.records, 1).decision.scope, 'once');
    }
  });

  test('a scope the action did not offer, or an unreadable object, denies; zero bytes at the server', { timeout: TIMEOUT }, async () => {
    for (const answer of ['{"scope": "forever"}', '{"scope": ']) {
      const run = await approverRun(answer);
      assert.equal(run.ran, 3, answer);
      assert.deepEqual(run.reached, [], answer);
      assert.match(run.answers[0].result.content[0].text, /exited 0, but its answer does not fit the card/);
    }
  });

  test("a grant never answers a question about a secret: a credential shape in a granted tool's arguments runs the approver again", {
    timeout: TIMEOUT,
  }, async () => {
    // The policy's default asks (rule null), and so does --secrets-in-args for a shape (rule null): one question in the
    // records' terms, but the grant was given for arguments a person saw, not for a token the model put in later.
    const shape = PLANTED_SHAPES.MCPGUARD_TEST_SHAPE_OPENAI.value;
    const run = await approverRun('{"scope": "session-tool"}\n', { default: 'ask' }, ['/tmp/1', `/tmp/${shape}`, '/tmp/3']);
    assert.equal(run.ran, 2, 'the grant covered call 3, not call 2');
    assert.deepEqual(
      [1, 2, 3].map((id) => endOf(run.records, id).decision.by),
      ['approve-cmd', 'approve-cmd', 'grant'],
    );
    assert.match(endOf(run.records, 2).decision.reason, /--secrets-in-args deny-env: the arguments carry a token/);
  });
});
