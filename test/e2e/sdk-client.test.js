// The official SDK Client over StdioClientTransport, once straight to
// mcp-server-everything and once through mcpguard: every result must be equal,
// and mcpguard must have rejected or diverted nothing on the way.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, ROOT } from '../helpers/run.js';

const SERVER = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
const TIMEOUT = 60000;

/** Connect an SDK client to `command args`; stderr is piped and always drained. */
async function connect(command, args) {
  const transport = new StdioClientTransport({ command, args, stderr: 'pipe', cwd: ROOT, env: { ...process.env } });
  const stderr = [];
  transport.stderr.on('data', (chunk) => stderr.push(chunk));
  const client = new Client({ name: 'mcpguard-sdk-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr: () => Buffer.concat(stderr).toString('utf8') };
}

async function disconnect(peer) {
  if (!peer) return;
  const pid = peer.transport.pid;
  await peer.client.close().catch(() => {});
  // close() escalates to SIGKILL itself; this only covers a close() that threw early.
  if (pid)
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
}

describe('SDK Client: mcpguard is transparent in front of mcp-server-everything', { timeout: TIMEOUT }, () => {
  let direct;
  let guarded;

  before(async () => {
    [direct, guarded] = await Promise.all([connect(SERVER, ['stdio']), connect(process.execPath, [BIN, '--', SERVER, 'stdio'])]);
  });

  after(async () => {
    await Promise.all([disconnect(direct), disconnect(guarded)]);
    // Only now is mcpguard's stderr complete: nothing was rejected or diverted.
    if (guarded) {
      const log = guarded.stderr();
      assert.match(log, /Starting default \(STDIO\) server/, "the child's stderr is relayed");
      assert.doesNotMatch(log, /mcpguard: rejected/, log);
      assert.doesNotMatch(log, /is not JSON-RPC/, log);
    }
  });

  test('initialize: same server info, capabilities and instructions', () => {
    assert.equal(guarded.client.getServerVersion().name, 'mcp-servers/everything');
    assert.deepEqual(guarded.client.getServerVersion(), direct.client.getServerVersion());
    assert.deepEqual(guarded.client.getServerCapabilities(), direct.client.getServerCapabilities());
    assert.equal(guarded.client.getInstructions(), direct.client.getInstructions());
  });

  test('tools/list: the same tools', async () => {
    const [a, b] = await Promise.all([direct.client.listTools(), guarded.client.listTools()]);
    const names = b.tools.map((t) => t.name);
    for (const name of ['echo', 'get-sum', 'trigger-long-running-operation']) assert.ok(names.includes(name), `${name} listed: ${names}`);
    assert.deepEqual(b, a);
  });

  test('tools/call echo: the same result, non-ASCII text intact', async () => {
    const args = { name: 'echo', arguments: { message: 'héllo € 😀 "quoted" \\ line\nbreak' } };
    const [a, b] = await Promise.all([direct.client.callTool(args), guarded.client.callTool(args)]);
    assert.deepEqual(b.content, [{ type: 'text', text: 'Echo: héllo € 😀 "quoted" \\ line\nbreak' }]);
    assert.deepEqual(b, a);
  });

  test('tools/call get-sum: the same result', async () => {
    const args = { name: 'get-sum', arguments: { a: 2, b: 40.5 } };
    const [a, b] = await Promise.all([direct.client.callTool(args), guarded.client.callTool(args)]);
    assert.deepEqual(b.content, [{ type: 'text', text: 'The sum of 2 and 40.5 is 42.5.' }]);
    assert.deepEqual(b, a);
  });

  test("tools/call with a schema error: the server refuses it directly; mcpguard refuses it first, against the server's own inputSchema, naming each failing place", async () => {
    const args = { name: 'get-sum', arguments: { a: 'two' } };
    const [a, b] = await Promise.all([direct.client.callTool(args), guarded.client.callTool(args)]);
    assert.equal(a.isError, true, "the server's own refusal");
    assert.equal(b.isError, true);
    assert.equal(b._meta['io.mcpguard/refused'].by, 'schema');
    assert.match(b.content[0].text, /^mcpguard refused this call before it reached the server: Invalid arguments for tool "get-sum"/);
    assert.match(b.content[0].text, /- \/b: required/);
    assert.match(b.content[0].text, /- \/a: type: must be number/);
  });

  test('trigger-long-running-operation: progress notifications arrive through mcpguard', async () => {
    const args = { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 4 } };
    const run = async (peer) => {
      const progress = [];
      const result = await peer.client.callTool(args, undefined, { onprogress: (p) => progress.push(p), timeout: 20000 });
      return { result, progress };
    };
    const [a, b] = await Promise.all([run(direct), run(guarded)]);
    // The server writes step 4's notification just before the response. The SDK
    // client handles notifications a microtask later than responses, so when both
    // lines arrive in one read the last notification finds its handler already
    // gone (with or without mcpguard). Steps 1-3 are always delivered, in order.
    const steps = [
      [1, 4],
      [2, 4],
      [3, 4],
      [4, 4],
    ];
    for (const [who, got] of [
      ['direct', a.progress],
      ['guarded', b.progress],
    ]) {
      const seen = got.map((p) => [p.progress, p.total]);
      assert.ok(seen.length >= 3, `${who}: at least 3 progress notifications, got ${JSON.stringify(seen)}`);
      assert.deepEqual(seen, steps.slice(0, seen.length), `${who}: in order`);
    }
    assert.deepEqual(b.result, a.result);
    assert.match(b.result.content[0].text, /Long running operation completed\. Duration: 1 seconds, Steps: 4\./);
  });

  test('ping: answered through mcpguard', async () => {
    assert.deepEqual(await guarded.client.ping(), await direct.client.ping());
  });
});
