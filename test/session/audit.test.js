// The audit log as the relay writes it: write-ahead attempts, one final record
// per call whatever ended it, rejections apart from calls, concurrent sessions.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, fixture, frame, killStarted, runGuard, runGuardUngated, sessionEnd, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const records = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .map((f) =>
      readFileSync(join(dir, f), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
    );
/** A session's records while it is being written: whole lines only (a poll may catch a write, or the empty new file). */
const recordsSoFar = (dir) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => {
      const text = readFileSync(join(dir, f), 'utf8');
      return text
        .slice(0, text.lastIndexOf('\n') + 1)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    });
const tool = (id, name, args = {}) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** mcpguard (with `options`) over recorder.py, its stdin kept open; `answered()` counts the lines it has answered so far. */
function openRecorder(dir, options = [], env = {}) {
  const g = runGuard([`--record-dir=${dir}`, ...options, '--', 'python3', fixture('recorder.py')], { keepOpen: true, env });
  let answers = 0;
  g.child.stdout.on('data', (c) => {
    answers += c.toString().split('\n').length - 1;
  });
  return { g, answered: () => answers };
}

/** Final records by request id, asserting each call id has exactly one. */
function finals(log) {
  const ends = log.filter((r) => r.type === 'call_end');
  const perCall = new Map();
  for (const r of ends) perCall.set(r.call_id, (perCall.get(r.call_id) ?? 0) + 1);
  for (const [id, n] of perCall) assert.equal(n, 1, `call ${id} has ${n} final records`);
  for (const r of log.filter((x) => x.type === 'call_attempt')) assert.ok(perCall.has(r.call_id), `attempt ${r.call_id} has no final record`);
  return new Map(ends.map((r) => [JSON.stringify(r.request_id), r]));
}

