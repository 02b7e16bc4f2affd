// Filters of `sessions` and `activity`, through the real binary, on the
// deterministic logs of golden-log.js: exactly the rows asked for, newest
// first; and a bad value is exit 125 naming the option and the value.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'mcpguard.js');
const root = mkdtempSync(join(tmpdir(), 'mcpguard-filters-'));
const dir = join(root, 'r');
after(() => rmSync(root, { recursive: true, force: true }));

before(() => {
  const made = spawnSync(process.execPath, [fileURLToPath(new URL('./golden-log.js', import.meta.url)), dir], { timeout: 30_000, encoding: 'utf8' });
  assert.equal(made.status, 0, made.stderr);
});

function guard(args, tz = 'America/New_York') {
  const run = spawnSync(process.execPath, [BIN, ...args, '--record-dir', dir], { env: { ...process.env, TZ: tz }, timeout: 30_000, encoding: 'utf8' });
  return {
    code: run.status,
    stdout: run.stdout,
    stderr: run.stderr,
    rows:
      run.status === 0
        ? run.stdout
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l))
        : [],
  };
}
const sessions = (...args) => guard(['sessions', '--json', ...args]);
const ids = (r) => r.rows.map((row) => row.session_id.slice(-8));
const calls = (...args) => guard(['activity', '--json', 's_20261130T070000Z', ...args]);
const callIds = (r) => r.rows.map((row) => row.call_id ?? `reject:${row.line}`);

test('sessions: newest first; -n keeps the newest', () => {
  assert.deepEqual(ids(sessions()), ['cccccccc', 'bbbbbbbb', 'aaaaaaaa', 'eeeeeeee', 'dddddddd']);
  assert.deepEqual(ids(sessions('-n', '2')), ['cccccccc', 'bbbbbbbb']);
  assert.deepEqual(ids(sessions('--max-count=1')), ['cccccccc']);
  assert.deepEqual(ids(sessions('-n', '0')), []);
});

test('sessions --failed: a forced kill, a failed call or a crashed mcpguard; not a clean session', () => {
  const failed = sessions('--failed');
  // cccccccc: no session record, and the mcpguard that wrote it (golden-log.js) is gone: crashed.
  assert.deepEqual(ids(failed), ['cccccccc', 'bbbbbbbb', 'aaaaaaaa', 'eeeeeeee']);
  assert.deepEqual(
    failed.rows.map((r) => [r.forced_kill, r.failed_calls, r.liveness]),
    [
      [null, null, 'crashed'],
      [true, 1, null],
      [false, 3, null],
      [false, 2, null],
    ],
  );
  assert.deepEqual(ids(sessions('--failed', '-n', '1')), ['cccccccc']);
});

test('sessions --since/--until: local time unless a zone is given, relative times, --utc', () => {
  // 03:00 in New York is 08:00 UTC: the sessions of 08:15 and 09:45 UTC.
  assert.deepEqual(ids(sessions('--since', '2026-11-30 03:00')), ['cccccccc', 'bbbbbbbb']);
  assert.deepEqual(ids(sessions('--since', '2026-11-30T08:00:00Z')), ['cccccccc', 'bbbbbbbb']);
  assert.deepEqual(ids(sessions('--since', '2026-11-30T07:30+01:00')), ['cccccccc', 'bbbbbbbb', 'aaaaaaaa']);
  // A date is midnight: 2026-11-30 in New York is 05:00 UTC, so --until it keeps only July.
  assert.deepEqual(ids(sessions('--until', '2026-11-30')), ['dddddddd']);
  assert.deepEqual(ids(sessions('--until', '2026-11-30', '--utc')), ['dddddddd']);
  assert.deepEqual(ids(sessions('--since', '2026-11-30 07:00', '--utc', '--until', '2026-11-30 08:30', '--utc')), ['bbbbbbbb', 'aaaaaaaa']);
  // The logs are from 2026; relative to the clock of the machine that runs this test.
  const age = Math.ceil((Date.now() - Date.parse('2026-07-01T00:00:00Z')) / 86_400_000) + 1;
  assert.deepEqual(ids(sessions('--since', `${age}d`)), ['cccccccc', 'bbbbbbbb', 'aaaaaaaa', 'eeeeeeee', 'dddddddd']);
  assert.deepEqual(
    ids(sessions('--since', '1m')).filter((id) => id.length === 8 && /^[a-d]{8}$/.test(id)),
    [],
  );
});

