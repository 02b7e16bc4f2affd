import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canonical } from '../../dist/records/canonical.js';
import { SessionLog, fingerprint, newCallId, newSessionId } from '../../dist/records/store.js';
import { verifyDir, verifyFile } from '../../dist/views/verify.js';

const STORE_URL = new URL('../../dist/records/store.js', import.meta.url).href;
const root = mkdtempSync(join(tmpdir(), 'mcpguard-store-'));
const children = new Set();
after(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(root, { recursive: true, force: true });
});
let n = 0;
const freshDir = () => join(root, `d${n++}`);
const readRecords = (path) =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));

// Run a node ESM snippet; resolves to { code, signal, stderr }.
function runNode(source, { shell } = {}) {
  const child = shell
    ? spawn('sh', ['-c', `${shell}; exec "$0" --input-type=module -e "$1"`, process.execPath, source], { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(process.execPath, ['--input-type=module', '-e', source], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      children.delete(child);
      resolve({ code, signal, stderr });
    }),
  );
}

test('ids: session ids sort by time and are file-name safe; call ids and fingerprints have their shape', () => {
  const a = newSessionId(new Date('2026-11-29T11:22:33.456Z'));
  assert.match(a, /^s_20261129T112233Z_[0-9a-f]{8}$/);
  assert.ok(newSessionId(new Date('2026-11-29T11:22:34Z')) > a);
  assert.match(newCallId(), /^c_[0-9a-f]{12}$/);
  // Across refills of the pool the ids stay distinct.
  const ids = new Set(Array.from({ length: 3000 }, () => newCallId()));
  assert.equal(ids.size, 3000);
  const secret = Buffer.from('{"jsonrpc":"2.0","params":{"token":"hunter2"}}');
  const fp = fingerprint(secret);
  assert.deepEqual(Object.keys(fp).sort(), ['bytes', 'sha256_16']);
  assert.equal(fp.bytes, secret.length);
  assert.match(fp.sha256_16, /^[0-9a-f]{16}$/);
});

test('a session log is a header, one line per event with seq/prev/ts, and a seal: prev hashes the line before (newline included), the seal hashes itself', () => {
  const dir = freshDir();
  const log = SessionLog.create({ dir, fsync: true }, 's_test_1');
  assert.equal(log.sessionId, 's_test_1');
  assert.equal(log.path, join(dir, 's_test_1.jsonl'));
  log.append('session_start', { command: 'python', args: ['server.py'], cwd: '/', pid: 42, started_at: 'x' });
  log.append('call_attempt', { call_id: 'c_1', request_id: 1, method: 'tools/list', tool: null });
  log.seal();
  assert.equal(log.sealed, true);
  const records = readRecords(log.path);
  assert.deepEqual(
    records.map((r) => [r.seq, r.type]),
    [
      [0, 'header'],
      [1, 'session_start'],
      [2, 'call_attempt'],
      [3, 'seal'],
    ],
  );
  const [header, start, , seal] = records;
  assert.deepEqual(
    { ...header, created_at: undefined, writer_pid: undefined },
    { type: 'header', log_id: 's_test_1', alg: 'sha256', key_id: null, version: 2, seq: 0, prev: '0'.repeat(64), created_at: undefined, writer_pid: undefined },
  );
  const lines = readFileSync(log.path, 'utf8').split('\n').slice(0, -1);
  const sha = (text) => createHash('sha256').update(text).digest('hex');
  for (let i = 1; i < lines.length; i++) assert.equal(records[i].prev, sha(`${lines[i - 1]}\n`), `prev of record ${i}`);
  assert.deepEqual(
    records.map((r) => 'hash' in r),
    [false, false, false, true],
  );
  const { hash, ...unhashed } = seal;
  assert.equal(hash, sha(canonical(unhashed)));
  assert.equal(start.pid, 42);
  assert.match(start.ts, /^\d{4}-\d\d-\d\dT/);
  assert.equal(seal.records, 4);
  assert.equal(verifyFile(log.path).status, 'ok');
});

