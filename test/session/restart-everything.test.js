// mcp-server-everything behind mcpguard --restart, SIGKILLed from outside:
// the SDK client's next tools/list, on the same connection, is the same as
// before, and the records name the kill.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, ROOT, tempDir } from '../helpers/run.js';
import { assertAllVerify } from '../helpers/peers.js';
import { childrenOf, until } from './restart-wire.js';

const SERVER = join(ROOT, 'node_modules', '.bin', 'mcp-server-everything');
const TIMEOUT = 90000;
const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const serversOf = (ppid) => childrenOf(ppid, 'everything');

describe('server-everything restarted after SIGKILL', { timeout: TIMEOUT, skip: process.platform !== 'linux' && 'needs /proc' }, () => {
  test('tools/list through mcpguard is the same before and after', async () => {
    const tmp = tempDir('mcpguard-restart-everything-');
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, '--record-dir', tmp.dir, '--restart', 'on-failure', '--restart-delay', '0', '--', SERVER, 'stdio'],
      cwd: ROOT,
      env: { ...process.env },
      stderr: 'pipe',
    });
    transport.stderr.on('data', () => {});
    const client = new Client({ name: 'restart-everything', version: '1.0.0' });
    cleanups.push(() => {
      if (transport.pid)
        for (const pid of serversOf(transport.pid))
          try {
            process.kill(pid, 'SIGKILL');
          } catch {}
      if (transport.pid)
        try {
          process.kill(transport.pid, 'SIGKILL');
        } catch {}
      tmp.cleanup();
    });
    await client.connect(transport);
    const guardPid = transport.pid;
    const before = await client.listTools();
    assert.ok(before.tools.length > 5, `tools: ${before.tools.length}`);
    const [first] = serversOf(guardPid);
    assert.ok(first, 'server-everything runs under mcpguard');

    process.kill(first, 'SIGKILL');
    await until(() => serversOf(guardPid).some((pid) => pid !== first), 30000, 'a new server-everything');
    const afterKill = await client.listTools();
    assert.deepEqual(afterKill, before);
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'still here' } });
    assert.deepEqual(echo.content, [{ type: 'text', text: 'Echo: still here' }]);
    assert.equal(transport.pid, guardPid, 'no reconnect');
    await client.close();

    const [log] = await assertAllVerify(tmp.dir, 1);
    const ends = log.records.filter((r) => r.type === 'generation_end');
    assert.deepEqual(
      ends.map((r) => [r.generation, r.signal]),
      [
        [1, 'SIGKILL'],
        [2, ends[1].signal],
      ],
    );
    const [restart] = log.records.filter((r) => r.type === 'restart');
    assert.deepEqual([restart.generation, restart.handshake_replayed, restart.tools_changed], [2, true, false]);
  });
});
