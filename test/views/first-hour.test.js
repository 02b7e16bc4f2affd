// What a new user hits in the first hour with the views: records written
// where the client's environment points (an SDK v1 client drops
// XDG_STATE_HOME), ids to type (`last`), a running session's protocol, and
// `show CALL` for people. Real sessions of the real binary with its defaults,
// in front of a Python stdlib server; the views run as a person runs them.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, ROOT, fixture, frame, killStarted, runCommand, runGuard, tempDir } from '../helpers/run.js';

const TIMEOUT = 60000;
const SERVER = ['python3', fixture('stdlib_server.py')];
const cleanups = [];
after(() => {
  for (const c of cleanups.splice(0)) c();
  killStarted();
});

function scratch() {
  const tmp = tempDir('mcpguard-hour-');
  cleanups.push(tmp.cleanup);
  return tmp.dir;
}

const init = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'hour', version: '1' } },
};
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const add = (id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'add', arguments: { a: 1, b: 2 } } });

/** The relay with mcpguard's defaults (runGuard would add --validate-args=off to a relay run). */
const relay = (args, options) => runCommand(process.execPath, [BIN, ...args], options);

/** One whole session into `dir`: initialize, then an add call; resolves once mcpguard has exited. */
async function oneSession(dir, name) {
  const run = relay(['--record-dir', dir, '--name', name, '--', ...SERVER], {
    input: [init, initialized, add(2)].map(frame).join(''),
    keepOpen: true,
    timeout: TIMEOUT,
  });
  await answered(run.child, 2); // the gate learns the tools first: the call is answered before stdin closes
  run.child.stdin.end();
  const r = await run.done;
  assert.equal(r.code, 0, r.stderr);
}

/** Resolves once mcpguard's stdout has carried the answer with this id. */
function answered(child, id) {
  return new Promise((resolve) => {
    let seen = '';
    child.stdout.on('data', (c) => {
      seen += c;
      if (seen.includes(`"id":${id},`)) resolve();
    });
  });
}

const sessionIds = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) => f.slice(0, -6))
    .sort();

test('a session from an SDK v1 client (its default environment: no XDG_STATE_HOME) is found from a shell that sets XDG_STATE_HOME: the view says where it looked and where the sessions are', {
  timeout: TIMEOUT,
}, async () => {
  const home = scratch();
  const savedHome = process.env.HOME;
  process.env.HOME = home; // the SDK's default environment passes HOME on
  let transport;
  try {
    const client = new Client({ name: 'hour-v1', version: '1.0.0' });
    // No `env`: the transport's own default (HOME, LOGNAME, PATH, SHELL, TERM, USER), as an agent's config gives it.
    transport = new StdioClientTransport({ command: process.execPath, args: [BIN, '--', ...SERVER], cwd: ROOT, stderr: 'pipe' });
    transport.stderr.on('data', () => {});
    await client.connect(transport);
    const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    assert.equal(sum.isError, undefined);
    await client.close();
  } finally {
    process.env.HOME = savedHome;
  }
  const written = join(home, '.local', 'state', 'mcpguard');
  assert.equal(sessionIds(written).length, 1, 'the relay recorded under ~/.local/state/mcpguard');
  const shell = { HOME: home, XDG_STATE_HOME: join(home, 'xdg'), MCPGUARD_HOME: '' };
  const listed = await runGuard(['sessions'], { env: shell, timeout: TIMEOUT }).done;
  assert.equal(listed.code, 0);
  assert.match(listed.stderr, new RegExp(`no sessions in '${join(home, 'xdg', 'mcpguard')}', the record directory from \\$XDG_STATE_HOME`));
  assert.match(
    listed.stderr,
    new RegExp(
      `1 session log in '${written}' \\(the default, where a client that passes neither MCPGUARD_HOME nor XDG_STATE_HOME to mcpguard records\\); read it with: mcpguard sessions --record-dir ${written}\\n`,
    ),
  );
  // The command it names finds the session.
  const there = await runGuard(['sessions', '--record-dir', written], { env: shell, timeout: TIMEOUT }).done;
  assert.match(there.stdout.toString(), new RegExp(sessionIds(written)[0]));
  // The other views say so too, naming the argument again.
  const logs = await runGuard(['logs', 'last'], { env: shell, timeout: TIMEOUT }).done;
  assert.equal(logs.code, 1);
  assert.match(logs.stderr, new RegExp(`read it with: mcpguard logs last --record-dir ${written}\\n`));
  const shown = await runGuard(['show', 's_2'], { env: shell, timeout: TIMEOUT }).done;
  assert.match(shown.stderr, /is the record directory from \$XDG_STATE_HOME/);
  assert.match(shown.stderr, new RegExp(`read it with: mcpguard show s_2 --record-dir ${written}\\n`));
});