test('sessions --name GLOB: --name, the serverInfo name or the command basename', () => {
  assert.deepEqual(
    sessions().rows.map((r) => [r.name, r.name_source]),
    [
      ['npx', 'command'],
      ['memory', 'server'],
      ['files', 'option'],
      ['flaky', 'option'],
      ['uvx', 'command'],
    ],
  );
  assert.deepEqual(ids(sessions('--name', 'mem*')), ['bbbbbbbb']);
  assert.deepEqual(ids(sessions('--name', '[fu]*')), ['aaaaaaaa', 'eeeeeeee', 'dddddddd']);
  assert.deepEqual(ids(sessions('--name', 'file?')), ['aaaaaaaa']);
  assert.deepEqual(ids(sessions('--name', 'memory-server')), []);
});

test('activity: newest first; --failed lists exactly the failed calls of a mixed session', () => {
  assert.deepEqual(callIds(calls()), ['c_00060000beef', 'reject:7', 'c_00050000beef', 'c_00040000beef', 'c_00030000beef', 'c_00020000beef', 'c_00010000beef']);
  const failed = calls('--failed');
  assert.deepEqual(
    failed.rows.map((r) => [r.call_id, r.state]),
    [
      ['c_00060000beef', 'timed_out_after_dispatch'],
      ['c_00050000beef', 'tool_error'],
      ['c_00040000beef', 'denied'],
    ],
  );
  const killed = guard(['activity', '--json', 's_20261130T081530Z', '--failed']);
  assert.deepEqual(
    killed.rows.map((r) => r.state),
    ['unknown_after_dispatch'],
  );
});

test('activity --state, --tool, --since, -n', () => {
  assert.deepEqual(callIds(calls('--state', 'denied,tool_error')), ['c_00050000beef', 'c_00040000beef']);
  assert.deepEqual(callIds(calls('--tool', 'read_*')), ['c_00030000beef']);
  assert.deepEqual(callIds(calls('--tool', '*_file*')), ['c_00050000beef', 'c_00040000beef', 'c_00030000beef']);
  // 07:00:00.250 UTC: the calls made after it, and the rejected frame.
  assert.deepEqual(callIds(calls('--since', '2026-11-30T07:00:00.250Z')), ['c_00060000beef', 'reject:7', 'c_00050000beef', 'c_00040000beef']);
  assert.deepEqual(callIds(calls('-n', '2')), ['c_00060000beef', 'reject:7']);
  assert.deepEqual(callIds(calls('--failed', '-n', '2')), ['c_00060000beef', 'c_00050000beef']);
  // The unsealed session's mcpguard (a fixed pid, with no recorded start) is gone: its open call is no_final_record.
  assert.deepEqual(guard(['activity', '--json', '--state', 'open']).rows, []);
  const cut = guard(['activity', '--json', '--state', 'no_final_record']);
  assert.deepEqual(
    cut.rows.map((r) => [r.call_id, r.tool]),
    [['c_00120000beef', 'longRunningOperation']],
  );
});

test('a bad filter value exits 125 naming the option and the value, before anything is read', () => {
  const cases = [
    [['sessions', '--since', '2x'], /^mcpguard sessions: --since expects a time \(.*\), got '2x'$/m],
    [['sessions', '--until', '2026-02-30'], /--until expects a time .*, got '2026-02-30': no such date$/m],
    [['sessions', '--since', '2026-11-30 25:00'], /--since expects a time .*, got '2026-11-30 25:00'/],
    [['sessions', '--since', 'today', '--until', 'yesterday'], /--since 'today' is after --until 'yesterday'/],
    [['sessions', '-n', 'ten'], /-n\/--max-count expects a whole number of rows, got 'ten'/],
    [['sessions', '-n', '-1'], /^mcpguard sessions: -n expects a number of rows, got '-1'$/m],
    [['sessions', '--name', ''], /--name expects a name or a glob .*, got ''/],
    [['sessions', '--color', 'sometimes'], /--color expects one of auto, always, never, got 'sometimes'/],
    [['sessions', '--state', 'denied'], /unknown option '--state'/],
    [['activity', '--state', 'finished'], /--state expects one or more of completed, .*, got 'finished'/],
    [['activity', '--state', 'denied,nope'], /got 'denied,nope'/],
    [['activity', '--tool', ''], /--tool expects a tool name or a glob .*, got ''/],
    [['activity', '--since'], /--since expects a time, got '--record-dir'/], // the next word looks like an option
    [['activity', '--name', 'x'], /unknown option '--name'/],
  ];
  for (const [args, message] of cases) {
    const r = guard(args);
    assert.equal(r.code, 125, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message, args.join(' '));
    assert.equal(r.stdout, '');
  }
});
