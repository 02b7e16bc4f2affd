// Retention: `mcpguard prune` removes whole sealed or crashed logs, oldest
// first, never a running session's; each leaves a tombstone in pruned.log
// that verify checks, naming the pruned sessions; a log deleted by hand after
// a prune kept it is reported missing; the relay's --retain prunes on start.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeSession } from './gen-log.js';
import { BIN, fixture, frame, killStarted, runGuard, tempDir } from '../helpers/run.js';

const tmp = tempDir('mcpguard-prune-');
let live;
after(async () => {
  if (live) {
    live.child.stdin.end();
    await Promise.race([live.done.catch(() => {}), sleep(5000)]);
  }
  killStarted();
  tmp.cleanup();
});

const GEN = new URL('./gen-log.js', import.meta.url).href;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const view = (args) => runGuard(args, { timeout: 30_000 }).done.then((r) => ({ ...r, stdout: r.stdout.toString('utf8') }));
const logsIn = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort();
const jsonLines = (text) =>
  text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

/**
 * A session written `ageMs` ago (by a process whose clock is set back that
 * far, so its records and chain are those of an old session) and the file's
 * times set to match; `seal: false` leaves it crashed (its writer has exited).
 */
function oldSession(dir, id, calls, { ageMs = 3_600_000, seal = true } = {}) {
  const script = `
    const Real = Date;
    globalThis.Date = class extends Real {
      constructor(...a) { if (a.length === 0) super(Real.now() - ${ageMs}); else super(...a); }
      static now() { return Real.now() - ${ageMs}; }
    };
    const { writeSession } = await import(${JSON.stringify(GEN)});
    await writeSession(${JSON.stringify(dir)}, ${JSON.stringify(id)}, ${calls}, { seal: ${seal} });`;
  execFileSync(process.execPath, ['--input-type=module', '-e', script]);
  const then = new Date(Date.now() - ageMs);
  utimesSync(join(dir, `${id}.jsonl`), then, then);
}

