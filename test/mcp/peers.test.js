// Real peers, each scenario run twice: the client straight to the server, and
// the same client to `mcpguard -- <server>`. A wire tap (test/fixtures/tee.mjs)
// sits right behind the client both times and keeps every byte it wrote and
// read; the two runs must match byte for byte, process by process (an SDK v2
// client in auto or pin mode starts the command twice: a short-lived copy for
// its server/discover probe, then the session). Nothing on these wires differs
// from run to run (no timestamps, no random ids), so nothing is masked before
// the comparison. Every log mcpguard leaves must verify.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client as V2Client } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Transport } from '@modelcontextprotocol/client/stdio';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, PLANTED_VARS, ROOT, assertNoPlanted, killStarted, tempDir } from '../helpers/run.js';
import { TEE, V2_SERVER, assertAllVerify, assertSameWire, killServers, messagesOf, wireOf } from '../helpers/peers.js';

const TIMEOUT = 90000;
/** How long a client waits for a list-changed notification the server announced. */
const CHANGE_WAIT_MS = 10000;
const EVERYTHING = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
const v2Server = (pidDir, ...options) => [process.execPath, V2_SERVER, '--pid-dir', pidDir, ...options];

const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  killStarted();
});

/**
 * Connect with `connect(params)` to the tap in front of `server(pidDir)` (through
 * mcpguard with `guardArgs`, or directly when null), run `script`, close.
 * Returns the script's result, the tap's wire, the record directory and the
 * command's stderr (mcpguard's diagnostics when guarded).
 */
async function tapped({ server, guardArgs, connect, script }) {
  const tmp = tempDir('mcpguard-peers-');
  const wireDir = join(tmp.dir, 'wire');
  const pidDir = join(tmp.dir, 'pids');
  const recordDir = join(tmp.dir, 'records');
  mkdirSync(wireDir);
  mkdirSync(pidDir);
  cleanups.push(() => {
    killServers(pidDir);
    tmp.cleanup();
  });
  const command = guardArgs === null ? server(pidDir) : [process.execPath, BIN, '--record-dir', recordDir, ...guardArgs, '--', ...server(pidDir)];
  const params = { command: process.execPath, args: [TEE, wireDir, '--', ...command], cwd: ROOT, env: { ...process.env, ...PLANTED_VARS }, stderr: 'pipe' };
  const peer = connect(params);
  const stderr = [];
  peer.transport.stderr.on('data', (chunk) => stderr.push(chunk));
  let result;
  try {
    await peer.client.connect(peer.transport);
    result = await script(peer);
  } finally {
    const pid = peer.transport.pid;
    await peer.client.close().catch(() => {});
    // close() escalates to SIGKILL itself; this only covers a close() that threw early.
    if (pid)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
  }
  const text = Buffer.concat(stderr).toString('utf8');
  assertNoPlanted(text, 'the stderr of the tapped command');
  return { result, wire: wireOf(wireDir), recordDir, stderr: text };
}

/** An SDK v2 client that fulfils elicitations itself and queues list-changed notifications. */
function v2Client(mode) {
  return (params) => {
    const client = new V2Client({ name: 'mcpguard-peers', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode } });
    client.setRequestHandler('elicitation/create', async (request) => ({
      action: 'accept',
      content: { confirm: request.params.message.startsWith('Really ') },
    }));
    const changes = [];
    const waiting = [];
    client.setNotificationHandler('notifications/tools/list_changed', async (notification) => {
      changes.push({ at: Date.now(), notification });
      waiting.splice(0).forEach((wake) => {
        wake();
      });
    });
    // Gives up after CHANGE_WAIT_MS, so a stream cut short fails the test instead of hanging it.
    const nextChange = async () => {
      const deadline = Date.now() + CHANGE_WAIT_MS;
      while (changes.length === 0) {
        if (Date.now() >= deadline) throw new Error(`no notifications/tools/list_changed within ${CHANGE_WAIT_MS} ms`);
        await new Promise((resolve) => {
          waiting.push(resolve);
          setTimeout(resolve, deadline - Date.now()).unref();
        });
      }
      return changes.shift();
    };
    return { client, transport: new V2Transport(params), nextChange };
  };
}

function v1Client(params) {
  return { client: new V1Client({ name: 'mcpguard-peers-v1', version: '1.0.0' }), transport: new V1Transport(params) };
}