test('deferred records wait unchained until flush; a write-ahead record goes ahead of them; seal writes them all', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  const attempt = new RecordShape('call_attempt', ['call_id']);
  const end = new RecordShape('call_end', ['call_id', 'state']);
  const log = SessionLog.create({ dir: freshDir(), fsync: false }, 's_test_defer');
  const types = () => readRecords(log.path).map((r) => `${r.type}:${r.call_id ?? ''}`);
  log.appendShaped(attempt, ['c_1']);
  log.appendShaped(end, ['c_1', 'completed'], true);
  log.defer('reject', { reason: 'not JSON' });
  assert.deepEqual(types(), ['header:', 'call_attempt:c_1'], 'deferred records are not written yet');
  log.appendShaped(attempt, ['c_2']);
  assert.deepEqual(types(), ['header:', 'call_attempt:c_1', 'call_attempt:c_2'], 'the attempt does not wait for them');
  log.flush();
  assert.deepEqual(types(), ['header:', 'call_attempt:c_1', 'call_attempt:c_2', 'call_end:c_1', 'reject:']);
  log.appendShaped(end, ['c_2', 'error'], true);
  log.seal();
  const records = readRecords(log.path);
  assert.deepEqual(
    records.map((r) => r.seq),
    [0, 1, 2, 3, 4, 5, 6],
  );
  assert.deepEqual(
    records.slice(-2).map((r) => [r.type, r.state ?? r.records]),
    [
      ['call_end', 'error'],
      ['seal', 7],
    ],
  );
  assert.equal(verifyFile(log.path).status, 'ok');
});

test("values arrays lent by a shape come back once chained, never while queued; a caller's own array is left alone", async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  const end = new RecordShape('call_end', ['call_id', 'state', 'detail']);
  const log = SessionLog.create({ dir: freshDir(), fsync: false }, 's_test_lent');
  const lent = new Set();
  const expected = [{ call_id: 'c_own', state: 'completed', detail: { kept: true } }];
  // First, while the shape keeps no spare arrays: one it did not make must not become one.
  const own = ['c_own', 'completed', { kept: true }];
  log.appendShaped(end, own, true);
  log.flush();
  assert.deepEqual(own, ['c_own', 'completed', { kept: true }], 'an array the shape did not make is not emptied or reused');
  assert.notEqual(end.values(), own, 'nor handed out');
  for (let round = 0; round < 3; round++) {
    // Up to 20 records queued at once (more than a shape keeps spare), each with its own content.
    for (let i = 0; i < 4 + round * 8; i++) {
      const v = end.values();
      assert.equal(v.length, 3);
      assert.ok(
        v.every((x) => x === null),
        'a lent array comes back emptied',
      );
      v[0] = `c_${round}_${i}`;
      v[1] = i % 2 === 0 ? 'completed' : 'error';
      v[2] = { round, i, text: 'x'.repeat(i) };
      lent.add(v);
      log.appendShaped(end, v, true);
      expected.push({ call_id: v[0], state: v[1], detail: { round, i, text: 'x'.repeat(i) } });
    }
    log.flush();
  }
  const records = readRecords(log.path).filter((r) => r.type === 'call_end');
  assert.deepEqual(
    records.map(({ call_id, state, detail }) => ({ call_id, state, detail })),
    expected,
  );
  // Arrays were reused across rounds (fewer arrays than records), so the check above covers reuse.
  assert.ok(lent.size < expected.length - 1, `${lent.size} arrays for ${expected.length - 1} records`);
  log.seal();
  assert.equal(verifyFile(log.path).status, 'ok');
});

test('lines hashed where they were built: same places and lengths with new bytes, a line that grows the buffer and the small ones after it', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  const attempt = new RecordShape('call_attempt', ['call_id', 'tool']);
  const end = new RecordShape('call_end', ['call_id', 'state', 'detail']);
  const log = SessionLog.create({ dir: freshDir(), fsync: false }, 's_test_views');
  // Same lengths every call (the line buffer keeps one view per place and length), different bytes.
  const call = (i, detail) => {
    const id = `c_${String.fromCharCode(97 + (i % 26)).repeat(4)}`;
    log.appendShaped(attempt, [id, `tool${i % 10}`]);
    log.appendShaped(end, [id, i % 2 === 0 ? 'completed' : 'errored', detail], true);
    if (i % 3 !== 0) log.flush();
  };
  for (let i = 0; i < 30; i++) call(i, 'd');
  call(30, 'x'.repeat(200_000)); // past the buffer's size: a new buffer, then back to a small one
  log.flush();
  for (let i = 31; i < 60; i++) call(i, 'd');
  log.seal();
  const lines = readFileSync(log.path, 'utf8').split('\n').slice(0, -1);
  const sha = (text) => createHash('sha256').update(text).digest('hex');
  assert.equal(lines.length, 1 + 60 * 2 + 1);
  for (let i = 1; i < lines.length; i++) assert.equal(JSON.parse(lines[i]).prev, sha(`${lines[i - 1]}\n`), `prev of record ${i}`);
  assert.equal(verifyFile(log.path).status, 'ok');
});

