// Ids neither peer may forge or collide with: mcpguard's own (approval cards,
// its tools/list), answers to calls the server never received, and the
// tables of requests waiting for an answer, which a silent peer must not
// grow without bound. The server is forger.py, which opens requests under
// guessed ids, answers calls it never got, and records every byte it reads;
// the client is this file.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';
import { ownRequestId } from '../../dist/wire/own-id.js';
import { MAX_OPEN_CALLS, MAX_SERVER_REQUESTS } from '../../dist/relay/calls.js';

after(killStarted);

const TIMEOUT = 90000;
const SERVER = ['python3', fixture('forger.py')];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });
const textOf = (m) => m.result?.content?.[0]?.text;
const ASK = { default: 'allow', rules: [{ tool: 'delete_file', decision: 'ask' }] };

/** A legacy session in front of forger.py, initialized; `policy` is written to a file for --policy. */
async function session(args, { env = {}, policy, capabilities = {} } = {}) {
  const scratch = tempDir();
  const extra = [...args];
  if (policy !== undefined) {
    writeFileSync(join(scratch.dir, 'policy.json'), JSON.stringify(policy));
    extra.unshift(`--policy=${join(scratch.dir, 'policy.json')}`);
  }
  const c = conversation(SERVER, extra, env, TIMEOUT);
  const cleanup = c.cleanup;
  c.cleanup = () => {
    cleanup();
    scratch.cleanup();
  };
  c.send({
    jsonrpc: '2.0',
    id: 'init',
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 'ids-test', version: '1' } },
  });
  await c.waitFor((m) => m.id === 'init', 'initialize answer');
  c.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  /** Wait until the server has read a line that matches. */
  c.serverGot = async (match, what, ms = 20000) => {
    for (const started = Date.now(); Date.now() - started < ms; await sleep(25)) if (c.atServer().some(match)) return;
    assert.fail(`the server never read ${what}`);
  };
  return c;
}

describe("mcpguard's own ids", () => {
  test('each carries fresh random digits and is never one in flight on either side', () => {
    const seen = [];
    const id = ownRequestId('approval', 1, (key) => {
      seen.push(key);
      return seen.length < 4;
    });
    assert.equal(seen.length, 4, 'ids in flight are skipped');
    assert.equal(`s${id}`, seen[3]);
    assert.match(id, /^mcpguard-approval-1-[0-9a-f]{24}$/);
    assert.equal(new Set(seen).size, 4, 'every try draws new digits');
  });

  test("a server request opened under a card's id cannot take the person's answer: the card gets another id, the server's question its own answer", {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session(['--validate-args=on'], { policy: ASK, capabilities: { elicitation: {} } });
    try {
      // The server opens its own question under the id the old scheme gave the first card.
      c.send(call('q', 'ask_as', { id: 'mcpguard-approval-1' }));
      await c.waitFor((m) => m.id === 'q', 'answer to q');
      await c.waitFor((m) => m.method === 'elicitation/create' && m.id === 'mcpguard-approval-1', "the server's own question");
      c.send(call(2, 'delete_file', { path: '/tmp/x' }));
      const card = await c.waitFor((m) => m.method === 'elicitation/create' && /Tool: delete_file/.test(m.params.message), 'the approval card');
      assert.notEqual(card.id, 'mcpguard-approval-1');
      assert.match(card.id, /^mcpguard-approval-1-[0-9a-f]{24}$/);
      // The client accepts the server's question: that answer is the server's, and approves nothing.
      c.send({ jsonrpc: '2.0', id: 'mcpguard-approval-1', result: { action: 'accept', content: {} } });
      await c.serverGot((m) => m.id === 'mcpguard-approval-1' && m.result?.action === 'accept', "the client's answer to its question");
      // The person declines the card.
      c.send({ jsonrpc: '2.0', id: card.id, result: { action: 'decline' } });
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      assert.equal(two.result.isError, true);
      assert.match(textOf(two), /the person answered decline/);
      const r = await c.finish();
      assert.deepEqual(c.callsAtServer(), ['q'], 'delete_file never reached the server');
      assert.equal(c.atServer().filter((m) => m.id === card.id).length, 0, "the card's answer never reached the server");
      assert.equal(endOf(r.records, 2).state, 'denied');
    } finally {
      c.cleanup();
    }
  });

  test("a client request under the id mcpguard's own tools/list used to have reaches the server once, and each answer goes where it belongs", {
    timeout: TIMEOUT,
  }, async () => {
    // The server answers pings late and in order: the ping's answer comes before the answer to mcpguard's tools/list.
    const c = await session(['--validate-args=on'], { env: { PING: 'slow:800' } });
    try {
      c.send(ping('mcpguard-tools-list-1'));
      await c.serverGot((m) => m.id === 'mcpguard-tools-list-1', 'the ping');
      // A tool not known yet: mcpguard asks the server's tools/list itself.
      c.send(call(2, 'echo', { text: 'after' }));
      const pong = await c.waitFor((m) => m.id === 'mcpguard-tools-list-1', 'answer to the ping');
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      assert.deepEqual(pong.result, {}, 'the ping got the ping answer, not a tool list');
      assert.equal(textOf(two), 'after');
      const r = await c.finish();
      const requests = c
        .atServer()
        .filter((m) => m.method !== undefined && m.id !== undefined)
        .map((m) => m.id);
      assert.equal(new Set(requests).size, requests.length, `each id reached the server once: ${JSON.stringify(requests)}`);
      const own = c.atServer().filter((m) => m.method === 'tools/list');
      assert.equal(own.length, 1);
      assert.match(own[0].id, /^mcpguard-tools-list-1-[0-9a-f]{24}$/);
      assert.equal(endOf(r.records, 2).state, 'completed');
    } finally {
      c.cleanup();
    }
  });
});

