// The client's EOF means "no more requests", not "drop the ones I sent": every
// request read before it is decided by the gate (with mcpguard's defaults) and,
// if allowed, dispatched and answered before the server's stdin is closed. A
// card shown by elicitation can no longer be answered, so its call is denied
// at once, saying why. The fixture records every line it reads.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { BIN, FIXTURES, frame, killStarted, readLines, runCommand, sessionEnd, tempDir } from '../helpers/run.js';

const TIMEOUT = 30000;
const temps = [];
after(() => {
  killStarted();
  for (const t of temps) t.cleanup();
});

const init = (caps = {}) => ({
  jsonrpc: '2.0',
  id: 'init',
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: caps, clientInfo: { name: 'eof-test', version: '1' } },
});
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const call = (id, name, args) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** mcpguard (defaults, no flag turning the gate off) over gate-server.py, the whole input written at once and closed. */
async function scripted(messages, args = []) {
  const t = tempDir();
  temps.push(t);
  const atServer = join(t.dir, 'server-lines');
  const records = join(t.dir, 'records');
  const r = await runCommand(process.execPath, [BIN, `--record-dir=${records}`, ...args, '--', 'python3', join(FIXTURES, 'gate-server.py')], {
    input: messages.map(frame).join(''),
    env: { RECORD_LINES: atServer },
    timeout: TIMEOUT,
  }).done;
  const out = r.stdout
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const files = readdirSync(records, { recursive: true }).filter((f) => String(f).endsWith('.jsonl'));
  const recs = files.flatMap((f) =>
    readFileSync(join(records, String(f)), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
  );
  return { ...r, out, atServer: readLines(atServer).map((l) => JSON.parse(l)), records: recs, summary: sessionEnd(r.stderr) };
}

const endOf = (records, id) => records.find((r) => r.type === 'call_end' && r.request_id === id);

test('calls sent before EOF, before any tools/list: mcpguard learns the tools, checks each call, dispatches it, and the server answers it', {
  timeout: TIMEOUT,
}, async () => {
  const r = await scripted([init(), initialized, call(1, 'echo', { text: 'hi' }), call(2, 'echo', { text: 7 }), call(3, 'echo', { text: 'last' })]);
  assert.equal(r.code, 0, r.stderr);
  const one = r.out.find((m) => m.id === 1);
  assert.equal(JSON.parse(one.result.content[0].text).arguments.text, 'hi', 'answered by the server');
  const two = r.out.find((m) => m.id === 2);
  assert.equal(two.result.isError, true, 'bad arguments: refused by the gate');
  assert.match(two.result.content[0].text, /^mcpguard refused this call before it reached the server/);
  assert.ok(r.out.find((m) => m.id === 3)?.result?.content, 'the last call, too, was answered by the server');
  const called = r.atServer.filter((m) => m.method === 'tools/call').map((m) => m.id);
  assert.deepEqual(called, [1, 3], 'allowed calls reached the server, the refused one did not');
  assert.equal(endOf(r.records, 1).state, 'completed');
  assert.equal(endOf(r.records, 2).state, 'rejected');
  assert.equal(endOf(r.records, 3).state, 'completed');
  assert.equal(r.summary.end_reason, 'client_eof');
  assert.equal(r.out.filter((m) => m.id === 1 || m.id === 2 || m.id === 3).length, 3, 'exactly one answer each');
});

test('a call that needs a card, decided after the client closed its input: denied at once (no card can be answered any more); zero bytes of the call at the server', {
  timeout: TIMEOUT,
}, async () => {
  const policy = JSON.stringify({ rules: [{ tool: 'delete_file', decision: 'ask' }], default: 'allow' });
  const t = tempDir();
  temps.push(t);
  const file = join(t.dir, 'policy.json');
  (await import('node:fs')).writeFileSync(file, policy);
  const r = await scripted(
    [
      init({ elicitation: {} }),
      initialized,
      { jsonrpc: '2.0', id: 'l', method: 'tools/list' },
      call(1, 'delete_file', { path: '/tmp/x' }),
      call(2, 'echo', { text: 'ok' }),
    ],
    ['--policy', file, '--approval-timeout=60s', '--grace=20s'],
  );
  assert.equal(r.code, 0, r.stderr);
  const card = r.out.find((m) => m.method === 'elicitation/create');
  assert.equal(card, undefined, 'no card: the call was decided after the EOF, when no card could be answered any more');
  const one = r.out.find((m) => m.id === 1);
  assert.equal(one.result.isError, true);
  assert.match(
    one.result.content[0].text,
    /not approved: policy rule 1 asks for a person's approval, and the client closed its input before a card could be answered/,
  );
  assert.ok(r.out.find((m) => m.id === 2)?.result?.content, 'the other call was answered by the server');
  assert.deepEqual(
    r.atServer.filter((m) => m.method === 'tools/call').map((m) => m.id),
    [2],
  );
  const end = endOf(r.records, 1);
  assert.equal(end.state, 'denied');
  assert.equal(end.decision.by, 'approval');
  // Denied at the EOF, not at the 60 s card deadline nor after the 20 s grace.
  assert.ok(r.summary.duration_ms < 15000, `the session took ${r.summary.duration_ms} ms`);
});

test('a card already shown when the client closes its input: denied at the EOF, the card withdrawn, zero bytes of the call at the server', {
  timeout: TIMEOUT,
}, async () => {
  const { conversation } = await import('../helpers/conversation.js');
  const t = tempDir();
  temps.push(t);
  const file = join(t.dir, 'policy.json');
  (await import('node:fs')).writeFileSync(file, JSON.stringify({ rules: [{ tool: 'delete_file', decision: 'ask' }], default: 'allow' }));
  const c = conversation(['python3', join(FIXTURES, 'gate-server.py')], ['--policy', file, '--approval-timeout=60s', '--grace=20s']);
  try {
    c.send(init({ elicitation: {} }), initialized, { jsonrpc: '2.0', id: 'l', method: 'tools/list' });
    await c.waitFor((m) => m.id === 'l', 'the tools/list answer');
    c.send(call(1, 'delete_file', { path: '/tmp/x' }));
    const card = await c.waitFor((m) => m.method === 'elicitation/create', 'the card');
    const r = await c.finish();
    const one = r.out.find((m) => m.id === 1);
    assert.equal(one.result.isError, true);
    assert.match(one.result.content[0].text, /not approved: the client closed its input before the approval card was answered/);
    assert.ok(
      r.out.find((m) => m.method === 'notifications/cancelled' && m.params.requestId === card.id),
      'the card was withdrawn',
    );
    assert.equal(r.out.filter((m) => m.id === 1).length, 1, 'one answer');
    assert.deepEqual(
      c.atServer().filter((m) => m.method === 'tools/call'),
      [],
      'the call never reached the server',
    );
    const end = endOf(r.records, 1);
    assert.equal(end.state, 'denied');
    assert.equal(end.decision.card.answer, 'client_closed');
    assert.ok(r.summary.duration_ms < 15000, `the session took ${r.summary.duration_ms} ms: the card was denied at the EOF`);
  } finally {
    c.cleanup();
  }
});