test('a line buffer that grew and shrank back keeps no view of its large buffer alive', { timeout: 30_000 }, async () => {
  const source = `
    const { LineBuffer } = await import(${JSON.stringify(new URL('../../dist/records/line-buffer.js', import.meta.url).href)});
    const lines = new LineBuffer();
    lines.utf8('a small line\\n');
    lines.view(0, lines.length);
    lines.utf8('x'.repeat(300000) + '\\n');
    const large = new WeakRef(lines.bytes.buffer);
    lines.view(0, lines.length);
    lines.keepFrom(lines.length);
    if (lines.bytes.length >= 300000) process.exit(3);
    for (let i = 0; i < 5; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 10)); }
    process.exit(large.deref() === undefined ? 0 : 4);
  `;
  const child = spawn(process.execPath, ['--expose-gc', '--input-type=module', '-e', source], { stdio: ['ignore', 'ignore', 'pipe'] });
  children.add(child);
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const code = await new Promise((resolve) =>
    child.on('exit', (c) => {
      children.delete(child);
      resolve(c);
    }),
  );
  assert.equal(code, 0, `exit ${code} (3: the buffer did not shrink, 4: the large buffer is still reachable) ${stderr}`);
});

test('with --fsync nothing waits: a deferred record is written (and flushed) at once', async () => {
  const { RecordShape } = await import('../../dist/records/chain.js');
  const end = new RecordShape('call_end', ['call_id']);
  const log = SessionLog.create({ dir: freshDir(), fsync: true }, 's_test_defer_fsync');
  log.appendShaped(end, ['c_1'], true);
  log.defer('reject', { reason: 'x' });
  assert.deepEqual(
    readRecords(log.path).map((r) => r.type),
    ['header', 'call_end', 'reject'],
  );
  log.seal();
});

test('append after seal, a second seal, reserved fields and reserved types throw', () => {
  const log = SessionLog.create({ dir: freshDir(), fsync: false });
  assert.throws(() => log.append('x', { seq: 7 }), /may not set 'seq'/);
  assert.throws(() => log.append('x', { hash: 'h' }), /may not set 'hash'/);
  assert.throws(() => log.append('header', {}), /written by SessionLog/);
  assert.throws(() => log.append('x', { bad: NaN }), /NaN/);
  log.seal();
  assert.throws(
    () => log.append('x', {}),
    (error) => error.code === 'ERR_RECORD_CLOSED' && /sealed/.test(error.message),
  );
  assert.throws(() => log.seal(), { code: 'ERR_RECORD_CLOSED' });
  // Nothing that threw was written: the file still verifies.
  assert.equal(verifyFile(log.path).status, 'ok');
});

test('an existing session file or an unsafe session id is refused', () => {
  const dir = freshDir();
  SessionLog.create({ dir, fsync: false }, 's_same');
  assert.throws(
    () => SessionLog.create({ dir, fsync: false }, 's_same'),
    (e) => e.code === 'ERR_RECORD_OPEN' && /EEXIST/.test(e.message),
  );
  for (const id of ['../escape', 'a/b', '.hidden', '', 'x'.repeat(200)]) {
    assert.throws(() => SessionLog.create({ dir, fsync: false }, id), { code: 'ERR_RECORD_OPEN' }, id);
  }
});

test('a write error throws a clear error and poisons the log (EBADF)', () => {
  const log = SessionLog.create({ dir: freshDir(), fsync: false });
  closeSync(log.fd); // the descriptor vanishes under the log
  assert.throws(
    () => log.append('x', { a: 1 }),
    (e) => e.code === 'ERR_RECORD_WRITE' && /EBADF/.test(e.message) && e.message.includes(log.path),
  );
  assert.throws(
    () => log.append('x', { a: 2 }),
    (e) => e.code === 'ERR_RECORD_CLOSED' && /earlier failure/.test(e.message),
  );
  assert.throws(() => log.seal(), { code: 'ERR_RECORD_CLOSED' });
  assert.equal(log.sealed, false);
});