async function until(what, check, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** A relay whose stdin stays open (a live session) in `dir`; resolves once it answered a ping. */
async function liveRelay(dir) {
  const run = runGuard(['--record-dir', dir, '--', 'python3', fixture('stdlib_server.py')], { keepOpen: true, timeout: 90_000 });
  let out = '';
  run.child.stdout.on('data', (c) => {
    out += c;
  });
  run.child.stdin.write(frame({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  await until('the ping answer', () => out.includes('"id":1'));
  return run;
}

const A = 's_20261130T010000Z_0000000a';
const B = 's_20261130T010001Z_0000000b';
const C = 's_20261130T010002Z_0000000c';
const D = 's_20261130T010003Z_0000000d';

let dir;
let liveId;
before(
  async () => {
    dir = join(tmp.dir, 'records');
    // A, B and C ended an hour ago; D and the live session now.
    oldSession(dir, A, 400);
    oldSession(dir, B, 400);
    oldSession(dir, C, 50, { seal: false });
    await writeSession(dir, D, 400);
    live = await liveRelay(dir);
    liveId = logsIn(dir)
      .map((f) => f.slice(0, -6))
      .find((id) => ![A, B, C, D].includes(id));
  },
  { timeout: 60_000 },
);

test('prune --older-than: --dry-run lists, then it removes the sealed and the crashed, never the running; verify names the pruned', {
  timeout: 60_000,
}, async () => {
  const dry = await view(['prune', '--older-than', '30m', '--dry-run', '--record-dir', dir]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, new RegExp(`^would remove +${A} +sealed `, 'm'));
  assert.match(dry.stdout, new RegExp(`^would remove +${B} +sealed `, 'm'));
  assert.match(dry.stdout, new RegExp(`^would remove +${C} +crashed `, 'm'));
  assert.doesNotMatch(dry.stdout, new RegExp(`${D}|${liveId}`));
  assert.match(dry.stdout, /^would remove 3 logs /m);
  // ENDED in local time, the zone in the header (as the other views); --utc in UTC; --json in ISO UTC.
  const zoned = (args, tz) =>
    spawnSync(process.execPath, [BIN, 'prune', '--older-than', '30m', '--dry-run', '--record-dir', dir, ...args], {
      env: { ...process.env, TZ: tz },
      encoding: 'utf8',
      timeout: 30_000,
    }).stdout;
  const endedOf = (text) => new RegExp(`^would remove +${A} +sealed +(\\S+ \\S+) `, 'm').exec(text)?.[1];
  const endedAt = jsonLines(zoned(['--json'], 'Asia/Kolkata')).find((o) => o.session_id === A).ended_at;
  const local = new Date(Date.parse(endedAt) + 330 * 60_000).toISOString().slice(0, 19).replace('T', ' ');
  const kolkata = zoned([], 'Asia/Kolkata');
  assert.match(kolkata, /^ACTION +SESSION +STATE +ENDED \+05:30 +SIZE +WHY$/m);
  assert.equal(endedOf(kolkata), local);
  const utc = zoned(['--utc'], 'Asia/Kolkata');
  assert.match(utc, /^ACTION +SESSION +STATE +ENDED UTC +SIZE +WHY$/m);
  assert.equal(endedOf(utc), endedAt.slice(0, 19).replace('T', ' '));
  assert.equal(logsIn(dir).length, 5, 'a dry run removes nothing');
  assert.ok(!existsSync(join(dir, 'pruned.log')), 'nor writes a tombstone');

  const run = await view(['prune', '--older-than', '30m', '--record-dir', dir, '--json']);
  assert.equal(run.code, 0, run.stderr);
  const out = jsonLines(run.stdout);
  assert.deepEqual(
    out.filter((r) => r.action === 'removed').map((r) => [r.session_id, r.state, r.reason]),
    [
      [A, 'sealed', 'older-than'],
      [B, 'sealed', 'older-than'],
      [C, 'crashed', 'older-than'],
    ],
  );
  assert.deepEqual(logsIn(dir), [`${D}.jsonl`, `${liveId}.jsonl`].sort());

  const verify = await view(['verify', '--json', '--record-dir', dir]);
  assert.equal(verify.code, 0, `${verify.stdout}${verify.stderr}`);
  const rows = jsonLines(verify.stdout);
  assert.deepEqual(
    rows.filter((r) => r.status === 'pruned').map((r) => r.log_id),
    [A, B, C],
  );
  assert.deepEqual(rows.find((r) => r.file.endsWith('pruned.log')).status, 'ok');
  assert.equal(rows.find((r) => r.log_id === liveId).status, 'live');
  const table = await view(['verify', '--record-dir', dir]);
  assert.match(
    table.stdout,
    new RegExp(
      `^pruned +\\S+${A}\\.jsonl +1205\n {4}pruned \\S+ by mcpguard prune \\(ended more than 30m before it\\); sealed, \\d+ bytes, seal [0-9a-f]{16}$`,
      'm',
    ),
  );
});

test('prune --max-size: oldest first, and a running session stays even when the rest is over the size', { timeout: 60_000 }, async () => {
  const dry = await view(['prune', '--max-size', '1', '--dry-run', '--record-dir', dir]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, new RegExp(`^would remove +${D} +sealed .* over --max-size 1$`, 'm'));
  assert.doesNotMatch(dry.stdout, new RegExp(liveId));
  assert.match(dry.stdout, /kept: 1 running.*over --max-size 1: the rest may not be removed/);
  const run = await view(['prune', '--max-size', '1', '--record-dir', dir]);
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(logsIn(dir), [`${liveId}.jsonl`]);
  const verify = await view(['verify', '--json', '--record-dir', dir]);
  assert.equal(verify.code, 0, verify.stdout);
  assert.deepEqual(
    jsonLines(verify.stdout)
      .filter((r) => r.status === 'pruned')
      .map((r) => r.log_id),
    [A, B, C, D],
  );
  // Oldest first: with room for one log, the older of two goes.
  const two = join(tmp.dir, 'two');
  await writeSession(two, A, 200);
  await writeSession(two, B, 200);
  const size = statSync(join(two, `${B}.jsonl`)).size;
  const one = await view(['prune', '--max-size', String(size), '--record-dir', two]);
  assert.equal(one.code, 0, one.stderr);
  assert.deepEqual(logsIn(two), [`${B}.jsonl`]);
});

test('a log deleted by hand after a prune kept it is reported missing; a tampered tombstone fails verify', { timeout: 60_000 }, async () => {
  const d = join(tmp.dir, 'by-hand');
  await writeSession(d, A, 100);
  await writeSession(d, B, 100);
  const run = await view(['prune', '--older-than', '30d', '--record-dir', d]); // removes nothing, records what it kept
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^removed 0 logs/m);
  assert.equal((await view(['verify', '--record-dir', d])).code, 0);
  rmSync(join(d, `${A}.jsonl`));
  const verify = await view(['verify', '--record-dir', d]);
  assert.equal(verify.code, 1);
  assert.match(verify.stdout, /^MISSING +\S+ +0\n {4}1 log that the prune of \S+ kept is gone without a tombstone: deleted by hand\?$/m);
  // An edited tombstone chain (here: the run's count, to hide the deletion) no longer verifies.
  const p = join(d, 'pruned.log');
  const text = readFileSync(p, 'utf8');
  assert.match(text, /"kept":2,/);
  writeFileSync(p, text.replace('"kept":2,', '"kept":1,'));
  const tampered = await view(['verify', '--record-dir', d]);
  assert.equal(tampered.code, 1);
  assert.match(tampered.stdout, /^TAMPERED +\S+pruned\.log +1\n {4}line 2 \(seq 1\): the record's hash does not match the record: it was altered$/m);
  assert.doesNotMatch(tampered.stdout, /^(pruned|MISSING) /m, 'a broken chain vouches for nothing');
});

test('tombstones signed with the audit key: verify needs the key, prune refuses to go on without it', { timeout: 60_000 }, async () => {
  const d = join(tmp.dir, 'signed');
  const keyFile = join(tmp.dir, 'audit.key');
  writeFileSync(keyFile, 'k'.repeat(32));
  await writeSession(d, A, 50);
  const run = await view(['prune', '--max-size', '1', '--audit-key-file', keyFile, '--record-dir', d]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(readFileSync(join(d, 'pruned.log'), 'utf8'), /"alg":"hmac-sha256"/);
  assert.equal((await view(['verify', '--audit-key-file', keyFile, '--record-dir', d])).code, 0);
  const keyless = await view(['verify', '--record-dir', d]);
  assert.equal(keyless.code, 1);
  assert.match(keyless.stdout, /^KEY +\S+pruned\.log /m);
  const unsigned = await view(['prune', '--max-size', '1', '--record-dir', d]);
  assert.equal(unsigned.code, 1);
  assert.match(unsigned.stderr, /nothing removed: .*signed with an audit key .*--audit-key-file/);
});

test('prune validates its options up front (exit 125, naming option and value)', { timeout: 60_000 }, async () => {
  const cases = [
    [['prune', '--older-than', '30x'], /--older-than expects an age such as 30d.*, got '30x'/],
    [['prune', '--max-size', 'lots'], /--max-size expects a size such as 1G.*, got 'lots'/],
    [['prune'], /--older-than AGE, --max-size SIZE, or both/],
    [['prune', '--older-than'], /--older-than expects a value, got nothing/],
    [['prune', '--olderthan', '1d'], /unknown option '--olderthan'/],
    [['prune', '--older-than', '1d', 'extra'], /unexpected argument 'extra'/],
    [['prune', '--older-than', '1d', '--record-dir', join(tmp.dir, 'nope')], /--record-dir expects a directory, got .*nope' \(does not exist\)/],
  ];
  for (const [args, message] of cases) {
    const r = await view(args);
    assert.equal(r.code, 125, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
  }
  const help = await view(['prune', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--older-than AGE/);
  assert.match((await view(['--help'])).stdout, /^ {2}prune +remove old session logs/m);
  assert.match((await view(['completion', 'bash'])).stdout, /prune/);
});

test('--retain prunes on start, in the background; a bad --retain is refused before the server starts', { timeout: 60_000 }, async () => {
  const d = join(tmp.dir, 'retain');
  oldSession(d, A, 100);
  const relay = runGuard(['--retain', '30m,1G', '--record-dir', d, '--', 'python3', fixture('stdlib_server.py')], { keepOpen: true, timeout: 30_000 });
  let out = '';
  relay.child.stdout.on('data', (c) => {
    out += c;
  });
  relay.child.stdin.write(frame({ jsonrpc: '2.0', id: 1, method: 'ping' }));
  await until('the ping answer', () => out.includes('"id":1'));
  await until('the old log pruned', () => !existsSync(join(d, `${A}.jsonl`)));
  relay.child.stdin.end();
  const done = await relay.done;
  assert.equal(done.code, 0, done.stderr);
  assert.doesNotMatch(done.stderr, /--retain/);
  assert.match(readFileSync(join(d, 'pruned.log'), 'utf8'), /"by":"retain"/);
  assert.equal(logsIn(d).length, 1, 'its own session stays');
  assert.equal((await view(['verify', '--record-dir', d])).code, 0);

  for (const [value, message] of [
    ['30x', /--retain '30x' is neither an age/],
    ['1d,2d', /--retain gives an age twice, got '1d,2d'/],
    ['1d,', /--retain expects an age, a size, or both/],
  ]) {
    const bad = await runGuard(['--retain', value, '--record-dir', d, '--', 'sh', '-c', `touch ${join(tmp.dir, 'started')}`], { timeout: 20_000 }).done;
    assert.equal(bad.code, 125, bad.stderr);
    assert.match(bad.stderr, message);
  }
  assert.ok(!existsSync(join(tmp.dir, 'started')), 'the server was never started');
  const config = join(tmp.dir, 'retain.json');
  writeFileSync(config, JSON.stringify({ retain: 'soon' }));
  const fromConfig = await runGuard(['--config', config, '--', 'true'], { timeout: 20_000 }).done;
  assert.equal(fromConfig.code, 125);
  assert.match(fromConfig.stderr, /--config '.*retain\.json' key "retain" 'soon' is neither an age/);
});
