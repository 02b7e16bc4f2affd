// The headline use: `mcpguard -- python3 server.py`, with a server written with
// the Python standard library only (test/fixtures/stdlib_server.py). Driven once
// by the official SDK Client and once with raw bytes checked line by line.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { BIN, ROOT, fixture, frame, killStarted, runGuardUngated, sessionEnd } from '../helpers/run.js';
import { assertProtocolStdout, messages } from '../helpers/stdout-check.js';

const SERVER = fixture('stdlib_server.py');
const TIMEOUT = 30000;

after(killStarted);

describe('SDK Client → mcpguard → stdlib Python server', { timeout: TIMEOUT }, () => {
  let transport;
  let client;
  const stderr = [];

  before(async () => {
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, '--', 'python3', SERVER],
      stderr: 'pipe',
      cwd: ROOT,
      env: { ...process.env },
    });
    transport.stderr.on('data', (chunk) => stderr.push(chunk));
    client = new Client({ name: 'mcpguard-python-test', version: '1.0.0' });
    await client.connect(transport);
  });

  after(async () => {
    const pid = transport?.pid;
    await client?.close().catch(() => {});
    if (pid)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    const log = Buffer.concat(stderr).toString('utf8');
    // The server's stderr is relayed, it saw stdin close, and nothing was rejected or diverted.
    assert.match(log, /stdlib_server: started/, log);
    assert.match(log, /stdlib_server: notification notifications\/initialized/, log);
    assert.doesNotMatch(log, /mcpguard: rejected|is not JSON-RPC/, log);
  });

  test("initialize negotiated the SDK's protocol version", () => {
    assert.deepEqual(client.getServerVersion(), { name: 'stdlib-server', version: '1.0.0' });
    assert.deepEqual(client.getServerCapabilities(), { tools: {} });
    assert.equal(client.getInstructions(), 'Adds numbers.');
  });

  test('tools/list has the one tool', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['add'],
    );
    assert.deepEqual(tools[0].inputSchema.required, ['a', 'b']);
  });

  test('tools/call add: text and structured content (validated by the SDK against outputSchema)', async () => {
    const r = await client.callTool({ name: 'add', arguments: { a: 2, b: 40.5 } });
    assert.deepEqual(r.content, [{ type: 'text', text: '2 + 40.5 = 42.5' }]);
    assert.deepEqual(r.structuredContent, { sum: 42.5 });
    assert.equal(r.isError, undefined);
  });

  test('tools/call add with bad arguments: a tool error result', async () => {
    const r = await client.callTool({ name: 'add', arguments: { a: 'two', b: 1 } });
    assert.equal(r.isError, true);
  });

  test('concurrent calls are each answered once, matched by id', async () => {
    const calls = Array.from({ length: 20 }, (_, i) => client.callTool({ name: 'add', arguments: { a: i, b: 1000 } }));
    const results = await Promise.all(calls);
    assert.deepEqual(
      results.map((r) => r.structuredContent.sum),
      Array.from({ length: 20 }, (_, i) => i + 1000),
    );
  });

  test("an unknown method comes back as the server's -32601", async () => {
    await assert.rejects(client.listPrompts(), (e) => e instanceof McpError && e.code === -32601);
  });

  test('ping', async () => {
    assert.deepEqual(await client.ping(), {});
  });
});

/** Run python3 SERVER directly with `input`; stdout as raw bytes. */
function runDirect(input) {
  const child = spawn('python3', [SERVER], { stdio: ['pipe', 'pipe', 'pipe'] });
  const out = [];
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.resume();
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('python3 did not finish'));
    }, TIMEOUT);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out) });
    });
  });
}

describe('raw bytes → mcpguard → stdlib Python server', () => {
  const session = [
    frame({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
    frame({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    frame({ jsonrpc: '2.0', id: 'two', method: 'tools/list' }),
    frame({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'add', arguments: { a: 2, b: 40 } } }),
    // Non-ASCII in a string: forwarded as the same bytes both ways.
    frame({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 'é€😀' } } }),
    frame({ jsonrpc: '2.0', id: 5, method: 'ping' }),
    frame({ jsonrpc: '2.0', id: 6, method: 'resources/list' }),
  ].join('');

  test("a clean session: every request answered once, exit 0, stdout byte-identical to the server's own", { timeout: TIMEOUT }, async () => {
    const { done } = runGuardUngated(['--', 'python3', SERVER], { input: session });
    const r = await done;
    assert.equal(r.code, 0, r.stderr);
    assertProtocolStdout(r.stdout);
    const out = messages(r.stdout);
    assert.deepEqual(
      out.map((m) => m.id),
      [1, 'two', 3, 4, 5, 6],
    );
    assert.equal(out[0].result.protocolVersion, '2025-06-18');
    assert.deepEqual(out[2].result.structuredContent, { sum: 42 });
    assert.equal(out[3].result.isError, true);
    assert.deepEqual(out[4].result, {});
    assert.equal(out[5].error.code, -32601);
    assert.match(r.stderr, /stdlib_server: started\n/);
    assert.match(r.stderr, /stdlib_server: stdin closed, exiting\n/);
    assert.doesNotMatch(r.stderr, /mcpguard: rejected|is not JSON-RPC/);
    const end = sessionEnd(r.stderr);
    assert.equal(end.exit_code, 0);
    assert.equal(end.stdout_noise_lines, 0);

    const direct = await runDirect(session);
    assert.equal(direct.code, 0);
    assert.ok(r.stdout.equals(direct.stdout), `mcpguard's stdout differs from the server's:\n${r.stdout}\n---\n${direct.stdout}`);
  });

  test('reject mode: a frame Python would accept (NaN) never reaches the server; the session goes on', { timeout: TIMEOUT }, async () => {
    const input =
      frame({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }) +
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":{"a":NaN,"b":1}}}\n' +
      '{"jsonrpc":"2.0","id":8,"method":"ping","id":9}\n' +
      frame({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } });
    const { done } = runGuardUngated(['--on-invalid=reject', '--', 'python3', SERVER], { input });
    const r = await done;
    assert.equal(r.code, 0, r.stderr);
    const out = messages(r.stdout);
    // mcpguard answers a rejection at once, so it may overtake the server's answers.
    const rejections = out.filter((m) => m.error);
    assert.deepEqual(
      rejections.map((m) => [m.id, m.error.code]),
      [
        [7, -32700],
        [null, -32700],
      ],
    );
    assert.match(rejections[0].error.message, /^mcpguard rejected the frame: /);
    assert.deepEqual(
      out.filter((m) => m.result).map((m) => m.id),
      [1, 10],
    );
    assert.deepEqual(out.find((m) => m.id === 10).result.structuredContent, { sum: 3 });
    // The server's own log: it saw initialize and id 10, nothing else.
    const served = r.stderr.split('\n').filter((l) => l.startsWith('server| stdlib_server: request'));
    assert.deepEqual(served, ['server| stdlib_server: request initialize id=1', 'server| stdlib_server: request tools/call id=10']);
    assert.doesNotMatch(r.stderr, /stdlib_server: parse error/);
  });
});
