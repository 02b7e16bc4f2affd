// The SDK clients (v1 @modelcontextprotocol/sdk and v2 @modelcontextprotocol/client)
// keep calling tools across three crashes of the server behind mcpguard
// --restart: one connection, one mcpguard process, every call answered once,
// no request read twice by any generation, and the records show 4 generations.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as V2Client } from '@modelcontextprotocol/client';
import { StdioClientTransport as V2Transport } from '@modelcontextprotocol/client/stdio';
import { BIN, PLANTED_VARS, ROOT, readLines, runGuard, tempDir } from '../helpers/run.js';
import { assertAllVerify } from '../helpers/peers.js';
import { CRASHY, clientRequests, isAlive } from './restart-wire.js';

const TIMEOUT = 120000;
const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const CLIENTS = {
  'SDK v1 Client': (options) => ({ client: new V1Client({ name: 'restart-v1', version: '1.0.0' }), transport: new V1Transport(options) }),
  'SDK v2 Client': (options) => ({ client: new V2Client({ name: 'restart-v2', version: '1.0.0' }), transport: new V2Transport(options) }),
};

for (const [label, make] of Object.entries(CLIENTS)) {
  describe(`${label} across three crashes`, { timeout: TIMEOUT }, () => {
    test('keeps calling tools without reconnecting; crashed calls fail once, the rest succeed', async () => {
      const tmp = tempDir('mcpguard-restart-clients-');
      const state = join(tmp.dir, 'state');
      const records = join(tmp.dir, 'records');
      const peer = make({
        command: process.execPath,
        args: [BIN, '--record-dir', records, '--restart', 'on-failure', '--restart-delay', '20ms', '--', 'python3', CRASHY],
        cwd: ROOT,
        env: { ...process.env, ...PLANTED_VARS, STATE_DIR: state, CRASH_AT: '2,4,6' },
        stderr: 'pipe',
      });
      const stderr = [];
      peer.transport.stderr.on('data', (chunk) => stderr.push(chunk));
      cleanups.push(() => {
        for (const pid of readLines(join(state, 'starts')).map(Number))
          if (isAlive(pid))
            try {
              process.kill(pid, 'SIGKILL');
            } catch {}
        if (peer.transport.pid)
          try {
            process.kill(peer.transport.pid, 'SIGKILL');
          } catch {}
        tmp.cleanup();
      });
      await peer.client.connect(peer.transport);
      const guardPid = peer.transport.pid;
      const tools = await peer.client.listTools();
      assert.ok(tools.tools.some((t) => t.name === 'echo'));

      const outcomes = [];
      for (let n = 1; n <= 8; n++) {
        try {
          const result = await peer.client.callTool({ name: 'echo', arguments: { text: `call ${n}` } });
          outcomes.push(result.content[0].text.replace(/ call \d+:.*/, ''));
        } catch (error) {
          assert.equal(error.code, -32000, String(error));
          assert.match(error.message, /exited \(exit code 3\) before answering.*does not retry/);
          outcomes.push('crashed');
        }
      }
      // Crashes at the 2nd, 4th and 6th call: each of those fails, every other call runs on the generation then up.
      assert.deepEqual(outcomes, ['gen 1', 'crashed', 'gen 2', 'crashed', 'gen 3', 'crashed', 'gen 4', 'gen 4']);
      assert.equal(peer.transport.pid, guardPid, 'the same mcpguard process: no reconnect');
      assert.deepEqual((await peer.client.listTools()).tools, tools.tools);
      // While it runs, `sessions` counts the restarts its log shows so far (no session record yet).
      const running = await runGuard(['sessions', '--json', '--record-dir', records], { timeout: 20_000 }).done;
      const [row] = running.stdout
        .toString('utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual([row.liveness, row.end_reason, row.restarts], ['running', null, 3], running.stderr.toString());
      await peer.client.close();

      // Every client request was read by exactly one generation, once.
      const lines = readLines(join(state, 'lines'))
        .map((l) => JSON.parse(l))
        .map((e) => ({ ...e, message: JSON.parse(e.line) }));
      const requests = clientRequests(lines);
      const ids = requests.map(([, id]) => id);
      assert.equal(new Set(ids).size, ids.length, `no request read twice: ${JSON.stringify(requests)}`);
      assert.deepEqual(
        requests.filter(([, , m]) => m === 'tools/call').map(([gen]) => gen),
        [1, 1, 2, 2, 3, 3, 4, 4],
      );
      // Each new generation got the replayed handshake (mcpguard's own ids) and only it.
      assert.deepEqual(
        lines.filter((e) => e.message.method === 'initialize').map((e) => e.gen),
        [1, 2, 3, 4],
      );

      const [log] = await assertAllVerify(records, 1);
      assert.deepEqual(
        log.records.filter((r) => r.type === 'generation_start').map((r) => r.generation),
        [1, 2, 3, 4],
      );
      const calls = log.records.filter((r) => r.type === 'call_end' && r.method === 'tools/call');
      assert.deepEqual(
        calls.map((r) => [r.state, r.generation]),
        [
          ['completed', 1],
          ['unknown_after_dispatch', 1],
          ['completed', 2],
          ['unknown_after_dispatch', 2],
          ['completed', 3],
          ['unknown_after_dispatch', 3],
          ['completed', 4],
          ['completed', 4],
        ],
      );
      const end = log.records.find((r) => r.type === 'session_end');
      assert.deepEqual([end.restarts, end.generations, end.end_reason], [3, 4, 'client_eof']);
      assert.doesNotMatch(Buffer.concat(stderr).toString(), /mcpguard: rejected|is not JSON-RPC/);
    });
  });
}
