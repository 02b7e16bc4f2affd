import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runRecordsCommand } from '../../dist/views/commands.js';
import { SessionLog, fingerprint } from '../../dist/records/store.js';

const root = mkdtempSync(join(tmpdir(), 'mcpguard-commands-'));
const children = new Set();
after(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});

async function run(name, argv) {
  let stdout = '';
  let stderr = '';
  const code = await runRecordsCommand(name, argv, {
    stdout: {
      write: (t) => {
        stdout += t;
      },
    },
    stderr: {
      write: (t) => {
        stderr += t;
      },
    },
    env: {},
  });
  return { code, stdout, stderr };
}
const jsonLines = (text) =>
  text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

// Two sessions written through the API, as the core would write them.
const dir = join(root, 'records');
const first = SessionLog.create({ dir, fsync: false }, 's_20261129T100000Z_aaaaaaaa');
first.append('session_start', {
  command: 'python',
  args: ['server.py', '--name', 'evil\u001b[2J'],
  cwd: '/srv',
  pid: 4242,
  started_at: '2026-11-29T10:00:00.000Z',
});
first.append('call_attempt', { call_id: 'c_aaaaaaaaaaa1', request_id: 1, method: 'tools/call', tool: 'echo' });
first.append('call_dispatched', { call_id: 'c_aaaaaaaaaaa1' });
first.append('reject', { direction: 'client', line: 3, code: -32700, reason: 'not JSON', fingerprint: fingerprint(Buffer.from('{"token":"hunter2"')) });
first.append('call_attempt', { call_id: 'c_aaaaaaaaaaa2', request_id: 2, method: 'tools/list', tool: null });
first.append('call_end', {
  call_id: 'c_aaaaaaaaaaa1',
  session_id: first.sessionId,
  request_id: 1,
  method: 'tools/call',
  tool: 'echo',
  state: 'completed',
  stderr_bytes_seen: 20000,
  stderr_bytes_retained: 16384,
  stderr_truncated: true,
  exit_status: null,
  stream_end: null,
  started_at: '2026-11-29T10:00:01.000Z',
  ended_at: '2026-11-29T10:00:01.250Z',
});
first.append('session_end', {
  end_reason: 'stdin_eof',
  exit_code: 0,
  signal: null,
  forced_kill: false,
  survivors: [],
  stderr: { seen: 20000 },
  stdout_noise_lines: 0,
  stdout_noise_bytes: 0,
  rejected: { client: 1, child: 0 },
  redactions: 0,
  ended_at: '2026-11-29T10:02:05.000Z',
});
first.seal();
const second = SessionLog.create({ dir, fsync: false }, 's_20261129T110000Z_bbbbbbbb');
second.append('session_start', { command: 'node', args: ['srv.js'], cwd: '/', pid: 7, started_at: '2026-11-29T11:00:00.000Z' });
second.append('call_attempt', { call_id: 'c_bbbbbbbbbbb1', request_id: 'r-1', method: 'initialize', tool: null });

