// Live sessions: a session whose mcpguard runs is `running` (by pid AND process
// start time, never by a missing seal), one whose mcpguard was SIGKILLed is
// `crashed`; verify names a live log as live; activity shows an open call's
// age, and --follow sees that call end.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonical } from '../../dist/records/canonical.js';
import { BIN, frame, killStarted, runGuard, tempDir } from '../helpers/run.js';

const tmp = tempDir('mcpguard-live-');
const followers = new Set();
after(() => {
  for (const f of followers) f.kill('SIGKILL');
  killStarted();
  tmp.cleanup();
});

// A server that answers at once, except `slow`, which it answers once the file `release` exists.
const SERVER = `
const { existsSync } = require('node:fs');
const release = process.argv[2];
let buf = '';
process.stdin.on('data', (d) => {
  buf += d;
  for (let nl = buf.indexOf('\\n'); nl !== -1; nl = buf.indexOf('\\n')) {
    const m = JSON.parse(buf.slice(0, nl)); buf = buf.slice(nl + 1);
    if (m.id === undefined) continue;
    const answer = () => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: {} }) + '\\n');
    if (m.method !== 'slow') { answer(); continue; }
    const timer = setInterval(() => { if (existsSync(release)) { clearInterval(timer); answer(); } }, 20);
  }
});
`;

let server;
before(() => {
  server = join(tmp.dir, 'server.cjs');
  writeFileSync(server, SERVER);
});