describe('answers to calls the server never received', () => {
  test('a forged answer to a call waiting for a person is noise: the card stays open, the real answer follows the approval', { timeout: TIMEOUT }, async () => {
    const c = await session(['--validate-args=on'], { policy: ASK, capabilities: { elicitation: {} } });
    try {
      c.send(call(7, 'delete_file', { path: '/tmp/y' }));
      const card = await c.waitFor((m) => m.method === 'elicitation/create', 'the approval card');
      c.send(call('f', 'forge', { ids: [7] }));
      await c.waitFor((m) => m.id === 'f', 'answer to f');
      assert.deepEqual(
        c.out().filter((m) => m.id === 7),
        [],
        'nothing reached the client for 7',
      );
      c.send({ jsonrpc: '2.0', id: card.id, result: { action: 'accept', content: {} } });
      const seven = await c.waitFor((m) => m.id === 7, 'answer to 7');
      assert.equal(textOf(seven), 'deleted /tmp/y');
      const r = await c.finish();
      assert.equal(r.out.filter((m) => m.id === 7).length, 1, 'one answer for 7');
      const end = endOf(r.records, 7);
      assert.equal(end.state, 'completed');
      assert.notEqual(end.dispatched_at, null);
      const noise = r.records.filter((x) => x.type === 'reject' && x.direction === 'child');
      assert.equal(noise.length, 1);
      assert.match(noise[0].reason, /response to id 7, a request mcpguard has not sent to the server/);
      assert.match(r.stderr, /response to id 7, a request mcpguard has not sent to the server/);
    } finally {
      c.cleanup();
    }
  });

  test("a guessed answer to a call waiting for mcpguard's own tools/list is noise; the call runs once the list came", { timeout: TIMEOUT }, async () => {
    const c = await session(['--validate-args=on'], { env: { GUESS_IDS: '1,2,3' } });
    try {
      c.send(call(1, 'echo', { text: 'real' }));
      const one = await c.waitFor((m) => m.id === 1, 'answer to 1');
      assert.equal(textOf(one), 'real');
      const r = await c.finish();
      assert.equal(r.out.filter((m) => m.id === 1).length, 1);
      assert.deepEqual(c.callsAtServer(), [1]);
      assert.notEqual(endOf(r.records, 1).dispatched_at, null);
      assert.equal(r.records.filter((x) => x.type === 'reject' && x.direction === 'child').length, 3);
    } finally {
      c.cleanup();
    }
  });
});

