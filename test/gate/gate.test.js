// The gate: arguments against the server's own inputSchema, a policy, and a
// person's approval, all before a byte of the call reaches the server. The
// server is a Python fixture that records every line it reads, so each
// refusal can be shown to leave zero bytes there; the client is this file.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { callEnds, conversation, endOf } from '../helpers/conversation.js';

after(killStarted);

const TIMEOUT = 30000;
const SERVER = ['python3', fixture('gate-server.py')];
const init = (capabilities = {}) => ({
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 't', version: '1' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const calledAtServer = (c) => c.callsAtServer();

/** A legacy session, initialized, with these mcpguard options and (optionally) a policy file. */
async function legacy(args = [], { policy, capabilities, env } = {}) {
  let extra = [...args];
  let scratch = null;
  if (policy !== undefined) {
    scratch = tempDir();
    const path = join(scratch.dir, 'policy.json');
    writeFileSync(path, JSON.stringify(policy));
    extra = [`--policy=${path}`, ...extra];
  }
  const c = conversation(SERVER, ['--validate-args=on', ...extra], env);
  c.send(init(capabilities));
  await c.waitFor((m) => m.id === 'init', 'initialize answer');
  c.send(initialized);
  const cleanup = c.cleanup;
  c.cleanup = () => {
    cleanup();
    scratch?.cleanup();
  };
  return c;
}

describe("arguments against the server's inputSchema", () => {
  test('bad arguments: a tool execution error naming the path and keyword; zero bytes at the server; one rejected record', { timeout: TIMEOUT }, async () => {
    const c = await legacy();
    try {
      c.send(call(1, 'echo', { text: 5 }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.result.isError, true);
      assert.match(one.result.content[0].text, /^mcpguard refused this call before it reached the server: Invalid arguments for tool "echo"/);
      assert.match(one.result.content[0].text, /- \/text: type: must be string/, 'names the path and the keyword');
      c.send(call(2, 'echo', { text: 'hi' }));
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      assert.equal(two.result.isError, undefined);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [2], 'the refused call never reached the server');
      const own = c.atServer().filter((m) => m.method === 'tools/list');
      assert.equal(own.length, 1, 'mcpguard learned the tools with one tools/list of its own');
      assert.match(String(own[0].id), /^mcpguard-tools-list-/);
      assert.equal(r.out.filter((m) => m.id === own[0].id).length, 0, 'its answer was not forwarded');
      assert.equal(r.out.filter((m) => m.id === 1).length, 1, 'exactly one answer');
      const ends = callEnds(r.records).filter((x) => x.request_id === 1);
      assert.equal(ends.length, 1);
      assert.equal(ends[0].state, 'rejected');
      assert.equal(ends[0].decision.by, 'schema');
    } finally {
      c.cleanup();
    }
  });

  test('an unknown tool is a protocol error (-32602), never forwarded', { timeout: TIMEOUT }, async () => {
    const c = await legacy();
    try {
      c.send({ jsonrpc: '2.0', id: 'l', method: 'tools/list' });
      await c.waitFor((m) => m.id === 'l', 'tools/list');
      c.send(call(1, 'nope', {}));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.error.code, -32602);
      assert.equal(one.error.data.source, 'mcpguard');
      assert.equal(one.error.data.rule, 'unknown_tool');
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), []);
      assert.equal(c.atServer().filter((m) => m.method === 'tools/list').length, 2, "the client's list, then mcpguard's own for the unknown name");
      assert.equal(endOf(r.records, 1).state, 'rejected');
    } finally {
      c.cleanup();
    }
  });
});