async function until(what, check, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const view = (args) => runGuard(args, { timeout: 20_000 }).done.then((r) => ({ ...r, stdout: r.stdout.toString('utf8') }));

/** Start a relay in `dir` whose stdin stays open; resolves once its log holds an attempt of method `slow`. */
async function startRelay(dir, release) {
  const run = runGuard(['--record-dir', dir, '--', process.execPath, server, release], { keepOpen: true, timeout: 60_000 });
  let out = '';
  run.child.stdout.on('data', (c) => {
    out += c;
  });
  run.child.stdin.write(frame({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  run.child.stdin.write(frame({ jsonrpc: '2.0', id: 2, method: 'slow' }));
  await until('the ping answer', () => out.includes('"id":1'));
  const file = await until(
    'the session log',
    () =>
      readdirSync(dir)
        .filter((f) => f.endsWith('.jsonl'))
        .map((f) => join(dir, f))[0],
  );
  await until("the slow call's attempt", () => readFileSync(file, 'utf8').includes('"method":"slow"'));
  return { run, file, id: file.split('/').pop().slice(0, -'.jsonl'.length), out: () => out };
}

test("a running session: sessions, --running, show, verify live, the open call's age, and activity --follow seeing it end", { timeout: 90_000 }, async () => {
  const dir = join(tmp.dir, 'running');
  const release = join(tmp.dir, 'release-1');
  const { run, id } = await startRelay(dir, release);

  const sessions = await view(['sessions', '--record-dir', dir]);
  assert.equal(sessions.code, 0, sessions.stderr);
  assert.match(sessions.stdout, new RegExp(`^${id} .* running +- +- +\\d+ +0 +no$`, 'm'));
  // A running session is not failed (yet).
  assert.equal((await view(['sessions', '--failed', '--record-dir', dir])).stdout.split('\n').filter((l) => l.startsWith('s_')).length, 0);
  const only = await view(['sessions', '--running', '--record-dir', dir, '--json']);
  assert.deepEqual(
    only.stdout
      .trim()
      .split('\n')
      .map((l) => [JSON.parse(l).session_id, JSON.parse(l).liveness]),
    [[id, 'running']],
  );

  const show = await view(['show', '--record-dir', dir, id]);
  assert.match(show.stdout, /^ {2}ended +not yet: running \(mcpguard pid \d+ is alive\)$/m);

  const verify = await view(['verify', '--record-dir', dir]);
  assert.equal(verify.code, 0, `a live session verifies as intact: ${verify.stdout}${verify.stderr}`);
  assert.match(verify.stdout, /^live +\S+ +\d+\n {4}session running: its mcpguard \(pid \d+\) is alive/m);
  assert.doesNotMatch(verify.stdout, /crash or truncation/);

  const activity = await view(['activity', '--record-dir', dir, id]);
  assert.match(activity.stdout, /^c_\S+ +\S+ +slow +- +open +- +\d+(ms|\.\d\ds)\+$/m, activity.stdout);
  const json = await view(['activity', '--json', '--record-dir', dir, id]);
  const open = json.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .find((r) => r.method === 'slow');
  assert.equal(open.state, 'open');
  assert.ok(open.open_ms >= 0, JSON.stringify(open));

  // --follow: the table shows the call open; once the server answers, a row shows it completed; the session's end ends the follow.
  const follower = spawn(process.execPath, [BIN, 'activity', '--follow', '--record-dir', dir, id], { stdio: ['ignore', 'pipe', 'pipe'] });
  followers.add(follower);
  let followed = '';
  let followErr = '';
  follower.stdout.on('data', (c) => {
    followed += c;
  });
  follower.stderr.on('data', (c) => {
    followErr += c;
  });
  const exited = new Promise((resolve) => follower.on('close', (code) => resolve(code)));
  await until('the followed table', () => /slow +- +open/.test(followed));
  writeFileSync(release, '');
  const row = await until('the followed end of the call', () => followed.split('\n').find((l) => /slow +- +completed/.test(l)));
  assert.match(row, /^c_\S+ /);
  assert.equal(followed.split('\n').filter((l) => / slow /.test(l)).length, 2, `one row open, one completed:\n${followed}`);
  run.child.stdin.end();
  assert.equal((await run.done).code, 0);
  assert.equal(await exited, 0, followErr);
  followers.delete(follower);

  const after = await view(['sessions', '--record-dir', dir]);
  assert.match(after.stdout, new RegExp(`^${id} .* client_eof +0 +- +2 +0 +yes$`, 'm'));
  assert.equal((await view(['sessions', '--running', '--record-dir', dir])).stdout.split('\n').filter((l) => l.startsWith('s_')).length, 0);
});

test("a SIGKILLed mcpguard's session is crashed, not running; verify says unsealed; --follow ends", { timeout: 90_000 }, async () => {
  const dir = join(tmp.dir, 'killed');
  const { run, id } = await startRelay(dir, join(tmp.dir, 'never'));
  run.child.kill('SIGKILL');
  await run.done.catch(() => {});
  const sessions = await view(['sessions', '--record-dir', dir]);
  assert.match(sessions.stdout, new RegExp(`^${id} .* crashed +- +- +\\d+ +0 +no$`, 'm'));
  // A crashed mcpguard is a failed session.
  const failed = await view(['sessions', '--failed', '--json', '--record-dir', dir]);
  assert.deepEqual(
    failed.stdout
      .trim()
      .split('\n')
      .map((l) => [JSON.parse(l).session_id, JSON.parse(l).liveness]),
    [[id, 'crashed']],
  );
  assert.equal((await view(['sessions', '--running', '--record-dir', dir])).stdout.split('\n').filter((l) => l.startsWith('s_')).length, 0);
  const show = await view(['show', '--record-dir', dir, id]);
  assert.match(show.stdout, /^ {2}ended +crashed: mcpguard \(pid \d+\) is gone and wrote no session record$/m);
  const verify = await view(['verify', '--record-dir', dir]);
  assert.equal(verify.code, 2);
  assert.match(verify.stdout, /^UNSEALED /m);
  // Its open call never got a final record: no age, and it will not get one.
  const activity = await view(['activity', '--record-dir', dir, id]);
  assert.match(activity.stdout, /slow +- +no_final_record/);
  const follow = await view(['activity', '-f', '--record-dir', dir, id]);
  assert.equal(follow.code, 0);
  // logs --follow ends too, saying why, for the session and for its call that never ended.
  const logs = await view(['logs', '-f', '--record-dir', dir, id]);
  assert.equal(logs.code, 0);
  assert.match(logs.stderr, /^mcpguard logs: the session's mcpguard \(pid \d+\) is gone without a session record: it crashed$/m);
  const open = JSON.parse(
    (await view(['activity', '--json', '--record-dir', dir, id])).stdout
      .trim()
      .split('\n')
      .find((l) => JSON.parse(l).state === 'no_final_record'),
  );
  const call = await view(['logs', '-f', '--record-dir', dir, open.call_id]);
  assert.equal(call.code, 1);
  assert.match(call.stderr, new RegExp(`it crashed; call ${open.call_id} never ended$`, 'm'));
});

/** A copy of a log under a new id, with `edit` applied to its session_start, rechained so that its chain verifies. */
function rechainedCopy(file, dir, newId, edit) {
  const records = readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  let prev = '0'.repeat(64);
  let text = '';
  for (const r of records) {
    if (r.type === 'header') r.log_id = newId;
    if (r.type === 'session_start') edit(r);
    r.prev = prev;
    const line = `${canonical(r)}\n`;
    prev = createHash('sha256').update(line).digest('hex');
    text += line;
  }
  const path = join(dir, `${newId}.jsonl`);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

test('a log naming a live pid with another start time is crashed: the start time is checked, not only the pid', { timeout: 90_000 }, async () => {
  const dir = join(tmp.dir, 'reused');
  const { run, file, id } = await startRelay(dir, join(tmp.dir, 'never-2'));
  // Same pid (alive: it is the running mcpguard), same start: the control, which must show running.
  const same = rechainedCopy(file, dir, 's_20261201T000000Z_5a3e5a3e', () => {});
  // Same pid, started at another moment: what a crashed session looks like once its pid is reused.
  const other = rechainedCopy(file, dir, 's_20261201T000000Z_07e407e4', (r) => {
    r.mcpguard_start.start_ticks += 1;
    r.mcpguard_start.started_ms -= 60_000;
  });
  assert.ok(existsSync(same) && existsSync(other));
  const rows = (await view(['sessions', '--json', '--record-dir', dir])).stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const state = Object.fromEntries(rows.map((r) => [r.session_id, r.liveness]));
  assert.deepEqual(state, { [id]: 'running', s_20261201T000000Z_5a3e5a3e: 'running', s_20261201T000000Z_07e407e4: 'crashed' });
  const verify = await view(['verify', '--json', '--record-dir', dir]);
  const statuses = Object.fromEntries(
    verify.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .map((r) => [r.log_id, r.status]),
  );
  assert.deepEqual(statuses, { [id]: 'live', s_20261201T000000Z_5a3e5a3e: 'live', s_20261201T000000Z_07e407e4: 'unsealed' });
  run.child.stdin.end();
  await run.done;
});