describe('records written by a session', () => {
  test('the attempt is on disk before the frame reaches the child (write-ahead, --fsync)', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const r = await runGuardUngated([`--record-dir=${dir}`, '--fsync', '--', 'python3', fixture('recorder.py')], {
        env: { AUDIT_DIR: dir },
        input: tool(7, 'audit_seen'),
      }).done;
      assert.equal(messages(r.stdout)[0].result.content[0].text, 'seen');
      const [log] = records(dir);
      const types = log.map((x) => x.type);
      assert.deepEqual(types, ['header', 'session_start', 'child_started', 'call_attempt', 'call_dispatched', 'call_end', 'session_end', 'seal']);
    } finally {
      cleanup();
    }
  });

  test('every call that reached mcpguard has exactly one final record, whatever ended it', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      // Call 6 is cut off by the shutdown, which now starts only after the EOF's wait for answers (--grace): its
      // --call-timeout must lie beyond that wait and the shutdown's first grace, and the slow tool beyond the timeout.
      const { g, answered } = openRecorder(dir, ['--on-invalid=reject', '--call-timeout=2000', '--grace=300'], { SLOW_TOOL_MS: '3000' });
      const send = (s) => g.child.stdin.write(s);
      send(frame({ jsonrpc: '2.0', id: 0, method: 'ping' })); // completed, once the server is up
      while (answered() === 0) await sleep(50);
      send(tool(1, 'record', { v: 1 })); // completed
      send(frame({ jsonrpc: '2.0', id: 2, method: 'no/such' })); // error
      send(frame({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: 'x' })); // rejected (-32602)
      await sleep(300);
      send(tool(4, 'slow')); // timed out after dispatch
      await sleep(2600);
      send(tool(5, 'slow')); // cancelled by the client
      await sleep(200);
      send(frame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } }));
      await sleep(1500);
      send(tool(6, 'slow')); // cut off by the shutdown
      await sleep(200);
      g.child.stdin.end();
      const r = await g.done;
      const [log] = records(dir);
      const byId = finals(log);
      const states = Object.fromEntries([...byId].map(([id, x]) => [id, x.state]));
      assert.equal(byId.get('1').state, 'completed', JSON.stringify(states));
      assert.equal(byId.get('2').state, 'error');
      assert.equal(byId.get('3').state, 'rejected');
      assert.equal(byId.get('4').state, 'timed_out_after_dispatch');
      assert.equal(byId.get('5').state, 'cancelled_after_dispatch', JSON.stringify(states));
      assert.equal(byId.get('6').state, 'cancelled_after_dispatch', JSON.stringify(states));
      assert.deepEqual(byId.get('6').exit_status, { code: null, signal: 'SIGTERM' }, 'the server ignored EOF while busy and was terminated');
      assert.equal(byId.get('0').state, 'completed');
      assert.equal(byId.get('1').exit_status, null, 'no exit observed during a completed call');
      assert.equal(byId.get('1').tool, 'record');
      assert.equal(log.filter((x) => x.type === 'call_attempt' && x.request_id === 3).length, 0, 'a rejected frame never looks like an executed call');
      const rejects = log.filter((x) => x.type === 'reject');
      assert.equal(rejects.length, 1);
      assert.equal(rejects[0].code, -32602);
      assert.match(rejects[0].fingerprint.sha256_16, /^[0-9a-f]{16}$/);
      const end = log.find((x) => x.type === 'session_end');
      assert.equal(end.end_reason, 'client_eof');
      assert.equal(log.at(-1).type, 'seal');
      assert.equal(sessionEnd(r.stderr).session_id, log[0].log_id);
    } finally {
      cleanup();
    }
  });

  test('a crash mid-call: unknown_after_dispatch with the exit status observed', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      await runGuard([`--record-dir=${dir}`, '--', 'python3', fixture('lifecycle.py')], {
        input: frame({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }) + tool(2, 'crash', { code: 9 }),
        keepOpen: true,
      }).done;
      const [log] = records(dir);
      const call = finals(log).get('2');
      assert.equal(call.state, 'unknown_after_dispatch');
      assert.deepEqual(call.exit_status, { code: 9, signal: null });
      assert.deepEqual(call.stream_end, { stdout: 'eof', stderr: 'eof' });
    } finally {
      cleanup();
    }
  });

  test('attempt and final records reach the file while the session runs; a SIGKILL then loses none of them', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { g, answered } = openRecorder(dir);
      g.child.stdin.write(frame({ jsonrpc: '2.0', id: 1, method: 'ping' }) + tool(2, 'record', { v: 1 }));
      while (answered() < 2) await sleep(20);
      // No more input and no session end: only the deferred flush can write the final records now.
      // (A dispatch record is there only for a call that ran more than 20 ms, e.g. one sent while python was starting.)
      const callRecords = () =>
        recordsSoFar(dir)
          .filter((r) => r.type === 'call_attempt' || r.type === 'call_end')
          .map((r) => `${r.type}:${r.call_id === undefined ? '' : 'c'}`);
      const deadline = Date.now() + 5000;
      while (callRecords().length < 4 && Date.now() < deadline) await sleep(20);
      assert.deepEqual(callRecords().sort(), ['call_attempt:c', 'call_attempt:c', 'call_end:c', 'call_end:c']);
      g.child.kill('SIGKILL');
      await g.done;
      const [log] = records(dir);
      assert.deepEqual([...finals(log).keys()].sort(), ['1', '2']);
      // Unsealed (mcpguard was killed) but intact: verify exits 2, not 1.
      const v = await runGuard(['verify', `--record-dir=${dir}`]).done;
      assert.equal(v.code, 2, v.stdout.toString() + v.stderr);
    } finally {
      cleanup();
    }
  });

  test('a call that ends within 20 ms of its dispatch gets no dispatch record; its final record says when and to which server', {
    timeout: 30000,
  }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { g, answered } = openRecorder(dir);
      // One call at a time, each sent once the one before is answered: python answers within a few ms.
      for (let id = 1; id <= 20; id++) {
        g.child.stdin.write(tool(id, 'record', { v: id }));
        while (answered() < id) await sleep(2);
      }
      g.child.stdin.end();
      await g.done;
      const [log] = records(dir);
      const ends = log.filter((r) => r.type === 'call_end');
      assert.equal(ends.length, 20);
      for (const end of ends) {
        assert.equal(typeof end.dispatched_at, 'string', `call_end without dispatched_at: ${JSON.stringify(end)}`);
        assert.equal(end.generation, 1);
      }
      const dispatched = new Map(log.filter((r) => r.type === 'call_dispatched').map((r) => [r.call_id, r]));
      // Each dispatch record there is comes before its call's end and says the same as it.
      for (const [id, r] of dispatched) {
        const end = ends.find((e) => e.call_id === id);
        assert.ok(end.seq > r.seq, `dispatch record after its call's end: ${id}`);
        assert.equal(r.dispatched_at, end.dispatched_at);
        assert.equal(r.generation, end.generation);
      }
      assert.ok(dispatched.size < 20, `every one of 20 quick calls kept a dispatch record (${dispatched.size})`);
      const v = await runGuard(['verify', `--record-dir=${dir}`]).done;
      assert.equal(v.code, 0, v.stdout.toString() + v.stderr);
    } finally {
      cleanup();
    }
  });

  test("a slow call's dispatch record is written while the call is still running", { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      // The tool sleeps far longer than the test waits; --grace=200 ends it quickly afterwards.
      const g = runGuard([`--record-dir=${dir}`, '--grace=200', '--', 'python3', fixture('recorder.py')], {
        keepOpen: true,
        env: { SLOW_TOOL_MS: '60000' },
      });
      g.child.stdin.write(tool(1, 'slow'));
      const types = () => recordsSoFar(dir).map((r) => r.type);
      const deadline = Date.now() + 15000;
      while (!types().includes('call_dispatched') && Date.now() < deadline) await sleep(20);
      const seen = types();
      assert.ok(seen.includes('call_dispatched'), `no dispatch record while the call runs: ${seen}`);
      assert.ok(!seen.includes('call_end'), `the call ended too soon for this test: ${seen}`);
      g.child.stdin.end();
      await g.done;
    } finally {
      cleanup();
    }
  });

  test('rejected frames are recorded by reason and fingerprint, never by content', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const secret = 'sk-live-DO-NOT-LOG-0123456789';
      await runGuard([`--record-dir=${dir}`, '--', 'python3', fixture('recorder.py')], { input: `{"api_key":"${secret}"} trailing\n` }).done;
      const text = readdirSync(dir)
        .map((f) => readFileSync(join(dir, f), 'utf8'))
        .join('');
      assert.ok(!text.includes(secret));
      const [log] = records(dir);
      assert.equal(log.filter((x) => x.type === 'reject').length, 1);
      assert.equal(log.filter((x) => x.type.startsWith('call_')).length, 0);
    } finally {
      cleanup();
    }
  });

  test('20 concurrent sessions in one directory: every chain verifies, no event lost', { timeout: 120000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const runs = [];
      for (let s = 0; s < 20; s++) {
        let input = '';
        for (let i = 1; i <= 10; i++) input += tool(i, 'record', { s, i });
        // A generous grace: under a loaded machine 20 Python start-ups can take seconds, and
        // this test is about concurrent writers, not about the kill path.
        runs.push(runGuardUngated([`--record-dir=${dir}`, '--grace=60000', '--', 'python3', fixture('recorder.py')], { input, timeout: 100000 }).done);
      }
      await Promise.all(runs);
      const logs = records(dir);
      assert.equal(logs.length, 20);
      for (const log of logs) {
        const byId = finals(log);
        assert.equal(byId.size, 10);
        for (const r of byId.values()) assert.equal(r.state, 'completed');
      }
      const v = await runGuard(['verify', `--record-dir=${dir}`]).done;
      assert.equal(v.code, 0, v.stdout.toString());
      assert.match(v.stdout.toString(), /20 logs: 20 ok/);
    } finally {
      cleanup();
    }
  });

  test('with --audit-key-file the chain is an HMAC chain: verify needs the key', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    const keys = tempDir();
    try {
      const key = join(keys.dir, 'audit.key');
      writeFileSync(key, 'k'.repeat(32));
      await runGuard([`--record-dir=${dir}`, `--audit-key-file=${key}`, '--', 'python3', fixture('recorder.py')], { input: tool(1, 'record') }).done;
      assert.equal(records(dir)[0][0].alg, 'hmac-sha256');
      assert.equal((await runGuard(['verify', `--record-dir=${dir}`, `--audit-key-file=${key}`]).done).code, 0);
      assert.notEqual((await runGuard(['verify', `--record-dir=${dir}`]).done).code, 0);
    } finally {
      cleanup();
      keys.cleanup();
    }
  });

  test('a bad record directory or key stops mcpguard before the child starts', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const file = join(dir, 'not-a-dir');
      writeFileSync(file, '');
      const marker = join(dir, 'started');
      const r = await runGuard([`--record-dir=${file}`, '--', 'sh', '-c', `touch ${marker}`]).done;
      assert.equal(r.code, 125);
      assert.match(r.stderr, /not-a-dir/);
      assert.deepEqual(readdirSync(dir), ['not-a-dir'], 'the child never ran');
      const k = await runGuard([`--record-dir=${dir}`, `--audit-key-file=${join(dir, 'missing.key')}`, '--', 'true']).done;
      assert.equal(k.code, 125);
      assert.match(k.stderr, /missing\.key/);
    } finally {
      cleanup();
    }
  });

  test('--records off writes nothing', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      await runGuardUngated([`--record-dir=${dir}`, '--records=off', '--', 'python3', fixture('recorder.py')], { input: tool(1, 'record') }).done;
      assert.deepEqual(readdirSync(dir), []);
    } finally {
      cleanup();
    }
  });

  test('the views read what the relay wrote', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      await runGuardUngated([`--record-dir=${dir}`, '--', 'python3', fixture('recorder.py')], { input: tool(1, 'record') + 'noise\n' }).done;
      const sessions = await runGuard(['sessions', `--record-dir=${dir}`, '--json']).done;
      const [row] = sessions.stdout
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(row.end_reason, 'invalid_client_frame');
      assert.equal(row.sealed, true);
      const activity = await runGuard(['activity', row.session_id, `--record-dir=${dir}`, '--json']).done;
      const rows = activity.stdout
        .toString()
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      const call = rows.find((x) => x.kind === 'call');
      assert.equal(call.state, 'completed');
      assert.equal(call.tool, 'record');
      assert.equal(rows.filter((x) => x.kind === 'reject').length, 1);
      const show = await runGuard(['show', call.call_id, `--record-dir=${dir}`]).done;
      assert.equal(show.code, 0);
      assert.match(show.stdout.toString(), /call_end/);
    } finally {
      cleanup();
    }
  });
});

test('bin is executable', () => assert.ok(BIN.endsWith('mcpguard.js')));