test('a short write (file size limit, like a full disk) throws, and verify then reports the log as torn', { timeout: 20_000 }, async () => {
  const dir = freshDir();
  const source = `
    import { SessionLog } from ${JSON.stringify(STORE_URL)};
    const log = SessionLog.create({ dir: ${JSON.stringify(dir)}, fsync: false });
    try { for (let i = 0; i < 50; i++) log.append('pad', { i, pad: 'y'.repeat(100) }); process.exit(3); }
    catch (e) { console.error(e.code + ' ' + e.message); }
    try { log.append('pad', {}); } catch (e) { console.error(e.code); process.exit(0); }
    process.exit(4);`;
  // SIGXFSZ ignored so the kernel shortens the write instead of killing node.
  const { code, stderr } = await runNode(source, { shell: "trap '' XFSZ; ulimit -f 4" });
  assert.equal(code, 0, stderr);
  assert.match(stderr, /ERR_RECORD_WRITE .*(short write|EFBIG)/);
  assert.match(stderr, /ERR_RECORD_CLOSED/);
  const [result] = verifyDir(dir);
  assert.ok(['torn', 'unsealed'].includes(result.status), JSON.stringify(result));
});

test('20 writer processes sharing one directory: every chain verifies and no record is lost', { timeout: 60_000 }, async () => {
  const dir = freshDir();
  const writers = 20;
  const perWriter = 200;
  const source = (w) => `
    import { SessionLog } from ${JSON.stringify(STORE_URL)};
    const log = SessionLog.create({ dir: ${JSON.stringify(dir)}, fsync: false });
    for (let i = 0; i < ${perWriter}; i++) log.append('call_attempt', { writer: ${w}, i, call_id: 'c_' + ${w} + '_' + i, pad: 'x'.repeat(i % 97) });
    log.seal();`;
  const results = await Promise.all(Array.from({ length: writers }, (_, w) => runNode(source(w))));
  results.forEach((r) => {
    assert.equal(r.code, 0, r.stderr);
  });
  const verdicts = verifyDir(dir);
  assert.equal(verdicts.length, writers);
  for (const verdict of verdicts) assert.deepEqual([verdict.status, verdict.records], ['ok', perWriter + 2], JSON.stringify(verdict));
  const seen = new Set();
  for (const name of readdirSync(dir)) {
    const records = readRecords(join(dir, name)).filter((r) => r.type === 'call_attempt');
    assert.deepEqual(
      records.map((r) => r.i),
      Array.from({ length: perWriter }, (_, i) => i),
    );
    assert.equal(new Set(records.map((r) => r.writer)).size, 1, 'one writer per file');
    seen.add(records[0].writer);
  }
  assert.equal(seen.size, writers);
});

test('files are 0600 and a directory it makes 0700 whatever the umask; an existing loose directory is refused, not tightened', () => {
  const previous = process.umask(0o000);
  try {
    const dir = join(freshDir(), 'nested', 'records');
    const log = SessionLog.create({ dir, fsync: false });
    assert.equal(statSync(dir).mode & 0o777, 0o700);
    assert.equal(statSync(log.path).mode & 0o777, 0o600);
    process.umask(0o277); // would leave the file read-only and the directory without search permission
    const strict = SessionLog.create({ dir: freshDir(), fsync: false });
    strict.append('x', { ok: true });
    assert.equal(statSync(join(strict.path, '..')).mode & 0o777, 0o700);
    assert.equal(statSync(strict.path).mode & 0o777, 0o600);
    process.umask(0o000);
    const loose = freshDir();
    mkdirSync(loose, { mode: 0o777 });
    assert.equal(statSync(loose).mode & 0o777, 0o777);
    assert.throws(
      () => SessionLog.create({ dir: loose, fsync: false }),
      (e) => e.code === 'ERR_RECORD_DIR' && e.message.includes(loose),
    );
    assert.equal(statSync(loose).mode & 0o777, 0o777);
    assert.deepEqual(readdirSync(loose), []);
  } finally {
    process.umask(previous);
  }
});