/** Run `scenario` directly and through mcpguard; assert the wires match and every log verifies. */
async function bothWays(scenario, guardArgs = []) {
  const direct = await tapped({ ...scenario, guardArgs: null });
  const guarded = await tapped({ ...scenario, guardArgs });
  assertSameWire(guarded.wire, direct.wire);
  assert.deepEqual(guarded.result, direct.result);
  assert.doesNotMatch(guarded.stderr, /mcpguard: (rejected|.*is not JSON-RPC|.*not forwarded)/, guarded.stderr);
  // One session log per command mcpguard ran (the probe's copy included), each sealed and intact, nothing rejected.
  const logs = await assertAllVerify(guarded.recordDir, direct.wire.length);
  for (const log of logs) {
    assert.deepEqual(
      log.records.filter((r) => r.type === 'reject'),
      [],
      log.file,
    );
    const end = log.records.find((r) => r.type === 'session_end');
    assert.ok(end, `${log.file} has a session_end record`);
    assert.deepEqual(end.rejected, { client: 0, child: 0 }, log.file);
  }
  return { direct, guarded, logs };
}

const methodsOf = (bytes) => messagesOf(bytes).map((m) => m.method ?? (m.error ? `error ${m.error.code}` : `result ${m.id}`));

/** Scenario 1's client: every 2026-07-28 feature the fixture offers, one after the other. */
async function modernSession({ client, nextChange }) {
  const out = { version: client.getNegotiatedProtocolVersion?.() };
  out.tools = (await client.listTools()).tools.map((t) => t.name);
  out.echo = await client.callTool({ name: 'echo', arguments: { text: 'héllo € 😀 "quoted" \\ line\nbreak' } });
  out.confirm = await client.callTool({ name: 'confirm', arguments: { action: 'deploy' } });
  const subscription = await client.listen({ toolsListChanged: true });
  out.honored = subscription.honoredFilter;
  out.registered = await client.callTool({ name: 'register-later', arguments: { name: 'late-tool', delayMs: 200 } });
  out.change = (await nextChange()).notification;
  await subscription.close();
  out.closed = await subscription.closed;
  // Cancel the slow call once the server says it is running it.
  const controller = new AbortController();
  let running;
  const progressed = new Promise((resolve) => (running = resolve));
  const slow = client.callTool({ name: 'slow', arguments: { ms: 60000 } }, { signal: controller.signal, onprogress: running });
  out.progress = await progressed;
  controller.abort('the test cancels');
  out.slow = await slow.then(
    () => 'answered',
    (error) => `${error.name}: ${error.message}`,
  );
  // A later call still works, and no answer to the cancelled one arrived before it.
  out.after = await client.callTool({ name: 'echo', arguments: { text: 'after the cancel' } });
  out.toolsAfter = (await client.listTools()).tools.map((t) => t.name);
  return out;
}

