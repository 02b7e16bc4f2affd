// --restart in the 2026-07-28 era: there is no handshake to replay, and an
// open subscriptions/listen stream is ended with an error when its server
// dies, so the client subscribes again; the next request goes to the new
// generation with its own _meta.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, killStarted, runGuardUngated, sessionEnd, tempDir } from '../helpers/run.js';
import { assertAllVerify } from '../helpers/peers.js';
import { childrenOf, until } from './restart-wire.js';

const META = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  killStarted();
});

describe('--restart, modern era', { timeout: 60000, skip: process.platform !== 'linux' && 'needs /proc' }, () => {
  test('an open listen ends with an error at the crash; the next call reaches the new generation', async () => {
    const tmp = tempDir('mcpguard-restart-modern-');
    const run = runGuardUngated(['--record-dir', tmp.dir, '--restart', 'on-failure', '--restart-delay', '0', '--', 'python3', fixture('listen-server.py')], {
      keepOpen: true,
      env: { LISTEN_NOTIFY_MS: '600000' },
    });
    cleanups.push(() => {
      for (const pid of childrenOf(run.child.pid, 'listen-server'))
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      tmp.cleanup();
    });
    const messages = [];
    let buffered = '';
    run.child.stdout.on('data', (chunk) => {
      buffered += chunk;
      for (let nl; (nl = buffered.indexOf('\n')) !== -1; buffered = buffered.slice(nl + 1)) messages.push(JSON.parse(buffered.slice(0, nl)));
    });
    const send = (value) => run.child.stdin.write(`${JSON.stringify(value)}\n`);
    const answerTo = (id) => until(() => messages.some((m) => m.id === id), 30000, `the answer to ${id}`).then(() => messages.find((m) => m.id === id));

    send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta: META } });
    assert.equal((await answerTo(1)).result.resultType, 'complete');
    send({ jsonrpc: '2.0', id: 2, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: META } });
    await until(() => childrenOf(run.child.pid, 'listen-server').length === 1, 10000, 'the server');
    const [first] = childrenOf(run.child.pid, 'listen-server');
    // Let the listen reach the server before it dies.
    await new Promise((resolve) => setTimeout(resolve, 300));
    process.kill(first, 'SIGKILL');

    const ended = await answerTo(2);
    assert.equal(ended.error.data.state, 'stream_ended', JSON.stringify(ended));
    send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'x', _meta: META } });
    assert.equal((await answerTo(3)).result.resultType, 'complete');
    assert.ok(childrenOf(run.child.pid, 'listen-server').every((pid) => pid !== first));
    run.child.stdin.end();
    const { stderr } = await run.done;
    const end = sessionEnd(stderr);
    assert.deepEqual([end.era, end.restarts, end.end_reason], ['modern', 1, 'client_eof']);
    assert.equal(messages.filter((m) => m.id === 2).length, 1, 'the listen was answered once');
    const [log] = await assertAllVerify(tmp.dir, 1);
    assert.deepEqual(
      log.records.filter((r) => r.type === 'restart').map((r) => r.handshake_replayed),
      [false],
    );
    assert.deepEqual(
      log.records.filter((r) => r.type === 'call_end').map((r) => [r.request_id, r.state, r.generation]),
      [
        [1, 'completed', 1],
        [2, 'stream_ended', 1],
        [3, 'completed', 2],
      ],
    );
  });
});