test('sessions: one row per session, newest first, with name, command, end, exit, calls, rejections and seal', async () => {
  const { code, stdout, stderr } = await run('sessions', ['--record-dir', dir, '--utc']);
  assert.equal(code, 0, stderr);
  const [header, b, a, ...rest] = stdout.trimEnd().split('\n');
  assert.deepEqual(rest, []);
  assert.deepEqual(header.split(/\s{2,}/), [
    'SESSION',
    'NAME',
    'START UTC',
    'DURATION',
    'COMMAND',
    'PROTOCOL',
    'END',
    'EXIT',
    'RESTARTS',
    'CALLS',
    'REJECTED',
    'SEALED',
  ]);
  assert.match(
    a,
    /^s_20261129T100000Z_aaaaaaaa\s+python\s+2026-11-29 10:00:00\s+2m05s\s+python server.py --name evil\\x1b\[2J\s+-\s+stdin_eof\s+0\s+-\s+2\s+1\s+yes$/,
  );
  // Unsealed, written by this test process (alive) without a recorded start time: whether it runs cannot be told.
  assert.match(b, /^s_20261129T110000Z_bbbbbbbb\s+node\s+2026-11-29 11:00:00\s+-\s+node srv.js\s+-\s+unknown\s+-\s+-\s+1\s+0\s+no$/);
  assert.ok(!stdout.includes('\u001b'), 'control characters from records never reach the terminal');
});

test('sessions --json: one object per line', async () => {
  const { code, stdout } = await run('sessions', ['--record-dir', dir, '--json']);
  assert.equal(code, 0);
  const rows = jsonLines(stdout);
  assert.equal(rows.length, 2);
  assert.deepEqual(rows[1], {
    session_id: 's_20261129T100000Z_aaaaaaaa',
    name: 'python',
    name_source: 'command',
    started_at: '2026-11-29T10:00:00.000Z',
    duration_ms: 125000,
    command: ['python', 'server.py', '--name', 'evil\u001b[2J'],
    end_reason: 'stdin_eof',
    exit_code: 0,
    signal: null,
    calls: 2,
    rejected: 1,
    era: null,
    protocol_version: null,
    sealed: true,
    torn: false,
    records: 9,
    forced_kill: false,
    spawn_failed: false,
    failed_calls: null,
    restarts: null,
    liveness: null,
  });
  assert.equal(rows[0].sealed, false);
});

test('activity: defaults to the latest session; one row per call and per rejection', async () => {
  const latest = await run('activity', ['--record-dir', dir]);
  assert.equal(latest.code, 0);
  assert.match(latest.stdout, /^session s_20261129T110000Z_bbbbbbbb/);
  assert.match(latest.stdout, /^c_bbbbbbbbbbb1\s+\S+\s+initialize\s+-\s+open\s+-\s+-$/m); // the session is still running
  const { code, stdout } = await run('activity', ['--record-dir', dir, 's_20261129T100000Z_aaaaaaaa']);
  assert.equal(code, 0);
  const lines = stdout.trimEnd().split('\n');
  assert.match(lines[0], /^session s_20261129T100000Z_aaaaaaaa {2}python {2}2026-11-29 10:00:00 [+-]\d\d:\d\d {2}/);
  assert.deepEqual(
    lines[1].split(/\s{2,}/),
    ['CALL', 'TIME', 'METHOD', 'TOOL', 'STATE', 'STDERR SEEN/KEPT', 'DURATION'].map((h) => (h === 'TIME' ? `TIME ${/TIME (\S+)/.exec(lines[1])[1]}` : h)),
  );
  // Newest first: the call first recorded last comes first; the rejection's reason on a line of its own.
  assert.match(lines[2], /^c_aaaaaaaaaaa2\s+\S+\s+tools\/list\s+-\s+no_final_record\s+-\s+-$/);
  assert.match(lines[3], /^\(rejected\)\s+\S+\s+-\s+-\s+from client\s+-\s+-$/);
  assert.equal(lines[4], '    not JSON (-32700)');
  assert.match(lines[5], /^c_aaaaaaaaaaa1\s+\d\d:\d\d:\d\d\.\d{3}\s+tools\/call\s+echo\s+completed\s+20000\/16384 truncated\s+250ms$/);
  assert.equal(lines.length, 6);
});

test('activity --json, by unique prefix; an unknown or ambiguous session exits 1', async () => {
  const { code, stdout } = await run('activity', ['--json', '--record-dir', dir, 's_20261129T10']);
  assert.equal(code, 0);
  const rows = jsonLines(stdout);
  assert.deepEqual(
    rows.map((r) => [r.kind, r.call_id ?? r.reason, r.state ?? r.direction]),
    [
      ['call', 'c_aaaaaaaaaaa2', 'no_final_record'],
      ['reject', 'not JSON', 'client'],
      ['call', 'c_aaaaaaaaaaa1', 'completed'],
    ],
  );
  assert.equal(rows[2].duration_ms, 250);
  assert.equal(rows[2].stderr_truncated, true);
  assert.deepEqual(rows[1].fingerprint, fingerprint(Buffer.from('{"token":"hunter2"')));
  assert.ok(!stdout.includes('hunter2'));
  const unknown = await run('activity', ['--record-dir', dir, 's_nope']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no session 's_nope'/);
  const ambiguous = await run('activity', ['--record-dir', dir, 's_2026']);
  assert.equal(ambiguous.code, 1);
  assert.match(ambiguous.stderr, /matches 2 sessions/);
});

test('show: every record of one call, readable, and as JSON', async () => {
  const { code, stdout } = await run('show', ['--record-dir', dir, 'c_aaaaaaaaaaa1']);
  assert.equal(code, 0);
  assert.match(stdout, /^call c_aaaaaaaaaaa1 in session s_20261129T100000Z_aaaaaaaa/);
  assert.deepEqual(
    [...stdout.matchAll(/^#(\d+) {2}\S+ \S+ \S+ {2}(\S+)$/gm)].map((m) => [Number(m[1]), m[2]]),
    [
      [2, 'call_attempt'],
      [3, 'call_dispatched'],
      [6, 'call_end'],
    ],
  );
  assert.match(stdout, /^ {2}state +completed$/m);
  assert.match(stdout, /^ {2}stderr_bytes_seen +20000$/m);
  const json = await run('show', ['--record-dir', dir, '--json', 'c_aaaaaaaaaaa1']);
  const records = jsonLines(json.stdout);
  assert.deepEqual(
    records.map((r) => r.type),
    ['call_attempt', 'call_dispatched', 'call_end'],
  );
  assert.ok(records.every((r) => /^[0-9a-f]{64}$/.test(r.prev) && !('hash' in r)));
  const missing = await run('show', ['--record-dir', dir, 'c_missing']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no call 'c_missing'/);
});

test('verify: 2 while a log is unsealed, 0 with --allow-unsealed, 1 naming the file, line and reason when tampered', async () => {
  const unsealed = await run('verify', ['--record-dir', dir]);
  assert.equal(unsealed.code, 2);
  assert.match(unsealed.stdout, /^ok +\S+s_20261129T100000Z_aaaaaaaa\.jsonl +9 *$/m);
  assert.match(
    unsealed.stdout,
    /^UNSEALED +\S+s_20261129T110000Z_bbbbbbbb\.jsonl +3\n {4}ended without seal: crash or truncation \(no record follows the last one to vouch for it\)$/m,
  );
  assert.match(unsealed.stdout, /^2 logs: 1 ok, 1 unsealed$/m);
  assert.equal((await run('verify', ['--record-dir', dir, '--allow-unsealed'])).code, 0);

  const copy = join(root, 'tampered');
  const log = SessionLog.create({ dir: copy, fsync: false }, 's_t');
  log.append('call_end', { call_id: 'c_1', state: 'error' });
  log.seal();
  writeFileSync(log.path, readFileSync(log.path, 'utf8').replace('"error"', '"completed"'));
  const tampered = await run('verify', ['--record-dir', copy]);
  assert.equal(tampered.code, 1);
  // The altered line 2 is caught by the record after it, whose prev no longer matches.
  assert.match(tampered.stdout, /^TAMPERED +\S+\/s_t\.jsonl +2\n {4}line 3 \(seq 2\): prev is not the hash of line 2: that line was altered or replaced$/m);
  const json = jsonLines((await run('verify', ['--record-dir', copy, '--json'])).stdout);
  assert.deepEqual([json[0].status, json[0].line, json[0].file], ['tampered', 3, log.path]);

  // A log of another format version is reported as such, not as tampering.
  const old = join(root, 'version1');
  const v1 = SessionLog.create({ dir: old, fsync: false }, 's_v1');
  v1.seal();
  writeFileSync(v1.path, readFileSync(v1.path, 'utf8').replace('"version":2', '"version":1'));
  const version = await run('verify', ['--record-dir', old]);
  assert.equal(version.code, 1);
  assert.match(version.stdout, /^VERSION +\S+\/s_v1\.jsonl +0\n {4}line 1 \(seq 0\): a version 1 log: this mcpguard verifies version 2 logs$/m);
});

test('verify --audit-key-file: the right key passes, a wrong one fails, a key inside the record dir is refused', async () => {
  const keyed = join(root, 'keyed');
  const keyFile = join(root, 'audit.key');
  const key = Buffer.from('s3cret-s3cret-s3cret-s3cret!');
  writeFileSync(keyFile, key);
  const log = SessionLog.create({ dir: keyed, fsync: false, key });
  log.seal();
  assert.equal((await run('verify', ['--record-dir', keyed, '--audit-key-file', keyFile])).code, 0);
  const keyless = await run('verify', ['--record-dir', keyed]);
  assert.equal(keyless.code, 1);
  assert.match(keyless.stdout, /^KEY .*\n {4}.*HMAC chain/m);
  const wrongFile = join(root, 'wrong.key');
  writeFileSync(wrongFile, 'another-key-another-key');
  assert.equal((await run('verify', ['--record-dir', keyed, '--audit-key-file', wrongFile])).code, 1);
  const inside = join(keyed, 'audit.key');
  writeFileSync(inside, key);
  const refused = await run('verify', ['--record-dir', keyed, '--audit-key-file', inside]);
  assert.equal(refused.code, 125);
  assert.match(refused.stderr, /--audit-key-file '.*audit.key' is inside the record directory/);
});

test('bad options exit 125 with a message naming the option and the value', async () => {
  const cases = [
    ['sessions', ['--bogus'], /unknown option '--bogus'/],
    ['sessions', ['-x'], /unknown option '-x'/],
    ['sessions', ['--record-dir'], /--record-dir expects a directory, got nothing/],
    ['verify', ['--audit-key-file'], /--audit-key-file expects a key file, got nothing/],
    ['verify', ['--json=yes'], /--json takes no value, got 'yes'/],
    ['activity', ['--record-dir', join(root, 'missing')], /--record-dir expects a directory, got '.*missing' \(does not exist\)/],
    ['sessions', ['--record-dir', ''], /--record-dir expects a directory, got ''/],
    ['sessions', ['--record-dir', dir, 'extra'], /unexpected argument 'extra'/],
    ['show', ['--record-dir', dir], /expects a SESSION or CALL_ID/],
    ['activity', ['--audit-key-file', 'k'], /unknown option '--audit-key-file'/],
  ];
  for (const [name, argv, message] of cases) {
    const { code, stdout, stderr } = await run(name, argv);
    assert.equal(code, 125, `${name} ${argv.join(' ')}`);
    assert.match(stderr, new RegExp(`^mcpguard ${name}: ${message.source}`));
    assert.equal(stdout, '');
  }
});

test('a default record directory that does not exist yet means no sessions, not an error', async () => {
  const saved = process.env.MCPGUARD_HOME;
  process.env.MCPGUARD_HOME = join(root, 'never-created');
  try {
    const listed = await run('sessions', ['--json']);
    assert.deepEqual([listed.code, listed.stdout], [0, '']);
    const verified = await run('verify', []);
    assert.equal(verified.code, 0);
    assert.match(verified.stderr, /no session logs in '.*never-created'/);
    assert.equal((await run('activity', [])).code, 1);
  } finally {
    if (saved === undefined) delete process.env.MCPGUARD_HOME;
    else process.env.MCPGUARD_HOME = saved;
  }
});

test('as a process: the default record dir comes from $MCPGUARD_HOME and the table goes to stdout', { timeout: 20_000 }, async () => {
  const source = `
    import { runRecordsCommand } from ${JSON.stringify(new URL('../../dist/views/commands.js', import.meta.url).href)};
    process.exitCode = await runRecordsCommand('verify', ['--allow-unsealed']);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
    env: { ...process.env, MCPGUARD_HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stdout = '';
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
  });
  const code = await new Promise((resolve) => child.on('exit', resolve));
  children.delete(child);
  assert.equal(code, 0);
  assert.match(stdout, /2 logs: 1 ok, 1 unsealed/);
});