describe('requests waiting for an answer are bounded', () => {
  test(`a server that never answers: request ${MAX_OPEN_CALLS + 1} is answered by mcpguard, recorded, and never reaches the server`, {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session([], { env: { PING: 'never' } });
    try {
      const ids = Array.from({ length: MAX_OPEN_CALLS }, (_, i) => i + 1);
      c.send(...ids.map(ping));
      await c.serverGot((m) => m.id === MAX_OPEN_CALLS, `ping ${MAX_OPEN_CALLS}`, 60000);
      const over = MAX_OPEN_CALLS + 1;
      c.send(ping(over));
      const refused = await c.waitFor((m) => m.id === over, `answer to ${over}`);
      assert.equal(refused.error.code, -32603);
      assert.equal(refused.error.data.state, 'rejected');
      assert.match(refused.error.message, /4096 requests already wait for an answer/);
      const r = await c.finish();
      assert.equal(c.atServer().filter((m) => m.method === 'ping').length, MAX_OPEN_CALLS);
      assert.equal(endOf(r.records, over).state, 'rejected');
      assert.equal(r.summary.rejected.client, 1);
    } finally {
      c.cleanup();
    }
  });

  test('ids kept only to drop a late answer give way: after every call timed out, the next request is forwarded', { timeout: TIMEOUT }, async () => {
    const c = await session(['--call-timeout=200'], { env: { PING: 'never' } });
    try {
      c.send(...Array.from({ length: MAX_OPEN_CALLS }, (_, i) => ping(i + 1)));
      for (const started = Date.now(); c.out().filter((m) => m.error?.code === -32001).length < MAX_OPEN_CALLS; await sleep(100)) {
        assert.ok(Date.now() - started < 60000, 'every call timed out and was answered');
      }
      c.send(ping('next'));
      await c.serverGot((m) => m.id === 'next', 'the next ping');
      const r = await c.finish();
      assert.notEqual(endOf(r.records, 'next').state, 'rejected');
    } finally {
      c.cleanup();
    }
  });

  test(`a client that never answers: server request ${MAX_SERVER_REQUESTS + 1} and later are answered to the server with an error, recorded, never forwarded`, {
    timeout: TIMEOUT,
  }, async () => {
    const c = await session([]);
    try {
      c.send(call('flood', 'flood_requests', { n: MAX_SERVER_REQUESTS + 4, prefix: 'a' }));
      await c.waitFor((m) => m.id === 'flood', 'answer to flood', 60000);
      const asked = c.out().filter((m) => m.method === 'ping' && String(m.id).startsWith('a-'));
      assert.equal(asked.length, MAX_SERVER_REQUESTS);
      assert.deepEqual(asked.at(-1).id, `a-${MAX_SERVER_REQUESTS - 1}`);
      for (let i = MAX_SERVER_REQUESTS; i < MAX_SERVER_REQUESTS + 4; i++) {
        await c.serverGot(
          (m) => m.id === `a-${i}` && m.error?.code === -32603 && /already wait for the client's answer/.test(m.error.message),
          `the error answer to a-${i}`,
        );
      }
      // An answer makes room again.
      c.send({ jsonrpc: '2.0', id: 'a-0', result: {} });
      await c.serverGot((m) => m.id === 'a-0' && m.result !== undefined, "the client's answer to a-0");
      c.send(call('again', 'flood_requests', { n: 1, prefix: 'b' }));
      await c.waitFor((m) => m.method === 'ping' && m.id === 'b-0', 'the next server request');
      const r = await c.finish();
      const refused = r.records.filter((x) => x.type === 'reject' && x.direction === 'child');
      assert.equal(refused.length, 4);
      assert.match(refused[0].reason, /already wait for the client's answer/);
      assert.equal(r.summary.rejected.child, 4);
    } finally {
      c.cleanup();
    }
  });
});
