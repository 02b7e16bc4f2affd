// Probe sessions. An SDK v2 client in auto (or pin) mode runs the command an
// extra time just for its server/discover probe, then ends that copy with
// stdin EOF and SIGTERM at once, and SIGKILL one second later. A server that
// takes longer than that to exit used to leave mcpguard SIGKILLed before it
// wrote the session's end and seal: `verify` called it a crash. A session that
// ran only server/discover, all answered, and was ended by its client is now
// sealed first (recorded as a probe), and the child is shut down after.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { BIN, PLANTED_VARS, ROOT, frame, killStarted, runGuard, sessionEnd, tempDir } from '../helpers/run.js';
import { V2_SERVER, assertAllVerify, isFixtureServer, killServers, recordsOf } from '../helpers/peers.js';

const TIMEOUT = 60000;
const EXIT_DELAY_MS = 2500;

const cleanups = [];
after(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
  killStarted();
});

function workspace() {
  const tmp = tempDir('mcpguard-probe-');
  const pidDir = join(tmp.dir, 'pids');
  const recordDir = join(tmp.dir, 'records');
  mkdirSync(pidDir);
  cleanups.push(() => {
    killServers(pidDir);
    tmp.cleanup();
  });
  return { pidDir, recordDir };
}

/** Wait until no copy of the fixture server from `pidDir` runs; false if some still do after `ms`. */
async function serversGone(pidDir, ms) {
  const deadline = Date.now() + ms;
  for (;;) {
    const alive = readdirSync(pidDir).map(Number).filter(isFixtureServer);
    if (alive.length === 0) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const endOf = (log) => log.records.find((r) => r.type === 'session_end');
const methodsOf = (log) => log.records.filter((r) => r.type === 'call_attempt').map((r) => r.method);

/** Run the SDK v2 client (auto) through mcpguard against the fixture; the session lists tools and calls echo. */
async function autoClientRun(serverOptions) {
  const { pidDir, recordDir } = workspace();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, '--record-dir', recordDir, '--', process.execPath, V2_SERVER, '--pid-dir', pidDir, ...serverOptions],
    cwd: ROOT,
    env: { ...process.env, ...PLANTED_VARS },
    stderr: 'pipe',
  });
  transport.stderr.on('data', () => {});
  const client = new Client({ name: 'mcpguard-probe-test', version: '1.0.0' }, { capabilities: {}, versionNegotiation: { mode: 'auto' } });
  try {
    await client.connect(transport);
    assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'after the probe' } });
    assert.equal(echo.content[0].text, 'after the probe');
  } finally {
    const pid = transport.pid;
    await client.close().catch(() => {});
    if (pid)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
  }
  // The probe's server outlived its mcpguard (SIGKILLed by the client): the watchdog ends it.
  assert.ok(await serversGone(pidDir, 15000), 'every copy of the server has exited');
  const logs = await assertAllVerify(recordDir, 2);
  const [probe, session] = logs;
  assert.deepEqual(methodsOf(probe), ['server/discover']);
  assert.deepEqual(methodsOf(session), ['tools/call']);
  return { probe: endOf(probe), session: endOf(session), recordDir };
}

describe('probe sessions are sealed before the client can SIGKILL mcpguard', { timeout: TIMEOUT }, () => {
  test(`SDK v2 client (auto) against a server that takes ${EXIT_DELAY_MS} ms to exit: every log verifies, the probe is recorded as one`, async () => {
    const { probe, session, recordDir } = await autoClientRun(['--exit-delay', String(EXIT_DELAY_MS)]);
    assert.equal(probe.probe, true, JSON.stringify(probe));
    assert.match(probe.end_reason, /^(client_eof|signal_SIGTERM)$/);
    // Written before the child was waited for: its exit is not in the record, and the record says so.
    assert.equal(probe.child_exit, 'not_awaited');
    assert.equal(probe.exit_code, null);
    assert.deepEqual(probe.calls, { completed: 1 });
    // The session proper keeps the usual order: the child's exit is in its record.
    assert.equal(session.probe, undefined);
    assert.equal(session.end_reason, 'client_eof');
    assert.equal(session.exit_code, 0);

    // The sessions view marks the probe.
    const json = await runGuard(['sessions', '--record-dir', recordDir, '--json']).done;
    const rows = json.stdout
      .toString()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line));
    assert.deepEqual(
      rows.map((r) => r.probe),
      [undefined, true],
    ); // newest first: the real session, then the probe
    const table = await runGuard(['sessions', '--record-dir', recordDir]).done;
    const lines = table.stdout.toString().split('\n');
    assert.match(lines[2], /\(probe\)/, table.stdout.toString());
    assert.doesNotMatch(lines[1], /\(probe\)/, table.stdout.toString()); // the command may hold 'probe' (a temporary directory)
  });

  test('a server that exits at once: the probe is still recorded as a probe, and verifies', async () => {
    const { probe, session } = await autoClientRun([]);
    assert.equal(probe.probe, true, JSON.stringify(probe));
    assert.equal(probe.child_exit, 'not_awaited');
    assert.equal(session.probe, undefined);
  });
});

