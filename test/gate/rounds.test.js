// A person's approval and the server's own multi-round flows. The server
// (test/fixtures/hostile-rounds.py) runs a three-round flow of its own after
// the approved call and does not check which tool a retry names, as a careless
// server would not; it records every byte it reads. An approval covers one
// tool and its exact argument bytes, leg by leg; a state of the server's own
// that merely looks like mcpguard's seal is the server's.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';

after(killStarted);

const TIMEOUT = 30000;
const SERVER = ['python3', fixture('hostile-rounds.py')];
const POLICY = {
  default: 'allow',
  rules: [
    { tool: 'pay', decision: 'ask' },
    { tool: 'wipe', decision: 'ask' },
  ],
};
const V = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
const APPROVAL = 'io.mcpguard/approval';
const accept = { [APPROVAL]: { action: 'accept', content: {} } };
const more = { more: { action: 'accept', content: {} } };
const mcall = (id, name, args, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra, _meta: META } });
const lcall = (id, name, args, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra } });
const calledAtServer = (c) => c.callsAtServer();
const bob = { to: 'bob' };

function guarded(args = []) {
  const scratch = tempDir();
  const path = join(scratch.dir, 'policy.json');
  writeFileSync(path, JSON.stringify(POLICY));
  const c = conversation(SERVER, ['--validate-args=on', `--policy=${path}`, ...args], {}, TIMEOUT);
  const cleanup = c.cleanup;
  c.cleanup = () => {
    cleanup();
    scratch.cleanup();
  };
  return c;
}

describe('an approval covers one tool, its exact argument bytes, leg by leg', () => {
  test('2026-07-28: after pay is approved, a "retry" naming wipe with the same arguments and the server\'s state gets its own card; pay\'s legs go on without one', {
    timeout: TIMEOUT,
  }, async () => {
    const c = guarded();
    try {
      c.send(mcall(1, 'pay', bob));
      const card = await c.waitFor((m) => m.id === 1, 'the card for pay');
      c.send(mcall(2, 'pay', bob, { inputResponses: accept, requestState: card.result.requestState }));
      const server = await c.waitFor((m) => m.id === 2, "the server's own input_required");
      assert.equal(server.result.requestState, 'srv-1');
      // Byte-identical arguments and the server's state, another tool.
      c.send(mcall(3, 'wipe', bob, { inputResponses: more, requestState: 'srv-1' }));
      const wipe = await c.waitFor((m) => m.id === 3, 'the answer to wipe');
      assert.equal(wipe.result.resultType, 'input_required');
      assert.ok(wipe.result.inputRequests[APPROVAL], `wipe gets a card of its own: ${JSON.stringify(wipe)}`);
      assert.match(wipe.result.inputRequests[APPROVAL].params.message, /Tool: wipe/);
      // pay's own flow goes on: its next two legs are covered by the approval, once each.
      c.send(mcall(4, 'pay', bob, { inputResponses: more, requestState: 'srv-1' }));
      assert.equal((await c.waitFor((m) => m.id === 4, 'answer to 4')).result.requestState, 'srv-2');
      c.send(mcall(5, 'pay', bob, { inputResponses: more, requestState: 'srv-2' }));
      assert.equal((await c.waitFor((m) => m.id === 5, 'answer to 5')).result.resultType, 'complete');
      // The chain has ended: the same state again is a call of its own, and asks.
      c.send(mcall(6, 'pay', bob, { inputResponses: more, requestState: 'srv-2' }));
      assert.ok((await c.waitFor((m) => m.id === 6, 'answer to 6')).result.inputRequests?.[APPROVAL], 'asked again');
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [2, 4, 5], 'wipe never reached the server');
      const [one, two, three, four, five] = [1, 2, 3, 4, 5].map((id) => endOf(r.records, id));
      assert.equal(three.state, 'input_required');
      assert.equal(three.continues, null, 'wipe is not a leg of pay');
      assert.equal(three.decision.channel, 'input_required');
      assert.deepEqual([two.continues, four.continues, five.continues], [one.call_id, two.call_id, four.call_id]);
      assert.equal(five.decision.reason, 'approved on an earlier leg of this call');
    } finally {
      c.cleanup();
    }
  });

  test("legacy: pay approved through elicitation carries over pay's own next legs, never to wipe", { timeout: TIMEOUT }, async () => {
    const c = guarded();
    try {
      c.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } },
      });
      await c.waitFor((m) => m.id === 'init', 'initialize answer');
      c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const cards = () => c.out().filter((m) => m.method === 'elicitation/create');
      c.send(lcall(1, 'pay', bob));
      const first = await c.waitFor((m) => m.method === 'elicitation/create', 'the card for pay');
      c.send({ jsonrpc: '2.0', id: first.id, result: { action: 'accept', content: {} } });
      assert.equal((await c.waitFor((m) => m.id === 1, 'answer to 1')).result.requestState, 'srv-1');
      c.send(lcall(2, 'pay', bob, { inputResponses: more, requestState: 'srv-1' }));
      // Without the carried approval this leg would be asked again; answer such a card, so the old hole shows below.
      for (let i = 0, answered = false; i < 100 && !c.out().some((m) => m.id === 2); i++) {
        const again = cards().find((m) => m.id !== first.id);
        if (again && !answered) c.send({ jsonrpc: '2.0', id: again.id, result: { action: 'accept', content: {} } });
        answered ||= again !== undefined;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.equal((await c.waitFor((m) => m.id === 2, 'answer to 2')).result.requestState, 'srv-2');
      c.send(lcall(3, 'wipe', bob, { inputResponses: more, requestState: 'srv-2' }));
      const wipeCard = await c.waitFor((m) => m.method === 'elicitation/create' && /Tool: wipe/.test(m.params.message), 'a card for wipe', 5000);
      c.send({ jsonrpc: '2.0', id: wipeCard.id, result: { action: 'decline' } });
      const three = await c.waitFor((m) => m.id === 3, 'answer to 3');
      assert.match(three.result.content[0].text, /answered decline/);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [1, 2], 'wipe never reached the server');
      assert.equal(cards().length, 2, 'one card for pay (its second leg was covered), one for wipe');
      assert.equal(endOf(r.records, 2).decision.reason, 'approved on an earlier leg of this call');
      assert.equal(endOf(r.records, 3).state, 'denied');
    } finally {
      c.cleanup();
    }
  });
});

describe("a server's own state is the server's", () => {
  test('a requestState of the server\'s that starts with "mcpguard1." passes through unchanged on an allowed tool', { timeout: TIMEOUT }, async () => {
    const c = guarded();
    try {
      c.send(mcall(1, 'stamp', {}));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      const state = one.result.requestState;
      assert.match(state, /^mcpguard1\./);
      const retry = mcall(2, 'stamp', {}, { inputResponses: more, requestState: state });
      c.send(retry);
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      assert.equal(two.result.resultType, 'complete', JSON.stringify(two));
      assert.equal(two.result.content[0].text, 'stamp done');
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [1, 2]);
      assert.deepEqual(
        c.atServer().find((m) => m.id === 2),
        retry,
        'the retry reached the server as the client sent it',
      );
      const end = endOf(r.records, 2);
      assert.equal(end.state, 'completed');
      assert.equal(end.continues, endOf(r.records, 1).call_id);
      assert.equal(end.decision, null, 'the gate let it pass like any allowed call');
    } finally {
      c.cleanup();
    }
  });
});
