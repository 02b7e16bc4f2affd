// What a person reads when the gate refuses: policy rules counted from 1
// (the record keeps the 0-based index), and a held pin change that cannot be
// asked about names the change and `mcpguard pins accept`, tagged `pins`.
// Real SDK v1 client, the real binary with its defaults, Python fixtures that
// record every line they read.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, PLANTED_VARS, ROOT, fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { recordsOf } from '../helpers/peers.js';

const TIMEOUT = 60000;
const cleanups = [];
after(() => {
  for (const c of cleanups.splice(0)) c();
  killStarted();
});

function home() {
  const tmp = tempDir('mcpguard-hour-gate-');
  cleanups.push(tmp.cleanup);
  return { dir: tmp.dir, records: join(tmp.dir, 'state'), variant: join(tmp.dir, 'variant'), lines: join(tmp.dir, 'server-lines') };
}

/** One session of an SDK v1 client without elicitation in front of mcpguard (defaults but `args`). */
async function session(h, args, command, script) {
  const client = new Client({ name: 'hour', version: '1.0.0' }, { capabilities: {} });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, '--record-dir', h.records, ...args, '--', ...command],
    cwd: ROOT,
    env: { ...process.env, ...PLANTED_VARS, PINS_VARIANT_FILE: h.variant, RECORD_LINES: h.lines },
    stderr: 'pipe',
  });
  const stderr = [];
  transport.stderr.on('data', (c) => stderr.push(c));
  try {
    await client.connect(transport);
    return { result: await script(client), stderr: () => Buffer.concat(stderr).toString('utf8') };
  } finally {
    await client.close().catch(() => {});
  }
}

const linesRead = (h) => (existsSync(h.lines) ? readFileSync(h.lines, 'utf8') : '');

test('a held pin change with no way to ask: says what changed and how to accept it, tagged by pins; zero bytes at the server', {
  timeout: TIMEOUT,
}, async () => {
  const h = home();
  const server = ['python3', fixture('pins-server.py')];
  writeFileSync(h.variant, 'base');
  await session(h, [], server, async (c) => c.listTools());
  writeFileSync(h.variant, 'description');
  const { result } = await session(h, [], server, async (c) => {
    await c.listTools();
    return c.callTool({ name: 'read_file', arguments: { path: '/held-marker' } });
  });
  assert.equal(result.isError, true);
  const text = result.content[0].text;
  assert.match(text, /^mcpguard denied this call before it reached the server: the definition of tool "read_file" changed since it was pinned/);
  assert.match(text, /description: /, 'says what changed');
  assert.match(text, /there is no way to ask/);
  assert.match(text, /A person can accept it with: mcpguard pins accept [0-9a-f]{32} "read_file"$/);
  assert.ok(!linesRead(h).includes('/held-marker'), 'zero bytes of the refused call at the server');
  const { logs } = await recordsOf(h.records);
  const end = logs.flatMap((l) => l.records).find((r) => r.type === 'call_end' && r.tool === 'read_file' && r.state === 'denied');
  assert.equal(end.decision.by, 'pins');
  const activity = (await runGuard(['activity', '--record-dir', h.records], { timeout: TIMEOUT }).done).stdout.toString();
  assert.match(activity, /changed since it was pinned/);
});

test('policy rules are counted from 1 in the refusal, the stderr diagnostics and the views; the record keeps the 0-based index', {
  timeout: TIMEOUT,
}, async () => {
  const h = home();
  const policy = join(h.dir, 'policy.json');
  writeFileSync(policy, JSON.stringify({ rules: [{ tool: 'add', when: { properties: { a: { const: 1 } } }, decision: 'deny', reason: 'no ones' }] }));
  const { result } = await session(h, ['--policy', policy], ['python3', fixture('stdlib_server.py')], async (c) => {
    await c.listTools();
    return c.callTool({ name: 'add', arguments: { a: 1, b: 2 } });
  });
  assert.equal(result.isError, true);
  assert.match(result.content[0].text, /denied by policy rule 1 \(no ones\)$/);
  const { logs } = await recordsOf(h.records);
  const end = logs.flatMap((l) => l.records).find((r) => r.type === 'call_end' && r.tool === 'add');
  assert.equal(end.decision.rule, 0, "the record's machine field is the 0-based index, as docs/records.md says");
  const shown = (await runGuard(['show', end.call_id, '--record-dir', h.records], { timeout: TIMEOUT }).done).stdout.toString();
  assert.match(shown, /policy rule 1\b/);
  assert.doesNotMatch(shown, /"rule":0/, 'the human view does not show the 0-based index as if it were the rule number');
  // A policy that does not load names its rule the way a person counts.
  writeFileSync(
    policy,
    JSON.stringify({
      rules: [
        { tool: 'add', decision: 'deny' },
        { tool: 'x', decision: 'maybe' },
      ],
    }),
  );
  const bad = await runGuard(['--policy', policy, '--', 'python3', fixture('stdlib_server.py')], { timeout: TIMEOUT }).done;
  assert.equal(bad.code, 125);
  assert.match(bad.stderr, /rule 2: "decision" must be one of/);
});
