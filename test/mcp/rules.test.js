// Protocol eras: each session learns its era from what passes and holds that
// era's rules. A hand-written rogue 2026-07-28 server (test/fixtures/
// rogue-modern.py) and this file as a rogue client break every rule, under
// --era-rules enforce (the default) and warn.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, frame, killStarted, runGuard, sessionEnd } from '../helpers/run.js';
import { conversation as converse, endOf } from '../helpers/conversation.js';

after(killStarted);

const TIMEOUT = 30000;
const V = '2026-07-28';
const META = { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {} };
const req = (id, method, params = {}) => ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: { ...META, ...params._meta } } });
const call = (id, name, extra = {}) => req(id, 'tools/call', { name, arguments: {}, ...extra });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** mcpguard in front of the rogue server, driven one line at a time. */
// rogue-modern.py calls tools it never lists: this file is about era rules, not the gate, so the gate is off, by name.
const conversation = (args = [], env = {}) => converse(['python3', fixture('rogue-modern.py')], ['--validate-args=off', ...args], env, TIMEOUT);

describe('era detection', () => {
  test('a request carrying the 2026-07-28 _meta makes the session modern; the era, version and traceparent reach the records', {
    timeout: TIMEOUT,
  }, async () => {
    const c = conversation();
    try {
      const trace = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      c.send(req(1, 'tools/call', { name: 'plain', _meta: { traceparent: trace } }));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      const r = await c.finish();
      assert.equal(r.summary.era, 'modern');
      assert.equal(r.summary.protocol_version, V);
      assert.equal(r.summary.era_decided_by, '_meta on tools/call');
      const one = endOf(r.records, 1);
      assert.equal(one.state, 'completed');
      assert.equal(one.protocol_version, V);
      assert.equal(one.traceparent, trace);
      const end = r.records.find((x) => x.type === 'session_end');
      assert.equal(end.era, 'modern');
    } finally {
      c.cleanup();
    }
  });

  test('initialize makes it legacy with the version the server agreed; 2025-03-26 accepts batches without --allow-batch', { timeout: TIMEOUT }, async () => {
    const r = await runGuard(['--', 'python3', fixture('recorder.py')], {
      input: frame({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
      keepOpen: true,
      timeout: TIMEOUT,
    });
    let text = '';
    r.child.stdout.on('data', (c) => {
      text += c;
    });
    for (let i = 0; i < 500 && !text.includes('"id":1'); i++) await sleep(20);
    r.child.stdin.end(
      JSON.stringify([
        { jsonrpc: '2.0', id: 2, method: 'tools/list' },
        { jsonrpc: '2.0', id: 3, method: 'tools/list' },
      ]) + '\n',
    );
    const done = await r.done;
    const s = sessionEnd(done.stderr);
    assert.equal(s.era, 'legacy');
    assert.equal(s.era_decided_by, 'initialize');
    assert.equal(s.rejected.client, 0, done.stderr);
    assert.equal(s.frames.client, 2, 'initialize and the batch both passed');
  });

  test('a dual-era probe in place: server/discover answered with an error, then initialize passes (legacy)', { timeout: TIMEOUT }, async () => {
    const r = await runGuard(['--', 'python3', fixture('recorder.py')], { keepOpen: true, timeout: TIMEOUT });
    let text = '';
    r.child.stdout.on('data', (c) => {
      text += c;
    });
    r.child.stdin.write(frame(req('probe', 'server/discover')));
    for (let i = 0; i < 500 && !text.includes('"probe"'); i++) await sleep(20);
    r.child.stdin.end(
      frame({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      }),
    );
    const done = await r.done;
    const s = sessionEnd(done.stderr);
    assert.equal(s.rejected.client, 0, done.stderr);
    assert.equal(s.era, 'legacy', JSON.stringify(s));
  });
});

describe('modern rules, enforced', () => {
  test('a request without the required _meta is answered -32602 by mcpguard and never reaches the server', { timeout: TIMEOUT }, async () => {
    const c = conversation();
    try {
      c.send(call(1, 'plain'));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      c.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': V } } });
      c.send({ jsonrpc: '2.0', id: 3, method: 'tools/list' });
      const two = await c.waitFor((m) => m.id === 2, 'answer to 2');
      const three = await c.waitFor((m) => m.id === 3, 'answer to 3');
      for (const answer of [two, three]) {
        assert.equal(answer.error.code, -32602);
        assert.equal(answer.error.data.source, 'mcpguard');
        assert.equal(answer.error.data.rule, 'missing_meta');
      }
      assert.match(two.error.message, /clientCapabilities/);
      const r = await c.finish();
      assert.deepEqual(
        c.atServer().map((m) => m.id),
        [1],
        'only the good request reached the server',
      );
      assert.equal(r.summary.era_violations.missing_meta, 2);
      assert.equal(endOf(r.records, 2).state, 'rejected');
    } finally {
      c.cleanup();
    }
  });

  test('an era switch (a modern call, then initialize, then ping, then notifications/initialized) is refused; the session goes on', {
    timeout: TIMEOUT,
  }, async () => {
    const c = conversation();
    try {
      c.send(call(1, 'plain'));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      c.send(
        { jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
        { jsonrpc: '2.0', id: 3, method: 'ping' },
        { jsonrpc: '2.0', method: 'notifications/initialized' },
        call(4, 'plain'),
      );
      await c.waitFor((m) => m.id === 4, 'answer to 4');
      const r = await c.finish();
      for (const id of [2, 3]) {
        const answer = r.out.find((m) => m.id === id);
        assert.equal(answer.error.code, -32600, JSON.stringify(answer));
        assert.equal(answer.error.data.rule, 'era_switch');
        assert.match(answer.error.message, /2025-11-25 and earlier/);
      }
      assert.equal(r.out.filter((m) => m.id === null).length, 0, 'the refused notification is not answered');
      assert.deepEqual(
        c.atServer().map((m) => m.id ?? m.method),
        [1, 4],
      );
      assert.equal(r.summary.era_violations.era_switch, 3);
      assert.equal(r.summary.end_reason, 'client_eof', 'an era rule does not close the session');
      const refused = r.records.filter((x) => x.type === 'reject' && x.rule === 'era_switch');
      assert.equal(refused.length, 3);
      assert.ok(refused.every((x) => x.action === 'refused'));
    } finally {
      c.cleanup();
    }
  });

  test("a server request is diverted (its id never enters the table); the client's answer to it is refused", { timeout: TIMEOUT }, async () => {
    const c = conversation();
    try {
      c.send(call(1, 'server_request'));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      c.send({ jsonrpc: '2.0', id: 'srv-1', result: { role: 'assistant', content: { type: 'text', text: 'x' } } });
      c.send(call(2, 'plain'));
      await c.waitFor((m) => m.id === 2, 'answer to 2');
      const r = await c.finish();
      assert.equal(r.out.filter((m) => m.method === 'sampling/createMessage').length, 0, 'the server request did not reach the client');
      assert.deepEqual(
        c.atServer().map((m) => m.id),
        [1, 2],
        'the client response did not reach the server',
      );
      assert.equal(r.summary.era_violations.server_request, 1);
      // The client's response matches no server request mcpguard let through: refused as any unasked response.
      assert.equal(r.summary.rejected.client, 1);
      assert.match(r.stderr, /server_request: a 2026-07-28 server must not write JSON-RPC requests/);
    } finally {
      c.cleanup();
    }
  });

  test('a client response is refused even when it names an id', { timeout: TIMEOUT }, async () => {
    const c = conversation();
    try {
      c.send(call(1, 'plain'));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      c.send({ jsonrpc: '2.0', id: 77, error: { code: -1, message: 'no' } }, call(2, 'plain'));
      await c.waitFor((m) => m.id === 2, 'answer to 2');
      const r = await c.finish();
      assert.deepEqual(
        c.atServer().map((m) => m.id),
        [1, 2],
      );
      assert.equal(r.summary.rejected.client, 1);
    } finally {
      c.cleanup();
    }
  });

  test('a stray server notifications/cancelled is diverted; one that ends an open listen ends it as stream_ended', { timeout: TIMEOUT }, async () => {
    const c = conversation([], { LISTEN_END_MS: '200' });
    try {
      c.send(req('listen:0', 'subscriptions/listen', { notifications: { toolsListChanged: true } }), call(1, 'stray_cancel'));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      await c.waitFor((m) => m.method === 'notifications/cancelled', 'the server ending the listen');
      const r = await c.finish();
      const cancels = r.out.filter((m) => m.method === 'notifications/cancelled');
      assert.deepEqual(
        cancels.map((m) => m.params.requestId),
        ['listen:0'],
        "only the listen's cancel reached the client",
      );
      assert.equal(r.summary.era_violations.stray_server_cancel, 1);
      const listen = endOf(r.records, 'listen:0');
      assert.equal(listen.state, 'stream_ended');
      assert.match(listen.detail, /closed by the server/);
      assert.equal(r.out.filter((m) => m.id === 'listen:0').length, 0, 'no made-up answer for a stream the server closed');
    } finally {
      c.cleanup();
    }
  });

  test('results: no resultType is forwarded and flagged once; a non-string one is refused; input_required where it may not be is refused', {
    timeout: TIMEOUT,
  }, async () => {
    const c = conversation();
    try {
      c.send(call(1, 'no_result_type'), call(2, 'no_result_type'), call(3, 'numeric_result_type'), req(4, 'prompts/list'));
      await c.waitFor((m) => m.id === 4, 'answer to 4');
      const r = await c.finish();
      const byId = (id) => r.out.find((m) => m.id === id);
      assert.deepEqual(byId(1).result, { content: [] }, 'forwarded as it came');
      assert.deepEqual(byId(2).result, { content: [] });
      assert.equal(
        r.stderr.split('\n').filter((l) => l.includes('forwarded child line') && l.includes('missing_result_type')).length,
        1,
        `explained once: ${r.stderr}`,
      );
      assert.deepEqual(endOf(r.records, 1).flags, ['missing_result_type']);
      for (const id of [3, 4]) {
        assert.equal(byId(id).error.code, -32603);
        assert.equal(byId(id).error.data.source, 'mcpguard');
        assert.equal(byId(id).error.data.rule, 'bad_result_type');
        assert.equal(endOf(r.records, id).state, 'error');
      }
      assert.match(byId(4).error.message, /not prompts\/list/);
      assert.equal(r.summary.era_violations.missing_result_type, 2);
      assert.equal(r.summary.era_violations.bad_result_type, 2);
    } finally {
      c.cleanup();
    }
  });
});

describe('multi-round-trip calls', () => {
  test('input_required is an outcome of its own; the retry is linked to the leg before it (by requestState, or by target)', { timeout: TIMEOUT }, async () => {
    const c = conversation();
    try {
      c.send(call(1, 'needs_input'), call(11, 'needs_input_nostate'));
      const first = await c.waitFor((m) => m.id === 1, 'answer to 1');
      await c.waitFor((m) => m.id === 11, 'answer to 11');
      assert.equal(first.result.resultType, 'input_required');
      const responses = { confirm: { action: 'accept', content: {} } };
      c.send(
        call(2, 'needs_input', { inputResponses: responses, requestState: first.result.requestState }),
        call(12, 'needs_input_nostate', { inputResponses: responses }),
      );
      await c.waitFor((m) => m.id === 2, 'answer to 2');
      await c.waitFor((m) => m.id === 12, 'answer to 12');
      const r = await c.finish();
      const [one, two, eleven, twelve] = [1, 2, 11, 12].map((id) => endOf(r.records, id));
      assert.equal(one.state, 'input_required');
      assert.match(one.request_state_sha256, /^[0-9a-f]{32}$/);
      assert.ok(!JSON.stringify(r.records).includes('"st-1"'), 'the opaque state itself is never kept');
      assert.equal(two.state, 'completed');
      assert.equal(two.continues, one.call_id);
      assert.equal(two.chain, one.call_id);
      assert.equal(one.chain, one.call_id);
      assert.equal(two.linked_by, 'request_state');
      assert.equal(eleven.state, 'input_required');
      assert.equal(twelve.continues, eleven.call_id);
      assert.equal(twelve.linked_by, 'same_target');
      assert.equal(r.summary.calls.input_required, 2);

      // The views read the chain as one call with its legs.
      const json = await runGuard(['activity', '--json', `--record-dir=${c.recordDir}`], { timeout: TIMEOUT }).done;
      const rows = json.stdout
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const head = rows.find((x) => x.call_id === one.call_id);
      assert.equal(head.legs, 2);
      assert.equal(head.chain_state, 'completed');
      assert.equal(rows.find((x) => x.call_id === two.call_id).leg, 2);
      const text = (await runGuard(['activity', `--record-dir=${c.recordDir}`], { timeout: TIMEOUT }).done).stdout.toString();
      const lines = text.split('\n');
      const at = lines.findIndex((l) => l.startsWith(one.call_id));
      assert.match(lines[at], /input_required → completed \(2 legs\)/);
      assert.ok(lines[at + 1].includes(`↳ ${two.call_id}`), text);
      const sessions = (await runGuard(['sessions', `--record-dir=${c.recordDir}`], { timeout: TIMEOUT }).done).stdout.toString();
      assert.match(sessions, /PROTOCOL/);
      assert.match(sessions, /2026-07-28/);
    } finally {
      c.cleanup();
    }
  });
});

describe('--era-rules warn', () => {
  test('every broken rule is forwarded and only reported (counted, recorded with action "forwarded")', { timeout: TIMEOUT }, async () => {
    const c = conversation(['--era-rules=warn']);
    try {
      c.send(call(1, 'server_request'));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      c.send(
        { jsonrpc: '2.0', id: 'srv-1', result: { role: 'assistant', content: { type: 'text', text: 'x' } } },
        { jsonrpc: '2.0', id: 2, method: 'ping' },
        { jsonrpc: '2.0', id: 3, method: 'tools/list' },
        call(4, 'numeric_result_type'),
        call(5, 'stray_cancel'),
      );
      await c.waitFor((m) => m.id === 5, 'answer to 5');
      const r = await c.finish();
      assert.equal(r.out.filter((m) => m.method === 'sampling/createMessage').length, 1, 'the server request reached the client');
      assert.equal(r.out.filter((m) => m.method === 'notifications/cancelled').length, 1, 'the stray cancel reached the client');
      assert.deepEqual(
        c.atServer().map((m) => m.id),
        [1, 'srv-1', 2, 3, 4, 5],
        'everything reached the server',
      );
      assert.equal(r.out.find((m) => m.id === 2).error.code, -32601, "the server's own answer");
      assert.equal(r.out.find((m) => m.id === 4).result.resultType, 7);
      assert.equal(r.summary.rejected.client, 0);
      for (const rule of ['server_request', 'client_response', 'era_switch', 'missing_meta', 'bad_result_type', 'stray_server_cancel']) {
        assert.equal(r.summary.era_violations[rule], 1, rule);
        const rec = r.records.find((x) => x.type === 'reject' && x.rule === rule);
        assert.equal(rec?.action, 'forwarded', rule);
      }
    } finally {
      c.cleanup();
    }
  });
});
