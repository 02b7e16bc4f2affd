// `sessions --failed` and a client that probes the era first: Python `mcp` 2.x
// and fastmcp 4 send `server/discover` before `initialize`; a legacy server
// answers "method not found". That is the server telling its era, not a
// failure: the session is healthy unless something else failed.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BIN, FIXTURES, frame, killStarted, runCommand, tempDir } from '../helpers/run.js';

const temps = [];
after(() => {
  killStarted();
  for (const t of temps) t.cleanup();
});

const discover = {
  jsonrpc: '2.0',
  id: 0,
  method: 'server/discover',
  params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
};
const init = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'probe-test', version: '1' } },
};
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };

async function session(dir, messages) {
  const r = await runCommand(process.execPath, [BIN, `--record-dir=${dir}`, '--session-summary=json', '--', 'python3', join(FIXTURES, 'stdlib_server.py')], {
    input: messages.map(frame).join(''),
    timeout: 20000,
  }).done;
  assert.equal(r.code, 0, r.stderr);
  return r.stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

async function sessionsJson(dir, ...args) {
  return viewJson('sessions', dir, ...args);
}

async function viewJson(view, dir, ...args) {
  const r = await runCommand(process.execPath, [BIN, view, '--json', `--record-dir=${dir}`, ...args], { timeout: 20000 }).done;
  assert.equal(r.code, 0, r.stderr);
  return r.stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

test('a server/discover probe answered "method not found" does not make a session failed; a real failed call still does', { timeout: 60000 }, async () => {
  const t = tempDir();
  temps.push(t);
  const out = await session(t.dir, [discover, init, initialized]);
  assert.equal(out.find((m) => m.id === 0).error.code, -32601, 'the legacy server declined the probe');
  assert.ok(out.find((m) => m.id === 1).result, 'then the handshake succeeded');
  const [probed] = await sessionsJson(t.dir);
  assert.equal(probed.failed_calls, 0, JSON.stringify(probed));
  assert.deepEqual(await sessionsJson(t.dir, '--failed'), [], 'no session counts as failed');
  // Nor is the probe a failed call: it keeps its state (error) for --state, flagged, and activity --failed leaves it out.
  const probe = (await viewJson('activity', t.dir)).find((r) => r.method === 'server/discover');
  assert.equal(probe.state, 'error');
  assert.equal(probe.probe_declined, true, JSON.stringify(probe));
  assert.deepEqual(await viewJson('activity', t.dir, '--failed'), [], 'no failed call');
  const shown = await runCommand(process.execPath, [BIN, 'show', 'last', `--record-dir=${t.dir}`], { timeout: 20000 }).done;
  assert.match(shown.stdout.toString('utf8'), /\n {2}calls +2: completed 1, error 1 \(1 a declined era probe, not a failure\)\n/);
  const table = await runCommand(process.execPath, [BIN, 'activity', `--record-dir=${t.dir}`], { env: { COLUMNS: '100' }, timeout: 20000 }).done;
  assert.match(
    table.stdout.toString('utf8'),
    /server\/discover .* error .*\n {4}era probe declined: a legacy server answered "method not found"; not a failure\n/,
  );

  // An unknown method that is not the era probe is still a failed call.
  await session(t.dir, [init, initialized, { jsonrpc: '2.0', id: 2, method: 'no/such/method' }]);
  const failed = await sessionsJson(t.dir, '--failed');
  assert.equal(failed.length, 1);
  assert.equal(failed[0].failed_calls, 1);
  const calls = await viewJson('activity', t.dir, failed[0].session_id, '--failed');
  assert.deepEqual(
    calls.map((r) => [r.method, r.state]),
    [['no/such/method', 'error']],
  );
});

test('sessions --failed says under each row why it counts as failed: a failed call, a server that exited non-zero', { timeout: 60000 }, async () => {
  const t = tempDir();
  temps.push(t);
  await session(t.dir, [discover, init, initialized, { jsonrpc: '2.0', id: 2, method: 'no/such/method' }]);
  const exited = await runCommand(process.execPath, [BIN, `--record-dir=${t.dir}`, '--', 'python3', '-c', 'import sys; sys.exit(3)'], {
    input: '',
    timeout: 20000,
  }).done;
  assert.equal(exited.code, 3, exited.stderr);
  const rows = await sessionsJson(t.dir, '--failed');
  assert.equal(rows.length, 2, 'both sessions count as failed');
  const exited3 = rows.find((r) => r.command.includes('-c')).session_id;
  const callFailed = rows.find((r) => !r.command.includes('-c')).session_id;
  const table = await runCommand(process.execPath, [BIN, 'sessions', '--failed', `--record-dir=${t.dir}`], { env: { COLUMNS: '80' }, timeout: 20000 }).done;
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.toString('utf8').split('\n');
  const under = (id) => lines[lines.findIndex((l) => l.startsWith(id)) + 1];
  // The declined era probe is not a reason; the unknown method is the one failed call.
  assert.equal(under(callFailed), '    failed: 1 failed call', table.stdout.toString());
  assert.equal(under(exited3), '    failed: server exited 3', table.stdout.toString());
  const plain = await runCommand(process.execPath, [BIN, 'sessions', `--record-dir=${t.dir}`], { env: { COLUMNS: '80' }, timeout: 20000 }).done;
  assert.doesNotMatch(plain.stdout.toString('utf8'), /failed:/, 'without --failed the table is as before');
});