describe('policy', () => {
  const policy = {
    default: 'allow',
    hide_denied: true,
    rules: [
      { tool: 'delete_*', decision: 'deny', reason: 'no deletes here' },
      { tool: 'exec', when: { properties: { command: { pattern: '^rm ' } }, required: ['command'] }, decision: 'deny', reason: 'no rm from agents' },
    ],
  };

  test('a deny rule answers a tool execution error naming the rule and its reason; zero bytes at the server; one denied record', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await legacy([], { policy });
    try {
      c.send(call(1, 'exec', { command: 'rm -rf /' }), call(2, 'exec', { command: 'ls' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      await c.waitFor((m) => m.id === 2, 'answer to 2');
      assert.equal(one.result.isError, true);
      assert.match(one.result.content[0].text, /denied by policy rule 2 \(no rm from agents\)/, 'people count rules from 1');
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [2]);
      const end = endOf(r.records, 1);
      assert.equal(end.state, 'denied');
      assert.equal(end.decision.by, 'policy');
      assert.equal(end.decision.rule, 1, "the record keeps the rule's 0-based index");
      const activity = (await runGuard(['activity', `--record-dir=${c.recordDir}`], { timeout: TIMEOUT }).done).stdout.toString();
      assert.match(activity, / denied .*\n {4}denied by policy rule 2 \(no rm from agents\)/, 'activity shows the refusal, and its reason on the line below');
    } finally {
      c.cleanup();
    }
  });

  test('hide_denied removes always-denied tools from the tools/list the client sees, and keeps every other byte', { timeout: TIMEOUT }, async () => {
    const c = await legacy([], { policy });
    try {
      c.send({ jsonrpc: '2.0', id: 'l', method: 'tools/list' });
      const list = await c.waitFor((m) => m.id === 'l', 'tools/list');
      assert.deepEqual(
        list.result.tools.map((t) => t.name),
        ['echo', 'exec', 'confirm_more', 'change_list', 'count'],
        'exec stays: only some of its calls are denied',
      );
      await c.finish();
    } finally {
      c.cleanup();
    }
  });
});

test('--validate-args off: a rule on annotations applies to a tool never listed (unknown is not "not destructive"); a listed one is judged by its own', {
  timeout: TIMEOUT,
}, async () => {
  const rules = {
    rules: [
      { annotations: { destructiveHint: true }, decision: 'deny', reason: 'no destructive tools' },
      { annotations: { readOnlyHint: true }, decision: 'ask' },
    ],
  };
  const c = await legacy(['--validate-args=off'], { policy: rules });
  try {
    c.send(call(1, 'delete_file', { path: '/tmp/x' }));
    const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
    assert.equal(one.result.isError, true);
    assert.match(one.result.content[0].text, /denied by policy rule 1 \(no destructive tools; the tool's annotations are unknown/);
    c.send({ jsonrpc: '2.0', id: 'l', method: 'tools/list' });
    await c.waitFor((m) => m.id === 'l', 'tools/list');
    c.send(call(2, 'exec', { command: 'ls' }), call(3, 'delete_file', { path: '/tmp/x' }));
    const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
    const three = await c.waitFor((m) => m.id === 3, 'answer to 3');
    assert.equal(two.result.isError, undefined, 'exec is listed without annotations: no rule applies');
    assert.match(three.result.content[0].text, /denied by policy rule 1 \(no destructive tools\)$/);
    const r = await c.finish();
    assert.deepEqual(calledAtServer(c), [2], 'the unlisted destructive tool never reached the server');
    assert.equal(endOf(r.records, 1).decision.rule, 0);
  } finally {
    c.cleanup();
  }
});

describe('approval, legacy era (elicitation through the client)', () => {
  const ask = { default: 'allow', rules: [{ tool: 'delete_file', decision: 'ask' }] };
  const card = (c) => c.waitFor((m) => m.method === 'elicitation/create', 'the approval card');

  test('accept: the card names the tool and the exact arguments; the call is dispatched after the answer; the records keep the card', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await legacy([], { policy: ask, capabilities: { elicitation: {} } });
    try {
      c.send(call(1, 'delete_file', { path: '/tmp/x' }));
      const question = await card(c);
      assert.match(String(question.id), /^mcpguard-approval-/);
      assert.match(question.params.message, /Tool: delete_file/);
      assert.match(question.params.message, /\{"path":"\/tmp\/x"\}/);
      // 2025-06-18: the scope's choices as enum and enumNames, `once` first and by default.
      const { scope } = question.params.requestedSchema.properties;
      assert.deepEqual([scope.type, scope.enum, scope.default], ['string', ['once', 'session-same-arguments', 'session-tool'], 'once']);
      assert.equal(scope.enumNames.length, 3);
      assert.equal(question.params.mode, undefined, 'form mode is named from 2025-11-25');
      assert.deepEqual(calledAtServer(c), [], 'nothing reaches the server while the card is open');
      c.send({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: {} } });
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.result.isError, undefined);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [1]);
      assert.equal(c.atServer().filter((m) => m.id === question.id).length, 0, 'the answer to the card never reaches the server');
      const attempt = r.records.find((x) => x.type === 'call_attempt' && x.request_id === 1);
      assert.equal(attempt.decision.by, 'approval');
      assert.equal(attempt.decision.channel, 'elicitation');
      assert.equal(attempt.decision.card.answer, 'accept');
      assert.match(attempt.decision.card.sha256, /^[0-9a-f]{64}$/);
      assert.ok(attempt.decision.card.shown_at <= attempt.decision.card.answered_at);
      assert.equal(endOf(r.records, 1).state, 'completed');
    } finally {
      c.cleanup();
    }
  });

  test('decline: denied, a tool execution error, zero bytes at the server', { timeout: TIMEOUT }, async () => {
    const c = await legacy([], { policy: ask, capabilities: { elicitation: {} } });
    try {
      c.send(call(1, 'delete_file', { path: '/tmp/x' }));
      const question = await card(c);
      c.send({ jsonrpc: '2.0', id: question.id, result: { action: 'decline' } });
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.result.isError, true);
      assert.match(one.result.content[0].text, /the person answered decline/);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), []);
      assert.equal(endOf(r.records, 1).state, 'denied');
    } finally {
      c.cleanup();
    }
  });

  test('no answer: denied at the wall-clock deadline; the card is withdrawn at the client', { timeout: TIMEOUT }, async () => {
    const c = await legacy(['--approval-timeout=400'], { policy: ask, capabilities: { elicitation: {} } });
    try {
      c.send(call(1, 'delete_file', { path: '/tmp/x' }));
      const question = await card(c);
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.match(one.result.content[0].text, /no answer within --approval-timeout 400 ms/);
      const withdrawn = await c.waitFor((m) => m.method === 'notifications/cancelled', 'the card withdrawn');
      assert.equal(withdrawn.params.requestId, question.id);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), []);
      assert.equal(endOf(r.records, 1).state, 'denied');
      assert.equal(endOf(r.records, 1).decision.card.answer, 'timed_out');
    } finally {
      c.cleanup();
    }
  });

  test('a client that cannot be asked, and no --approve-cmd: denied at once, saying why', { timeout: TIMEOUT }, async () => {
    const c = await legacy([], { policy: ask });
    try {
      c.send(call(1, 'delete_file', { path: '/tmp/x' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.match(one.result.content[0].text, /no way to ask/);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), []);
      assert.equal(endOf(r.records, 1).state, 'denied');
    } finally {
      c.cleanup();
    }
  });

  test('--approve-cmd: exit 0 approves, anything else denies; the action arrives as JSON on its stdin', { timeout: TIMEOUT }, async () => {
    const c = await legacy([`--approve-cmd=python3 ${fixture('approve.py')}`], { policy: ask });
    try {
      c.send(call(1, 'delete_file', { path: '/tmp/ok' }), call(2, 'delete_file', { path: '/etc/passwd' }));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      assert.match(two.result.content[0].text, /--approve-cmd exited 3: only \/tmp/);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [1]);
      assert.equal(endOf(r.records, 1).decision.by, 'approve-cmd');
      assert.equal(endOf(r.records, 2).state, 'denied');
    } finally {
      c.cleanup();
    }
  });

  test('--approve-cmd is resolved once at start: an approver placed later in an earlier PATH directory decides nothing', { timeout: TIMEOUT }, async () => {
    const scratch = tempDir();
    const early = join(scratch.dir, 'early');
    const late = join(scratch.dir, 'late');
    mkdirSync(early);
    mkdirSync(late);
    // The approver found at start approves (and says so); the one planted after start would deny.
    writeFileSync(join(late, 'approver'), `#!/bin/sh\ntouch '${join(scratch.dir, 'ran-late')}'\nexit 0\n`, { mode: 0o755 });
    const c = await legacy(['--approve-cmd=approver'], { policy: ask, env: { PATH: `${early}:${late}:${process.env.PATH}` } });
    try {
      writeFileSync(join(early, 'approver'), `#!/bin/sh\ntouch '${join(scratch.dir, 'ran-planted')}'\nexit 1\n`, { mode: 0o755 });
      c.send(call(1, 'delete_file', { path: '/tmp/x' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.result.isError, undefined, JSON.stringify(one));
      await c.finish();
      assert.deepEqual(calledAtServer(c), [1], 'the approver resolved at start approved');
      assert.equal(existsSync(join(scratch.dir, 'ran-planted')), false, 'the planted approver never ran');
      assert.equal(existsSync(join(scratch.dir, 'ran-late')), true);
    } finally {
      c.cleanup();
      scratch.cleanup();
    }
  });

  test('a client cancel of a waiting call ends it before dispatch and withdraws the card; nothing reaches the server', { timeout: TIMEOUT }, async () => {
    const c = await legacy([], { policy: ask, capabilities: { elicitation: {} } });
    try {
      c.send(call(1, 'delete_file', { path: '/tmp/x' }));
      const question = await card(c);
      c.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'user' } });
      const withdrawn = await c.waitFor((m) => m.method === 'notifications/cancelled', 'the card withdrawn');
      assert.equal(withdrawn.params.requestId, question.id);
      const r = await c.finish();
      assert.equal(r.out.filter((m) => m.id === 1).length, 0, 'a cancelled request gets no answer');
      assert.equal(c.atServer().filter((m) => m.method === 'tools/call' || m.method === 'notifications/cancelled').length, 0);
      assert.equal(endOf(r.records, 1).state, 'cancelled_before_dispatch');
    } finally {
      c.cleanup();
    }
  });

  test('one card open does not hold anything else: 100 calls pass meanwhile', { timeout: TIMEOUT }, async () => {
    const c = await legacy([], { policy: ask, capabilities: { elicitation: {} } });
    try {
      c.send(call(0, 'delete_file', { path: '/tmp/x' }));
      const question = await card(c);
      c.send(...Array.from({ length: 100 }, (_, i) => call(i + 1, 'echo', { text: `n${i}` })));
      await c.waitFor((m) => m.id === 100, 'the 100th answer');
      assert.equal(c.out().filter((m) => typeof m.id === 'number' && m.id >= 1 && m.result).length, 100);
      assert.equal(c.out().filter((m) => m.id === 0).length, 0, 'the card is still open');
      c.send({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: {} } });
      await c.waitFor((m) => m.id === 0, 'answer to 0');
      await c.finish();
    } finally {
      c.cleanup();
    }
  });
});

