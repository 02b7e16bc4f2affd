// 2026-07-28 subscriptions: a notification tagged with
// _meta["io.modelcontextprotocol/subscriptionId"] belongs to the
// subscriptions/listen request with that id, and reaches the client only
// while that listen is open. The server (test/fixtures/hostile-rounds.py)
// tags notifications with whatever ids a test names: open listens, ended
// ones, unknown ones, the right id with the wrong type.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, killStarted } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';

after(killStarted);

const TIMEOUT = 30000;
const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const SUB = 'io.modelcontextprotocol/subscriptionId';
const req = (id, method, params = {}) => ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: META } });
const listen = (id) => req(id, 'subscriptions/listen', { notifications: { toolsListChanged: true } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe('notifications of a subscription', () => {
  test("forwarded only while a listen with that id is open: one ended by the client, one ended by the server, an unknown id and a mistyped one are diverted and reported; one crossing the client's cancel is dropped as late", {
    timeout: TIMEOUT,
  }, async () => {
    const c = conversation(['python3', fixture('hostile-rounds.py')], [], {}, TIMEOUT);
    try {
      c.send(listen('open'), listen(7), listen('client-ends'), listen('server-ends'));
      const acked = (id) => (m) => m.method === 'notifications/subscriptions/acknowledged' && m.params._meta[SUB] === id;
      for (const id of ['open', 7, 'client-ends', 'server-ends']) await c.waitFor(acked(id), `the ack of ${id}`);
      c.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'client-ends', reason: 'done' } });
      for (let i = 0; i < 200 && !c.atServer().some((m) => m.method === 'notifications/cancelled'); i++) await sleep(20);
      c.send(req(1, 'tools/call', { name: 'end_listen', arguments: { id: 'server-ends' } }));
      await c.waitFor((m) => m.id === 1, 'answer to 1');
      const ids = ['open', 7, 'client-ends', 'server-ends', 'never-opened', '7', null];
      c.send(req(2, 'tools/call', { name: 'stale', arguments: { ids } }));
      await c.waitFor((m) => m.id === 2, 'answer to 2');
      const r = await c.finish();
      const changes = r.out.filter((m) => m.method === 'notifications/tools/list_changed').map((m) => m.params._meta[SUB]);
      assert.deepEqual(changes, ['open', 7], "only the open listens' notifications reached the client");
      const diverted = r.stderr.split('\n').filter((l) => /child stdout line \d+ is not JSON-RPC: .*list_changed/.test(l));
      assert.equal(diverted.length, 5, r.stderr);
      assert.match(diverted[0], /subscription id "client-ends", which no open subscriptions\/listen has/);
      assert.match(diverted.join('\n'), /subscription id "7", which/);
      assert.match(diverted.join('\n'), /subscription id \(a null\), which/);
      assert.equal(r.summary.rejected.child, 5);
      assert.equal(r.records.filter((x) => x.type === 'reject' && x.direction === 'child').length, 5);
      // The one written as the client's cancel crossed it is dropped as late: not forwarded, not noise.
      assert.equal(
        r.stderr.split('\n').filter((l) => /dropped child line \d+: a notification for subscription id "client-ends", which the client closed/.test(l)).length,
        1,
        r.stderr,
      );
      assert.equal(endOf(r.records, 'server-ends').state, 'stream_ended');
      assert.equal(endOf(r.records, 'client-ends').state, 'stream_ended');
      assert.equal(r.out.filter((m) => m.id === 'server-ends').length, 1, "the server's end of the stream reached the client");
    } finally {
      c.cleanup();
    }
  });
});