test('`last` names the newest session for show, activity and logs', { timeout: TIMEOUT }, async () => {
  const dir = scratch();
  await oneSession(dir, 'older');
  await oneSession(dir, 'newer');
  // Two sessions may start within the same second: the newest is the one named `newer`, not the id that sorts last.
  const named = (id) =>
    readFileSync(join(dir, `${id}.jsonl`), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .find((r) => r.type === 'session_start')?.name;
  const newest = sessionIds(dir).find((id) => named(id) === 'newer');
  assert.ok(newest, 'the newer session was recorded');
  const show = await runGuard(['show', 'last', '--record-dir', dir], { timeout: TIMEOUT }).done;
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout.toString(), new RegExp(`^session ${newest} `));
  assert.match(show.stdout.toString(), /name +newer \(--name\)/);
  const activity = await runGuard(['activity', 'last', '--record-dir', dir], { timeout: TIMEOUT }).done;
  assert.equal(activity.code, 0, activity.stderr);
  assert.match(activity.stdout.toString(), new RegExp(`^session ${newest}  newer`));
  const logs = await runGuard(['logs', 'last', '--record-dir', dir], { timeout: TIMEOUT }).done;
  assert.equal(logs.code, 0, logs.stderr);
  assert.match(logs.stdout.toString(), /==> call c_[0-9a-f]{12} {2}tools\/call add {2}completed /);
  const empty = scratch();
  const none = await runGuard(['logs', 'last', '--record-dir', empty], { timeout: TIMEOUT }).done;
  assert.equal(none.code, 1);
  assert.match(none.stderr, /no sessions in /);
});

test('sessions --running shows the protocol a running session negotiated', { timeout: TIMEOUT }, async () => {
  const dir = scratch();
  const run = relay(['--record-dir', dir, '--', ...SERVER], { input: [init, initialized].map(frame).join(''), keepOpen: true, timeout: TIMEOUT });
  await answered(run.child, 1);
  // The initialize call's final record is written at the end of the turn that answered it.
  let row;
  for (let i = 0; i < 100 && row?.protocol_version == null; i++) {
    const listed = await runGuard(['sessions', '--running', '--json', '--record-dir', dir], { timeout: TIMEOUT }).done;
    row = JSON.parse(listed.stdout.toString().split('\n')[0] || 'null');
    if (row?.protocol_version == null) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(row.liveness, 'running');
  assert.equal(row.protocol_version, '2025-06-18');
  const table = await runGuard(['sessions', '--running', '--record-dir', dir], { env: { COLUMNS: '200' }, timeout: TIMEOUT }).done;
  assert.match(table.stdout.toString().split('\n')[1], /\s2025-06-18\s+running\s/);
  const shown = await runGuard(['show', 'last', '--record-dir', dir], { timeout: TIMEOUT }).done;
  assert.match(shown.stdout.toString(), /\n {2}ended +not yet: running .*\n {2}protocol +2025-06-18\n/);
  run.child.stdin.end();
  assert.equal((await run.done).code, 0);
});

test('show CALL: times to the millisecond, fields without a value left out, the decision spread out', { timeout: TIMEOUT }, async () => {
  const dir = scratch();
  await oneSession(dir, 'calls');
  const activity = (await runGuard(['activity', '--json', '--record-dir', dir], { timeout: TIMEOUT }).done).stdout.toString();
  const call = activity
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((r) => r.tool === 'add');
  const shown = await runGuard(['show', call.call_id, '--utc', '--record-dir', dir], { timeout: TIMEOUT }).done;
  assert.equal(shown.code, 0, shown.stderr);
  const text = shown.stdout.toString();
  assert.match(text, /\n#\d+ {2}\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC {2}call_end\n/, "each record's time to the millisecond");
  assert.match(text, /\n {2}ended_at +\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC\n/);
  assert.doesNotMatch(text, / null\n/, 'no field shown without a value');
  assert.doesNotMatch(text, /\n {2}(decision|chain|traceparent|exit_status) /);
  assert.match(text, /\n {2}state +completed\n/);
});

test('the note names a place whose path holds a quote and an escape sequence written out, and quoted as one shell word', { timeout: TIMEOUT }, async () => {
  const base = scratch();
  const odd = join(base, "it's\u001b[2J");
  await oneSession(odd, 'odd');
  const empty = join(base, 'empty');
  mkdirSync(empty, { mode: 0o700 });
  const listed = await runGuard(['sessions', '--record-dir', empty], { env: { MCPGUARD_HOME: odd }, timeout: TIMEOUT }).done;
  assert.equal(listed.code, 0);
  assert.ok(!listed.stderr.includes('\u001b'), 'no escape sequence reaches the terminal');
  assert.match(listed.stderr, new RegExp(`no sessions in '${empty}', the record directory from --record-dir\\n`));
  const wanted = `1 session log in '${base}/it's\\x1b[2J' ($MCPGUARD_HOME); read it with: mcpguard sessions --record-dir '${base}/it'\\''s\\x1b[2J'\n`;
  assert.ok(listed.stderr.includes(wanted), `${JSON.stringify(listed.stderr)} includes ${JSON.stringify(wanted)}`);
});