describe('approval, 2026-07-28 (input_required and a sealed retry)', () => {
  const V = '2026-07-28';
  const META = { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } };
  const mcall = (id, name, args, extra = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...extra, _meta: META } });
  const accept = { 'io.mcpguard/approval': { action: 'accept', content: {} } };
  const policy = {
    default: 'allow',
    rules: [
      { tool: 'delete_file', decision: 'ask' },
      { tool: 'confirm_more', decision: 'ask' },
    ],
  };

  async function modern(args = []) {
    const scratch = tempDir();
    const path = join(scratch.dir, 'policy.json');
    writeFileSync(path, JSON.stringify(policy));
    const c = conversation(SERVER, ['--validate-args=on', `--policy=${path}`, ...args]);
    const cleanup = c.cleanup;
    c.cleanup = () => {
      cleanup();
      scratch.cleanup();
    };
    return c;
  }

  test("accept: the card travels as input_required; the retry reaches the server without mcpguard's answer and state", { timeout: TIMEOUT }, async () => {
    const c = await modern();
    try {
      c.send(mcall(1, 'delete_file', { path: '/tmp/x' }));
      const one = await c.waitFor((m) => m.id === 1, 'the card');
      assert.equal(one.result.resultType, 'input_required');
      const question = one.result.inputRequests['io.mcpguard/approval'];
      assert.equal(question.method, 'elicitation/create');
      assert.match(question.params.message, /Tool: delete_file/);
      c.send(mcall(2, 'delete_file', { path: '/tmp/x' }, { inputResponses: accept, requestState: one.result.requestState }));
      const two = await c.waitFor((m) => m.id === 2, 'answer to the retry');
      assert.equal(two.result.resultType, 'complete');
      assert.deepEqual(JSON.parse(two.result.content[0].text).keys, ['_meta', 'arguments', 'name'], 'the server saw the call as it was before mcpguard asked');
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [2]);
      const [first, retry] = [endOf(r.records, 1), endOf(r.records, 2)];
      assert.equal(first.state, 'input_required');
      assert.equal(retry.state, 'completed');
      assert.equal(retry.continues, first.call_id);
      assert.equal(retry.decision.channel, 'input_required');
    } finally {
      c.cleanup();
    }
  });

  test('a forged or altered retry is refused: changed arguments, a replayed state, a state from another call, a decline; an altered state is asked about afresh', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await modern();
    try {
      c.send(mcall(1, 'delete_file', { path: '/tmp/a' }), mcall(2, 'delete_file', { path: '/tmp/b' }));
      const a = await c.waitFor((m) => m.id === 1, 'card a');
      const b = await c.waitFor((m) => m.id === 2, 'card b');
      const stateA = a.result.requestState;
      c.send(mcall(3, 'delete_file', { path: '/etc/passwd' }, { inputResponses: accept, requestState: stateA }));
      const changed = await c.waitFor((m) => m.id === 3, 'answer to 3');
      assert.match(changed.result.content[0].text, /not the one that was approved/);
      c.send(mcall(4, 'delete_file', { path: '/tmp/b' }, { inputResponses: accept, requestState: stateA }));
      const other = await c.waitFor((m) => m.id === 4, 'answer to 4');
      assert.equal(other.result.isError, true, 'a state from another call');
      c.send(mcall(5, 'delete_file', { path: '/tmp/b' }, { inputResponses: accept, requestState: b.result.requestState }));
      await c.waitFor((m) => m.id === 5, 'answer to 5');
      c.send(mcall(6, 'delete_file', { path: '/tmp/b' }, { inputResponses: accept, requestState: b.result.requestState }));
      const replayed = await c.waitFor((m) => m.id === 6, 'answer to 6');
      assert.match(replayed.result.content[0].text, /already used/);
      c.send(mcall(7, 'delete_file', { path: '/tmp/c' }));
      const cc = await c.waitFor((m) => m.id === 7, 'card c');
      c.send(
        mcall(
          8,
          'delete_file',
          { path: '/tmp/c' },
          { inputResponses: { 'io.mcpguard/approval': { action: 'decline' } }, requestState: cc.result.requestState },
        ),
      );
      const declined = await c.waitFor((m) => m.id === 8, 'answer to 8');
      assert.match(declined.result.content[0].text, /answered decline/);
      // A state that does not verify is not mcpguard's (it would be the server's): the call is asked about afresh.
      c.send(mcall(9, 'delete_file', { path: '/tmp/c' }, { inputResponses: accept, requestState: `${cc.result.requestState.slice(0, -2)}xx` }));
      const altered = await c.waitFor((m) => m.id === 9, 'answer to 9');
      assert.equal(altered.result.resultType, 'input_required');
      assert.notEqual(altered.result.requestState, cc.result.requestState, 'a card of its own');
      assert.ok(altered.result.inputRequests['io.mcpguard/approval']);
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [5], 'only the one good retry reached the server');
      for (const id of [3, 4, 6, 8]) assert.equal(endOf(r.records, id).state, 'denied', `call ${id}`);
      assert.equal(endOf(r.records, 9).state, 'input_required');
    } finally {
      c.cleanup();
    }
  });

  test('composes with a server that asks for input of its own after the approval: its state passes untouched, no second card', {
    timeout: TIMEOUT,
  }, async () => {
    const c = await modern();
    try {
      c.send(mcall(1, 'confirm_more', {}));
      const card = await c.waitFor((m) => m.id === 1, 'the card');
      c.send(mcall(2, 'confirm_more', {}, { inputResponses: accept, requestState: card.result.requestState }));
      const server = await c.waitFor((m) => m.id === 2, "the server's own input_required");
      assert.equal(server.result.requestState, 'srv-1');
      assert.ok(server.result.inputRequests.more);
      c.send(mcall(3, 'confirm_more', {}, { inputResponses: { more: { action: 'accept', content: {} } }, requestState: 'srv-1' }));
      const done = await c.waitFor((m) => m.id === 3, 'the final answer');
      assert.equal(done.result.resultType, 'complete');
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [2, 3]);
      assert.equal(c.atServer().find((m) => m.id === 3).params.requestState, 'srv-1');
      const legs = [1, 2, 3].map((id) => endOf(r.records, id));
      assert.deepEqual(
        legs.map((l) => l.state),
        ['input_required', 'input_required', 'completed'],
      );
      assert.ok(
        legs.every((l) => l.chain === legs[0].call_id),
        'one chain',
      );
    } finally {
      c.cleanup();
    }
  });
});

