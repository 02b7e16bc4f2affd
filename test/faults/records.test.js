// Faults around the records: whose directory they go to and with what mode, what
// mcpguard refuses to write through, and what its exit status says when the
// audit log fails during a session.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lchownSync, lstatSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SessionLog } from '../../dist/records/store.js';
import { BIN, fixture, frame, killStarted, runCommand, runGuard, sessionEnd, tempDir } from '../helpers/run.js';

after(killStarted);

const TIMEOUT = 30000;
const uid = process.geteuid();
const isRoot = uid === 0;
const NOBODY = 65534;
const tool = (id, name, args = {}) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const mode = (path) => lstatSync(path).mode & 0o7777;
const logsIn = (dir) => readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
const hasPrlimit = spawnSync('prlimit', ['--version']).status === 0;

/** A session with one recorded tool call whose marker file proves the child ran. */
async function recordedSession(recordDir, scratch, extra = {}) {
  const marker = join(scratch, `ran-${Date.now()}-${Math.random()}`);
  const r = await runGuard([`--record-dir=${recordDir}`, '--', 'python3', fixture('recorder.py')], {
    input: tool(1, 'record', { v: 1 }),
    env: { RECORD_ACTIONS: marker },
    timeout: TIMEOUT,
    ...extra,
  }).done;
  return { ...r, ran: existsSync(marker) };
}

/** mcpguard with a record dir it must refuse: exit 125, a message, and a child that never ran. */
async function assertRefused(recordDir, scratch, problem) {
  const marker = join(scratch, 'child-ran');
  const r = await runGuard([`--record-dir=${recordDir}`, '--', 'sh', '-c', `touch '${marker}'`], { timeout: TIMEOUT }).done;
  assert.equal(r.code, 125, r.stderr);
  assert.ok(r.stderr.includes(recordDir), `names the directory: ${r.stderr}`);
  assert.match(r.stderr, problem);
  assert.equal(existsSync(marker), false, 'the child never started');
  return r;
}

