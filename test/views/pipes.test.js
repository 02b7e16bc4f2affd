// Output that is never lost: the record views through real pipes, to a slow
// reader and to `head -1`, and views of a 200,000-call session.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SessionLog } from '../../dist/records/store.js';
import { writeSession } from './gen-log.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'mcpguard.js');
const SLOW = fileURLToPath(new URL('./slow-reader.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'mcpguard-pipes-'));
const groups = new Set();

after(() => {
  for (const pid of groups)
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  rmSync(root, { recursive: true, force: true });
});

/** Run a bash script in its own process group; resolves to its stdout once it exits (killed after `timeout`). */
function bash(script, timeout = 60_000) {
  const child = spawn('bash', ['-c', script], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  groups.add(child.pid);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => {
    stdout += c;
  });
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      reject(new Error(`did not finish within ${timeout} ms: ${script}\n${stderr}`));
    }, timeout);
    child.on('close', (code) => {
      clearTimeout(timer);
      groups.delete(child.pid);
      resolve({ code, stdout, stderr });
    });
  });
}

const q = (text) => `'${text.replace(/'/g, "'\\''")}'`;
const CALLS = 50_000;
let calls; // a directory of one sealed session of CALLS calls (and CALLS / 1000 rejections)
let many; // a directory of 700 small sessions: `sessions` prints more than a pipe holds

before(async () => {
  calls = join(root, 'calls');
  await writeSession(calls, 's_20261130T020000Z_aaaaaaaa', CALLS);
  many = join(root, 'many');
  for (let i = 0; i < 700; i++) {
    const log = SessionLog.create(
      { dir: many, fsync: false },
      `s_20261130T02${String(Math.floor(i / 60) % 60).padStart(2, '0')}${String(i % 60).padStart(2, '0')}Z_${String(i).padStart(8, '0')}`,
    );
    log.append('session_start', { command: 'python3', args: ['server.py', `--instance=${i}`], cwd: '/', started_at: '2026-11-30T02:00:00.000Z' });
    log.append('session_end', {
      end_reason: 'stdin_eof',
      exit_code: 0,
      signal: null,
      calls: { completed: 1 },
      rejected: { client: 0, child: 0 },
      ended_at: '2026-11-30T02:00:01.000Z',
    });
    log.seal();
  }
});

// What a view writes to a regular file (always complete: file writes are synchronous) is what a slow pipe reader must get.
for (const [name, args, dirOf, lines] of [
  ['activity', ['activity'], () => calls, CALLS + 2 * (CALLS / 1000) + 2], // a rejection's reason is a line of its own
  ['activity --json', ['activity', '--json'], () => calls, CALLS + CALLS / 1000],
  ['sessions', ['sessions'], () => many, 701],
  ['sessions --json', ['sessions', '--json'], () => many, 700],
]) {
  test(`${name} | slow reader: every byte arrives, exit 0`, { timeout: 120_000 }, async () => {
    const argv = [...args, '--record-dir', dirOf()].map(q).join(' ');
    const file = join(root, `${name.replace(/\W+/g, '-')}.file`);
    const piped = join(root, `${name.replace(/\W+/g, '-')}.piped`);
    const direct = await bash(`node ${q(BIN)} ${argv} > ${q(file)}; echo $?`);
    assert.equal(direct.stdout.trim(), '0', direct.stderr);
    const run = await bash(`node ${q(BIN)} ${argv} | node ${q(SLOW)} ${q(piped)}; echo "\${PIPESTATUS[*]}"`);
    assert.equal(run.stdout.trim(), '0 0', run.stderr);
    assert.equal(run.stderr, '');
    const expected = readFileSync(file);
    assert.equal(expected.toString().split('\n').length - 1, lines);
    const got = readFileSync(piped);
    assert.equal(got.length, expected.length, `${got.length} of ${expected.length} bytes arrived`);
    assert.ok(got.equals(expected));
  });
}

for (const args of [['activity'], ['activity', '--json'], ['sessions']]) {
  test(`${args.join(' ')} | head -1: one line, exit 0, nothing on stderr`, { timeout: 60_000 }, async () => {
    const dir = args[0] === 'sessions' ? many : calls;
    const run = await bash(`node ${q(BIN)} ${[...args, '--record-dir', dir].map(q).join(' ')} | head -1; echo "status \${PIPESTATUS[*]}"`);
    const [line, status, ...rest] = run.stdout.trimEnd().split('\n');
    assert.deepEqual(rest, []);
    assert.equal(status, 'status 0 0');
    assert.equal(run.stderr, '', 'no stack trace, no EPIPE message');
    assert.ok(line.length > 0);
  });
}

test('a 200,000-call session through activity and activity --json', { timeout: 180_000 }, async () => {
  const dir = join(root, 'huge');
  await writeSession(dir, 's_20261130T040000Z_hhhhhhhh', 200_000, { open: 3 });
  for (const json of [false, true]) {
    const run = await bash(`node ${q(BIN)} activity ${json ? '--json ' : ''}--record-dir ${q(dir)} | wc -l; echo "\${PIPESTATUS[*]}"`, 120_000);
    const [count, status] = run.stdout.trim().split('\n');
    assert.equal(status.trim(), '0 0', run.stderr);
    assert.equal(run.stderr, '');
    assert.equal(Number(count), 200_000 + 200 + (json ? 0 : 2 + 200));
  }
  // Newest first (the log is read backwards, in chunks): the rejection recorded last, then the three calls that
  // never ended (the last calls, as no_final_record), then the newest call that did.
  const head = await bash(`node ${q(BIN)} activity --json --record-dir ${q(dir)} | head -5`, 120_000);
  const rows = head.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    rows.map((r) => [r.kind, r.request_id ?? r.line, r.state ?? r.reason]),
    [
      ['reject', 200_001, 'not JSON'],
      ['call', 200_000, 'no_final_record'],
      ['call', 199_999, 'no_final_record'],
      ['call', 199_998, 'no_final_record'],
      ['call', 199_997, 'completed'], // 199,997 is no multiple of 97: not a tool error
    ],
  );
  // And the oldest last: the whole listing is the forward order reversed.
  const tail = await bash(`node ${q(BIN)} activity --json --record-dir ${q(dir)} | tail -2`, 120_000);
  assert.deepEqual(
    tail.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).request_id),
    [2, 1],
  );
});
