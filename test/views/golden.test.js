// Golden output: every table (sessions, activity, verify, show SESSION, show
// CALL) at 80 and 120 columns, in New York time and in UTC, compared byte for
// byte with test/records/golden/*.txt. The logs come from golden-log.js (the
// real AuditLog with a fixed clock, pids and call ids), so they verify and are
// the same on every run. UPDATE_GOLDEN=1 rewrites the files (then read the diff).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'mcpguard.js');
const GOLDEN = fileURLToPath(new URL('./golden/', import.meta.url));
const UPDATE = process.env.UPDATE_GOLDEN === '1';
// A path of the same length on every machine (the FILE column's width depends on it), shown as this placeholder.
const root = mkdtempSync('/tmp/mcpguard-golden-');
const dir = join(root, 'r');

after(() => rmSync(root, { recursive: true, force: true }));

before(() => {
  const made = spawnSync(process.execPath, [fileURLToPath(new URL('./golden-log.js', import.meta.url)), dir], { timeout: 30_000, encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
});

/** Run a view as a person's pipe would (no TTY): width from COLUMNS, the zone from TZ. */
function view(args, columns, tz = 'America/New_York') {
  const env = { ...process.env, COLUMNS: String(columns), TZ: tz };
  delete env.NO_COLOR;
  const run = spawnSync(process.execPath, [BIN, ...args, '--record-dir', dir], { env, timeout: 30_000, encoding: 'utf8' });
  // The directory's random part, also where a path cut in its middle shows only some of it.
  const stdout = run.stdout.replace(/\/tmp\/mcpguard-golden-[A-Za-z0-9]{0,6}/g, (m) => m.slice(0, 21) + 'X'.repeat(m.length - 21));
  return { code: run.status, stdout, stderr: run.stderr };
}

function compare(name, actual) {
  const file = join(GOLDEN, `${name}.txt`);
  if (UPDATE || !existsSync(file)) {
    if (!UPDATE) assert.fail(`${file} does not exist: run with UPDATE_GOLDEN=1 to write it, then read it`);
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(file, actual);
    return;
  }
  assert.equal(actual, readFileSync(file, 'utf8'), `${name}: the output differs from ${file} (UPDATE_GOLDEN=1 rewrites it)`);
}

const TABLES = [
  ['sessions', ['sessions'], 0],
  ['sessions-failed', ['sessions', '--failed'], 0],
  ['activity', ['activity', 's_20261130T070000Z'], 0],
  ['activity-failed', ['activity', 's_20261130T070000Z', '--failed'], 0],
  ['activity-open', ['activity'], 0], // the latest session: still running, a call open
  ['verify', ['verify'], 2], // one log unsealed
  ['show-session', ['show', 's_20261130T081530Z'], 0],
  ['show-call', ['show', 'c_00040000beef'], 0],
  ['activity-restarts', ['activity', 's_20261130T060000Z'], 0], // --restart: a GEN column
  ['show-restarts', ['show', 's_20261130T060000Z'], 0],
];

for (const columns of [80, 120]) {
  for (const [name, args, code] of TABLES) {
    test(`${name} at ${columns} columns (America/New_York)`, () => {
      const r = view(args, columns);
      assert.equal(r.code, code, r.stderr);
      assert.equal(r.stderr, '');
      for (const line of r.stdout.split('\n')) {
        // Wrapped and fitted: no line runs past the width (a call id or a session id is never cut).
        assert.ok(line.length <= columns, `${name}: a line of ${line.length} columns: ${line}`);
      }
      compare(`${name}-${columns}`, r.stdout);
    });
  }
}

test("80 to 120 columns: a call's state and a session's end reason are never cut, and sessions keeps CALLS", () => {
  const json = (args) =>
    view([...args, '--json'], 80)
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
  const ends = json(['sessions'])
    .map((row) => row.end_reason)
    .filter((e) => typeof e === 'string');
  assert.ok(ends.includes('signal_SIGTERM'), ends.join(' '));
  for (let columns = 80; columns <= 120; columns += 5) {
    const sessions = view(['sessions'], columns).stdout;
    for (const end of ends) assert.ok(sessions.includes(`  ${end}  `), `sessions at ${columns}: '${end}' whole\n${sessions}`);
    assert.match(sessions.split('\n')[0], /\bCALLS\b/, `sessions at ${columns} keeps CALLS`);
    for (const session of ['s_20261130T070000Z', 's_20261130T060000Z']) {
      const table = view(['activity', session], columns).stdout;
      for (const row of json(['activity', session]).filter((r) => r.kind === 'call')) {
        assert.match(table, new RegExp(`^${row.call_id} .*  ${row.state}(  |$)`, 'm'), `activity at ${columns}: ${row.state} whole\n${table}`);
      }
    }
  }
});

test('sessions on a wide terminal: every column, RESTARTS too (- without --restart)', () => {
  const r = view(['sessions'], 200);
  assert.equal(r.code, 0, r.stderr);
  compare('sessions-200', r.stdout);
});

test('activity --json: each call names its generation (null: never dispatched)', () => {
  const rows = (args) =>
    view(args, 80)
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .filter((row) => row.kind === 'call');
  assert.deepEqual(
    rows(['activity', '--json', 's_20261130T060000Z']).map((row) => [row.call_id, row.generation]),
    [
      ['c_00190000beef', null],
      ['c_00180000beef', 3],
      ['c_00170000beef', 2],
      ['c_00160000beef', 2],
      ['c_00150000beef', 1],
      ['c_00140000beef', 1],
      ['c_00130000beef', 1],
    ],
  );
  // A session whose records predate generations: the field is there, null.
  assert.ok(rows(['activity', '--json', 's_20261130T070000Z']).every((row) => row.generation === null));
});

test('logs: block headers in local time with the zone, in UTC with --utc', () => {
  for (const [name, args] of [
    ['logs', ['logs', 's_20261130T070000Z']],
    ['logs-utc', ['logs', 's_20261130T070000Z', '--utc']],
  ]) {
    const r = view(args, 120);
    assert.equal(r.code, 0, r.stderr);
    compare(name, r.stdout);
  }
});

test('--utc: times in UTC, the header says so', () => {
  for (const [name, args] of [
    ['sessions', ['sessions', '--utc']],
    ['activity', ['activity', 's_20261130T070000Z', '--utc']],
    ['show-session', ['show', 's_20261130T081530Z', '--utc']],
  ]) {
    const r = view(args, 120);
    assert.equal(r.code, 0, r.stderr);
    compare(`${name}-utc-120`, r.stdout);
  }
});

test('--color always colours failed states; never (and a pipe with auto) does not', () => {
  const always = view(['activity', 's_20261130T070000Z', '--color', 'always'], 120);
  compare('activity-color-120', always.stdout);
  assert.match(always.stdout, /\x1b\[31mtimed_out_after_dispatch\x1b\[0m/);
  for (const color of [['--color', 'never'], []]) {
    const plain = view(['activity', 's_20261130T070000Z', ...color], 120);
    assert.ok(!plain.stdout.includes('\x1b'), `no escape sequences with ${color.join(' ') || 'auto on a pipe'}`);
  }
});

test('--json keeps ISO UTC times whatever TZ says', () => {
  const r = view(['sessions', '--json'], 80, 'Asia/Kolkata');
  const rows = r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    rows.map((row) => [row.session_id, row.name, row.started_at]),
    [
      ['s_20261130T094500Z_cccccccc', 'npx', '2026-11-30T09:45:00.000Z'],
      ['s_20261130T081530Z_bbbbbbbb', 'memory', '2026-11-30T08:15:30.000Z'],
      ['s_20261130T070000Z_aaaaaaaa', 'files', '2026-11-30T07:00:00.000Z'],
      ['s_20261130T060000Z_eeeeeeee', 'flaky', '2026-11-30T06:00:00.000Z'],
      ['s_20260701T120000Z_dddddddd', 'uvx', '2026-07-01T12:00:00.000Z'],
    ],
  );
  // restarts: a number for a session run with --restart, null for the others.
  assert.deepEqual(
    rows.map((row) => row.restarts),
    [null, null, null, 2, null],
  );
});