describe('the record directory: only what mcpguard made gets a mode, an existing one is checked', () => {
  test('an existing 1777 directory stays 1777; records go to an own 0700 subdirectory, where the views find them', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const shared = join(dir, 'shared');
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      const r = await recordedSession(shared, dir);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(mode(shared), 0o1777);
      const own = join(shared, `mcpguard-${uid}`);
      assert.deepEqual(readdirSync(shared), [`mcpguard-${uid}`], 'nothing written to the shared directory itself');
      assert.equal(mode(own), 0o700);
      const [log] = logsIn(own);
      assert.equal(mode(join(own, log)), 0o600);
      const sessions = await runGuard(['sessions', `--record-dir=${shared}`, '--json'], { timeout: TIMEOUT }).done;
      assert.equal(sessions.code, 0, sessions.stderr);
      assert.equal(JSON.parse(sessions.stdout.toString()).session_id, log.replace(/\.jsonl$/, ''));
      const verify = await runGuard(['verify', `--record-dir=${shared}`], { timeout: TIMEOUT }).done;
      assert.equal(verify.code, 0, verify.stdout.toString() + verify.stderr);
      // A second session reuses the subdirectory as it is.
      assert.equal((await recordedSession(shared, dir)).code, 0);
      assert.equal(logsIn(own).length, 2);
    } finally {
      cleanup();
    }
  });

  test('an existing own subdirectory in a sticky directory that is not private is refused, not chmodded', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const shared = join(dir, 'shared');
      mkdirSync(shared);
      chmodSync(shared, 0o1777);
      const own = join(shared, `mcpguard-${uid}`);
      mkdirSync(own);
      chmodSync(own, 0o755);
      await assertRefused(shared, dir, /mode 0755, not 0700/);
      assert.equal(mode(own), 0o755);
      // A symlink planted there is never followed.
      const elsewhere = join(dir, 'elsewhere');
      mkdirSync(elsewhere, { mode: 0o700 });
      const planted = join(dir, 'shared2');
      mkdirSync(planted);
      chmodSync(planted, 0o1777);
      symlinkSync(elsewhere, join(planted, `mcpguard-${uid}`));
      await assertRefused(planted, dir, /is a symbolic link/);
      assert.deepEqual(readdirSync(elsewhere), []);
    } finally {
      cleanup();
    }
  });

  test('a group-writable or world-writable directory without the sticky bit is refused, and left as it was', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      for (const [name, bits, problem] of [
        ['group', 0o770, /group-writable \(mode 0770\)/],
        ['world', 0o707, /world-writable \(mode 0707\)/],
      ]) {
        const loose = join(dir, name);
        mkdirSync(loose);
        chmodSync(loose, bits);
        const r = await assertRefused(loose, dir, problem);
        assert.match(r.stderr, /chmod go-w/);
        assert.equal(mode(loose), bits);
        assert.deepEqual(readdirSync(loose), []);
      }
    } finally {
      cleanup();
    }
  });

  test('an existing 0755 directory of ours keeps its mode; records are written, files 0600', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const records = join(dir, 'records');
      mkdirSync(records);
      chmodSync(records, 0o755);
      const r = await recordedSession(records, dir);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.ran);
      assert.equal(mode(records), 0o755);
      const logs = logsIn(records);
      assert.equal(logs.length, 1);
      assert.equal(mode(join(records, logs[0])), 0o600);
    } finally {
      cleanup();
    }
  });

  test('a directory made fresh, and every missing parent made with it, is 0700 even under umask 0277', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const records = join(dir, 'missing', 'parent', 'records');
      // The umask would leave mkdir's directories 0500: only mcpguard can make them 0700.
      const r = await runCommand('sh', ['-c', 'umask 0277; exec "$@"', 'sh', process.execPath, BIN, `--record-dir=${records}`, '--', 'true'], {
        timeout: TIMEOUT,
      }).done;
      assert.equal(r.code, 0, r.stderr);
      for (const made of [join(dir, 'missing'), join(dir, 'missing', 'parent'), records]) assert.equal(mode(made), 0o700, made);
      assert.equal(mode(join(records, logsIn(records)[0])), 0o600);
    } finally {
      cleanup();
    }
  });

  test('a symlink you own as the record directory is followed once; its target is checked like any directory', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const target = join(dir, 'target');
      mkdirSync(target);
      chmodSync(target, 0o755);
      const link = join(dir, 'link');
      symlinkSync(target, link);
      const r = await recordedSession(link, dir);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(logsIn(target).length, 1, 'records are in the target');
      assert.equal(mode(target), 0o755);
      const sessions = await runGuard(['sessions', `--record-dir=${link}`, '--json'], { timeout: TIMEOUT }).done;
      assert.equal(sessions.stdout.toString().trim().split('\n').length, 1, sessions.stderr);
      // A symlink to a directory the checks refuse is refused the same way.
      const loose = join(dir, 'loose');
      mkdirSync(loose);
      chmodSync(loose, 0o777);
      const looseLink = join(dir, 'loose-link');
      symlinkSync(loose, looseLink);
      await assertRefused(looseLink, dir, /world-writable/);
      assert.equal(mode(loose), 0o777);
    } finally {
      cleanup();
    }
  });

  test('a symlink or a directory owned by someone else is refused', { timeout: TIMEOUT, skip: isRoot ? false : 'needs root to give files away' }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const target = join(dir, 'target');
      mkdirSync(target, { mode: 0o700 });
      const link = join(dir, 'link');
      symlinkSync(target, link);
      lchownSync(link, NOBODY, NOBODY);
      await assertRefused(link, dir, /symbolic link owned by uid 65534/);
      assert.deepEqual(readdirSync(target), []);
      const theirs = join(dir, 'theirs');
      mkdirSync(theirs, { mode: 0o700 });
      chownSync(theirs, NOBODY, NOBODY);
      await assertRefused(theirs, dir, /owned by uid 65534, not by you/);
      assert.equal(mode(theirs), 0o700);
      assert.equal(statSync(theirs).uid, NOBODY);
    } finally {
      cleanup();
    }
  });
});