describe('real peers: the same bytes directly and through mcpguard', { timeout: TIMEOUT }, () => {
  for (const [label, mode] of [
    ['pin 2026-07-28', { pin: '2026-07-28' }],
    ['auto', 'auto'],
  ]) {
    test(`1. SDK v2 client (${label}) ↔ SDK v2 server on 2026-07-28: discover, tools, elicitation, listen, cancel`, async () => {
      const { direct } = await bothWays({ server: (pids) => v2Server(pids), connect: v2Client(mode), script: modernSession });
      const r = direct.result;
      assert.equal(r.version, '2026-07-28');
      assert.deepEqual(r.tools, ['echo', 'confirm', 'register-later', 'slow']);
      assert.equal(r.echo.content[0].text, 'héllo € 😀 "quoted" \\ line\nbreak');
      assert.equal(r.confirm.content[0].text, 'done: deploy');
      assert.deepEqual(r.honored, { toolsListChanged: true });
      assert.equal(r.change.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen:0');
      assert.equal(r.closed, 'local');
      assert.equal(r.slow, 'SdkError: the test cancels');
      assert.equal(r.after.content[0].text, 'after the cancel');
      assert.deepEqual(r.toolsAfter, [...r.tools, 'late-tool']);
      // The wire is what the scenario says: a probe copy that ran server/discover, then the session.
      const [probe, session] = direct.wire;
      assert.equal(direct.wire.length, 2);
      assert.deepEqual(methodsOf(probe.c2s), ['server/discover']);
      assert.deepEqual(methodsOf(probe.s2c), ['result server-discover-probe-1']);
      assert.deepEqual(methodsOf(session.c2s), [
        'tools/list',
        'tools/call',
        'tools/call',
        'tools/call',
        'subscriptions/listen',
        'tools/call',
        'notifications/cancelled',
        'tools/call',
        'notifications/cancelled',
        'tools/call',
        'tools/list',
      ]);
      const read = messagesOf(session.s2c);
      assert.deepEqual(
        read.filter((m) => m.result).map((m) => m.result.resultType),
        ['complete', 'complete', 'input_required', 'complete', 'complete', 'complete', 'complete'],
      );
      assert.deepEqual(
        read.filter((m) => m.method).map((m) => m.method),
        ['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed', 'notifications/progress'],
      );
      const slowId = messagesOf(session.c2s).find((m) => m.params?.name === 'slow').id;
      assert.ok(!read.some((m) => m.id === slowId), `the cancelled call (id ${slowId}) got no answer`);
    });
  }

  test('2. a listen through --call-timeout 1000 outlives the timeout: the list-changed notification after 1.5 s arrives as it does directly', async () => {
    const script = async ({ client, nextChange }) => {
      const subscription = await client.listen({ toolsListChanged: true });
      const registered = await client.callTool({ name: 'register-later', arguments: { name: 'slow-to-come', delayMs: 1500 } });
      const askedAt = Date.now();
      const change = await nextChange();
      const waitedMs = change.at - askedAt;
      await subscription.close();
      return { registered, change: change.notification, closed: await subscription.closed, waitedOverTimeout: waitedMs > 1000 };
    };
    const { direct, guarded, logs } = await bothWays({ server: (pids) => v2Server(pids), connect: v2Client({ pin: '2026-07-28' }), script }, [
      '--call-timeout',
      '1000',
    ]);
    assert.deepEqual(guarded.result.change, {
      method: 'notifications/tools/list_changed',
      params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'listen:0' } },
    });
    assert.equal(guarded.result.waitedOverTimeout, true, 'the notification came more than --call-timeout after the listen began');
    assert.equal(guarded.result.closed, 'local', 'the client closed the stream, not mcpguard');
    assert.doesNotMatch(guarded.stderr, /call-timeout/, guarded.stderr);
    assert.deepEqual(methodsOf(direct.wire[1].s2c), ['notifications/subscriptions/acknowledged', 'result 0', 'notifications/tools/list_changed']);
    const states = logs.flatMap((log) => log.records.filter((r) => r.type === 'call_end').map((r) => `${r.method} ${r.state}`));
    assert.ok(states.includes('subscriptions/listen stream_ended'), states.join(', '));
    assert.ok(!states.some((s) => s.includes('timed_out')), states.join(', '));
  });

  test('3. SDK v2 client (auto) ↔ server-everything: the probe is refused, the session falls back to 2025-11-25', async () => {
    const script = async ({ client }) => ({
      version: client.getNegotiatedProtocolVersion?.(),
      tools: (await client.listTools()).tools.map((t) => t.name),
      echo: await client.callTool({ name: 'echo', arguments: { message: 'héllo € 😀' } }),
    });
    const { direct } = await bothWays({ server: () => [EVERYTHING, 'stdio'], connect: v2Client('auto'), script });
    assert.equal(direct.result.version, '2025-11-25');
    assert.ok(direct.result.tools.includes('echo'), direct.result.tools.join(', '));
    assert.deepEqual(direct.result.echo.content, [{ type: 'text', text: 'Echo: héllo € 😀' }]);
    const [probe, session] = direct.wire;
    assert.deepEqual(methodsOf(probe.c2s), ['server/discover']);
    assert.match(methodsOf(probe.s2c)[0], /^error /);
    assert.deepEqual(methodsOf(session.c2s), ['initialize', 'notifications/initialized', 'tools/list', 'tools/call']);
    assert.equal(messagesOf(session.s2c)[0].result.protocolVersion, '2025-11-25');
  });

  test('4. SDK v1 Client ↔ SDK v2 server (dual-era): initialize, tools/list, tools/call', async () => {
    const script = async ({ client }) => ({
      server: client.getServerVersion(),
      tools: (await client.listTools()).tools.map((t) => t.name),
      echo: await client.callTool({ name: 'echo', arguments: { text: 'v1 says hi' } }),
    });
    const { direct } = await bothWays({ server: (pids) => v2Server(pids), connect: v1Client, script });
    assert.deepEqual(direct.result.server, { name: 'v2-fixture', version: '1.0.0' });
    assert.deepEqual(direct.result.tools, ['echo', 'confirm', 'register-later', 'slow']);
    assert.deepEqual(direct.result.echo.content, [{ type: 'text', text: 'v1 says hi' }]);
    assert.equal(direct.wire.length, 1, 'the v1 client starts the command once');
    assert.deepEqual(methodsOf(direct.wire[0].c2s), ['initialize', 'notifications/initialized', 'tools/list', 'tools/call']);
  });
});