describe('what counts as a probe session', { timeout: TIMEOUT }, () => {
  const META = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': {},
  };
  const discover = (id) => frame({ jsonrpc: '2.0', id, method: 'server/discover', params: { _meta: META } });
  const list = (id) => frame({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: META } });

  /**
   * Write `input` to mcpguard in front of the fixture, close stdin once `answers`
   * lines came back; the session_end record and the summary on stderr.
   */
  async function raw(input, answers, serverOptions = []) {
    const { pidDir, recordDir } = workspace();
    const run = runGuard(['--record-dir', recordDir, '--session-summary', 'on', '--', process.execPath, V2_SERVER, '--pid-dir', pidDir, ...serverOptions], {
      input,
      cwd: ROOT,
      keepOpen: true,
    });
    let seen = 0;
    const closeWhenAnswered = () => {
      if (seen >= answers) run.child.stdin.end();
    };
    run.child.stdout.on('data', (chunk) => {
      seen += chunk.toString().split('\n').length - 1;
      closeWhenAnswered();
    });
    closeWhenAnswered();
    const { code, stdout, stderr } = await run.done;
    const { logs, results } = await recordsOf(recordDir);
    assert.deepEqual(
      results.map((r) => r.status),
      ['ok'],
    );
    return { code, stdout: stdout.toString(), stderr, end: endOf(logs[0]), summary: sessionEnd(stderr) };
  }

  test('only server/discover, answered, then stdin EOF: a probe; the summary on stderr still has the exit', async () => {
    const { code, stdout, end, summary } = await raw(discover('d1'), 1);
    assert.equal(code, 0);
    assert.match(stdout, /"supportedVersions":\["2026-07-28"\]/);
    assert.equal(end.probe, true);
    assert.equal(end.end_reason, 'client_eof');
    assert.equal(end.child_exit, 'not_awaited');
    // The summary is written at the very end, with what the shutdown found.
    assert.equal(summary.probe, true);
    assert.equal(summary.exit_code, 0);
  });

  test("what happens after a probe's seal stays out of its log: noise the server writes on its way out", async () => {
    const { code, stderr, end, summary } = await raw(discover('d1'), 1, ['--exit-noise', 'bye from the server']);
    assert.equal(code, 0, stderr);
    assert.equal(end.probe, true);
    assert.deepEqual(end.rejected, { client: 0, child: 0 }, 'the record was written before the noise');
    assert.match(stderr, /child stdout line 2 is not JSON-RPC: "bye from the server"/);
    assert.match(stderr, /1 event\(s\) after the probe session's log was sealed are not in it/);
    assert.deepEqual(summary.rejected, { client: 0, child: 1 }, 'the summary has it');
  });

  test("server/discover and then another request: an ordinary session, the child's exit in its record", async () => {
    const { end } = await raw(discover('d1') + list(1), 2);
    assert.equal(end.probe, undefined);
    assert.equal(end.child_exit, undefined);
    assert.equal(end.exit_code, 0);
  });

  test('no request at all: not a probe', async () => {
    const { end } = await raw('', 0);
    assert.equal(end.probe, undefined);
    assert.equal(end.exit_code, 0);
  });
});