describe('record files are never opened through a symlink', () => {
  test('a symlink where the session log would be is not followed, whether its target exists or not', () => {
    const { dir, cleanup } = tempDir();
    try {
      const records = join(dir, 'records');
      mkdirSync(records, { mode: 0o700 });
      const victim = join(dir, 'victim');
      writeFileSync(victim, 'keep me\n');
      symlinkSync(victim, join(records, 's_fixed_1.jsonl'));
      symlinkSync(join(dir, 'would-be-created'), join(records, 's_fixed_2.jsonl'));
      for (const id of ['s_fixed_1', 's_fixed_2']) {
        assert.throws(
          () => SessionLog.create({ dir: records, fsync: false }, id),
          (e) => e.code === 'ERR_RECORD_OPEN' && e.exitCode === 74,
        );
      }
      assert.equal(readFileSync(victim, 'utf8'), 'keep me\n');
      assert.equal(existsSync(join(dir, 'would-be-created')), false);
    } finally {
      cleanup();
    }
  });

  test('verify and the views do not read a log through a symlink', { timeout: TIMEOUT }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const records = join(dir, 'records');
      mkdirSync(records, { mode: 0o700 });
      assert.equal((await recordedSession(records, dir)).code, 0);
      // Someone else's log (intact, sealed) linked in: it is not this directory's record.
      const other = join(dir, 'other');
      mkdirSync(other, { mode: 0o700 });
      assert.equal((await recordedSession(other, dir)).code, 0);
      const [theirs] = logsIn(other);
      symlinkSync(join(other, theirs), join(records, theirs));
      const verify = await runGuard(['verify', `--record-dir=${records}`, '--json'], { timeout: TIMEOUT }).done;
      const results = verify.stdout
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const linked = results.find((x) => x.file.endsWith(theirs));
      assert.equal(linked.status, 'unreadable');
      assert.match(linked.reason, /symbolic link/);
      assert.equal(verify.code, 1);
      const sessions = await runGuard(['sessions', `--record-dir=${records}`, '--json'], { timeout: TIMEOUT }).done;
      assert.equal(sessions.code, 0, sessions.stderr);
      assert.equal(sessions.stdout.toString().trim().split('\n').length, 1);
      assert.match(sessions.stderr, /skipped: a symbolic link/);
    } finally {
      cleanup();
    }
  });
});