describe('structuredContent against outputSchema', () => {
  test('report (the default): a mismatch is forwarded as it came, flagged on the call, said once', { timeout: TIMEOUT }, async () => {
    const c = await legacy();
    try {
      c.send(call(1, 'count', { n: 'many' }), call(2, 'count', { n: 'more' }), call(3, 'count', { n: 3 }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      await c.waitFor((m) => m.id === 3, 'answer to 3');
      assert.deepEqual(one.result.structuredContent, { n: 'many' });
      const r = await c.finish();
      assert.deepEqual(endOf(r.records, 1).flags, ['output_schema_mismatch']);
      assert.equal(endOf(r.records, 3).flags, null);
      assert.equal(r.stderr.split('outputSchema').length - 1, 1, r.stderr);
    } finally {
      c.cleanup();
    }
  });

  test('--validate-output enforce: the client gets a tool error instead, saying the tool ran', { timeout: TIMEOUT }, async () => {
    const c = await legacy(['--validate-output=enforce']);
    try {
      c.send(call(1, 'count', { n: 'many' }), call(2, 'count', { n: 2 }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      assert.equal(one.result.isError, true);
      assert.match(one.result.content[0].text, /^mcpguard replaced this result: the tool ran, but The structured result of tool "count" does not match/);
      assert.deepEqual(two.result.structuredContent, { n: 2 });
      const r = await c.finish();
      assert.deepEqual(calledAtServer(c), [1, 2], 'the tool did run');
      assert.equal(endOf(r.records, 1).state, 'completed');
    } finally {
      c.cleanup();
    }
  });

  test('report (the default): a tool error (isError: true) is forwarded as it came, not flagged, no warning', { timeout: TIMEOUT }, async () => {
    const c = await legacy();
    try {
      c.send(call(1, 'count', { n: 'fail' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.result.content[0].text, 'Access denied - path outside allowed directories');
      const r = await c.finish();
      assert.equal(endOf(r.records, 1).state, 'tool_error');
      assert.equal(endOf(r.records, 1).flags, null, 'not flagged output_schema_mismatch');
      assert.ok(!r.stderr.includes('outputSchema') && !r.stderr.includes('does not match'), r.stderr);
    } finally {
      c.cleanup();
    }
  });

  test('a tool error (isError: true) is not checked: its own words reach the client, under enforce too, with no warning', { timeout: TIMEOUT }, async () => {
    const c = await legacy(['--validate-output=enforce']);
    try {
      c.send(call(1, 'count', { n: 'fail' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.result.isError, true);
      assert.equal(one.result.content[0].text, 'Access denied - path outside allowed directories');
      assert.equal(one.result._meta, undefined, "the result is the server's, not mcpguard's");
      const r = await c.finish();
      assert.equal(endOf(r.records, 1).state, 'tool_error');
      assert.equal(endOf(r.records, 1).flags, null);
      assert.ok(!r.stderr.includes('outputSchema') && !r.stderr.includes('does not match'), r.stderr);
    } finally {
      c.cleanup();
    }
  });
});

describe('the tools mcpguard knows', () => {
  test('a list-changed notification makes mcpguard learn the tools again before the next call', { timeout: TIMEOUT }, async () => {
    const c = await legacy();
    try {
      c.send({ jsonrpc: '2.0', id: 'l', method: 'tools/list' });
      await c.waitFor((m) => m.id === 'l', 'tools/list');
      c.send(call(1, 'echo', { text: 'a' }));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(c.atServer().filter((m) => m.method === 'tools/list').length, 1, "known from the client's list");
      c.send(call(2, 'change_list', {}));
      await c.waitFor((m) => m.method === 'notifications/tools/list_changed', 'list changed');
      c.send(call(3, 'echo', { text: 'b' }));
      await c.waitFor((m) => m.id === 3, 'answer to 3');
      const lists = c.atServer().filter((m) => m.method === 'tools/list');
      assert.equal(lists.length, 2, 'learned again, with a list of its own');
      assert.match(String(lists[1].id), /^mcpguard-tools-list-/);
      await c.finish();
    } finally {
      c.cleanup();
    }
  });

  test('pages: mcpguard follows nextCursor in its own tools/list', { timeout: TIMEOUT }, async () => {
    const c = await legacy([], { env: { PAGE_SIZE: '1' } });
    try {
      c.send(call(1, 'exec', { command: 'ls' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(one.result.isError, undefined, JSON.stringify(one));
      const own = c.atServer().filter((m) => m.method === 'tools/list');
      assert.deepEqual(
        own.map((m) => m.params?.cursor ?? null),
        [null, '1', '2', '3', '4', '5'],
        'every page, one tool each',
      );
      await c.finish();
    } finally {
      c.cleanup();
    }
  });
});

describe('options checked at start (exit 125, nothing started)', () => {
  const cases = [
    [{ rules: [{ tool: 'x', decision: 'maybe' }] }, /rule 1: "decision" must be one of allow, ask, deny, got "maybe"/],
    [
      {
        rules: [
          { tool: 'x', decision: 'deny' },
          { tool: 'y', when: { type: 'strin' }, decision: 'deny' },
        ],
      },
      /rule 2: "when" is not a usable JSON Schema/,
    ],
    [{ rules: [{ tool: 'x', decision: 'deny', extra: 1 }] }, /rule 1: unknown key "extra"/],
    [{ rules: [{ annotations: { readOnlyHint: true }, decision: 'allow' }] }, /rule 1: a rule that matches "annotations" may only ask or deny/],
    [{ default: 'allow', hide: true }, /unknown key "hide"/],
    ['{not json', /not JSON/],
  ];
  for (const [policy, message] of cases) {
    test(`policy ${typeof policy === 'string' ? policy : JSON.stringify(policy)}`, { timeout: TIMEOUT }, async () => {
      const { dir, cleanup } = tempDir();
      try {
        const path = join(dir, 'policy.json');
        const marker = join(dir, 'started');
        writeFileSync(path, typeof policy === 'string' ? policy : JSON.stringify(policy));
        const r = await runGuard([`--policy=${path}`, '--', 'sh', '-c', `touch '${marker}'`], { timeout: TIMEOUT }).done;
        assert.equal(r.code, 125, r.stderr);
        assert.match(r.stderr, message);
        assert.ok(r.stderr.includes(path), 'names the file');
        assert.equal(existsSync(marker), false, 'the server never started');
      } finally {
        cleanup();
      }
    });
  }

  test('a policy inside --config (the object itself) works like a file', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const config = join(dir, 'config.json');
      writeFileSync(config, JSON.stringify({ 'validate-args': 'on', policy: { rules: [{ tool: 'exec', decision: 'deny', reason: 'from config' }] } }));
      const input = [init(), initialized, call(1, 'exec', { command: 'ls' })].map((m) => `${JSON.stringify(m)}\n`).join('');
      const r = await runGuard([`--config=${config}`, '--', ...SERVER], { input, timeout: TIMEOUT }).done;
      const one = r.stdout
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .find((m) => m.id === 1);
      assert.match(one.result.content[0].text, /denied by policy rule 1 \(from config\)/);
    } finally {
      cleanup();
    }
  });

  test('--approve-cmd must name a program that can run', { timeout: TIMEOUT }, async () => {
    const r = await runGuard(['--approve-cmd=no-such-approver --flag', '--', 'true'], { timeout: TIMEOUT }).done;
    assert.equal(r.code, 125);
    assert.match(r.stderr, /--approve-cmd: 'no-such-approver' is not an executable file on PATH/);
  });
});

describe('nothing goes around the gate', () => {
  test('a 2025-03-26 batch carrying a tools/call is refused whole (zero bytes at the server); one without passes', { timeout: TIMEOUT }, async () => {
    const c = conversation(SERVER, ['--validate-args=on']);
    try {
      c.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      await c.waitFor((m) => m.id === 'init', 'initialize');
      c.child.stdin.write(`${JSON.stringify([call(1, 'exec', { command: 'rm -rf /' }), { jsonrpc: '2.0', id: 2, method: 'tools/list' }])}\n`);
      const refused = await c.waitFor((m) => m.id === null && m.error, 'the refusal');
      assert.match(refused.error.message, /a batch may not carry tools\/call while the gate is on/);
      c.child.stdin.write(
        `${JSON.stringify([
          { jsonrpc: '2.0', id: 3, method: 'tools/list' },
          { jsonrpc: '2.0', id: 4, method: 'tools/list' },
        ])}\n`,
      );
      await c.waitFor((m) => Array.isArray(m), 'the batch answer');
      await c.finish();
      assert.deepEqual(
        c
          .atServer()
          .filter((m) => !Array.isArray(m))
          .map((m) => m.method),
        ['initialize'],
      );
      assert.equal(c.atServer().filter((m) => Array.isArray(m)).length, 1, 'only the batch without tools/call reached the server');
    } finally {
      c.cleanup();
    }
  });

  test('an answer to a card that was already withdrawn is dropped quietly; the session goes on', { timeout: TIMEOUT }, async () => {
    const c = await legacy(['--approval-timeout=300'], { policy: { rules: [{ tool: 'delete_file', decision: 'ask' }] }, capabilities: { elicitation: {} } });
    try {
      c.send(call(1, 'delete_file', { path: '/tmp/x' }));
      const question = await c.waitFor((m) => m.method === 'elicitation/create', 'the card');
      await c.waitFor((m) => m.id === 1, 'the denial at the deadline');
      c.send({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: {} } }, call(2, 'echo', { text: 'still here' }));
      await c.waitFor((m) => m.id === 2, 'answer to 2');
      const r = await c.finish();
      assert.match(r.stderr, /arrived late; ignored/);
      assert.equal(r.summary.end_reason, 'client_eof');
      assert.deepEqual(calledAtServer(c), [2]);
    } finally {
      c.cleanup();
    }
  });
});