describe('a failing audit log shows in the exit status', { skip: hasPrlimit ? false : 'needs prlimit (util-linux) to cap file sizes' }, () => {
  /** The byte lengths of a session log's lines (newlines included). */
  const lineSizes = (file) =>
    readFileSync(file, 'utf8')
      .split(/(?<=\n)/)
      .map((l) => Buffer.byteLength(l));

  /**
   * mcpguard under RLIMIT_FSIZE = `limit` bytes: the first write past it is
   * cut short and the next fails with EFBIG (Node ignores SIGXFSZ). The record
   * directory's path has the length of the calibration run's, since the
   * options (and so the session_start record) include it.
   */
  function cappedGuard(limit, recordDir, scratch, options) {
    // The same options as the calibration run's (runGuard adds --validate-args=off there).
    return runCommand(
      'prlimit',
      [`--fsize=${limit}`, '--', process.execPath, BIN, '--validate-args=off', `--record-dir=${recordDir}`, '--', 'python3', fixture('recorder.py')],
      {
        env: { RECORD_ACTIONS: join(scratch, 'actions') },
        timeout: TIMEOUT,
        ...options,
      },
    );
  }

  test('a write that fails mid-session ends the session, and mcpguard exits 74 though the server exited 0', { timeout: TIMEOUT * 2 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const input = tool(1, 'record', { v: 1 });
      const calibration = join(dir, 'calibr'); // as long as 'capped'
      const r0 = await runGuard([`--record-dir=${calibration}`, '--', 'python3', fixture('recorder.py')], { input, timeout: TIMEOUT }).done;
      assert.equal(r0.code, 0, r0.stderr);
      const sizes = lineSizes(join(calibration, logsIn(calibration)[0]));
      // header, session_start and child_started fit; the call's write-ahead attempt does not.
      const limit = sizes[0] + sizes[1] + sizes[2] + Math.floor(sizes[3] / 2);
      const records = join(dir, 'capped');
      const r = await cappedGuard(limit, records, dir, { input }).done;
      assert.equal(r.code, 74, r.stderr);
      assert.match(r.stderr, /cannot write the audit log/);
      const summary = sessionEnd(r.stderr);
      assert.equal(summary.end_reason, 'record_failure');
      assert.equal(summary.exit_code, 0, "the server's own status is kept in the summary");
      assert.equal(existsSync(join(dir, 'actions')), false, 'the unrecorded call never reached the server');
    } finally {
      cleanup();
    }
  });

  // The one refusal of an unrecorded call is the same whichever way the call went: straight out, or through the gate.
  for (const [how, gate] of [
    ['ungated', []],
    ['gated (--policy)', ['--policy', 'POLICY']],
  ]) {
    test(`a ${how} call whose attempt cannot be recorded gets one answer, rejected, and never reaches the server`, { timeout: TIMEOUT * 2 }, async () => {
      const { dir, cleanup } = tempDir();
      try {
        const policy = join(dir, 'policy.json');
        writeFileSync(policy, JSON.stringify({ default: 'allow' }));
        const options = gate.map((a) => (a === 'POLICY' ? policy : a));
        const input = tool(7, 'record', { v: 1 });
        const calibration = join(dir, 'calibr'); // as long as 'capped'
        const r0 = await runGuard(['--validate-args=off', ...options, `--record-dir=${calibration}`, '--', 'python3', fixture('recorder.py')], {
          input,
          timeout: TIMEOUT,
        }).done;
        assert.equal(r0.code, 0, r0.stderr);
        const log = join(calibration, logsIn(calibration)[0]);
        const lines = readFileSync(log, 'utf8').split(/(?<=\n)/);
        const attempt = lines.findIndex((l) => l.includes('"type":"call_attempt"'));
        assert.ok(attempt > 0, `an attempt record in ${lines.join('')}`);
        // Everything before the call's write-ahead attempt fits; the attempt does not.
        const limit = lines.slice(0, attempt).reduce((n, l) => n + Buffer.byteLength(l), 0) + Math.floor(Buffer.byteLength(lines[attempt]) / 2);
        const args = ['--validate-args=off', ...options, `--record-dir=${join(dir, 'capped')}`, '--', 'python3', fixture('recorder.py')];
        const r = await runCommand('prlimit', [`--fsize=${limit}`, '--', process.execPath, BIN, ...args], {
          input,
          env: { RECORD_ACTIONS: join(dir, 'actions') },
          timeout: TIMEOUT,
        }).done;
        assert.equal(r.code, 74, r.stderr);
        const answers = r.stdout
          .toString()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l));
        assert.deepEqual(answers, [
          {
            jsonrpc: '2.0',
            id: 7,
            error: {
              code: -32603,
              message: 'mcpguard: the audit record could not be written; request not forwarded',
              data: { source: 'mcpguard', state: 'rejected' },
            },
          },
        ]);
        assert.equal(existsSync(join(dir, 'actions')), false, 'the unrecorded call never reached the server');
      } finally {
        cleanup();
      }
    });
  }

  test('a write that fails before the session exists ends it at once, though the client stays connected', { timeout: TIMEOUT * 2 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const calibration = join(dir, 'calibr'); // as long as 'capped'
      await runGuard([`--record-dir=${calibration}`, '--', 'true'], { timeout: TIMEOUT }).done;
      const [header] = lineSizes(join(calibration, logsIn(calibration)[0]));
      // Room for the header only: the session_start record fails while the session is being built.
      const g = cappedGuard(header + 10, join(dir, 'capped'), dir, { keepOpen: true });
      const r = await g.done;
      assert.equal(r.code, 74, r.stderr);
      assert.equal(sessionEnd(r.stderr).end_reason, 'record_failure');
    } finally {
      cleanup();
    }
  });
});
