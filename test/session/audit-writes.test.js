// How the audit log reaches the disk: one write(2) per quick call (its final
// record rides with the next call's write-ahead attempt), and what a SIGKILL
// can then lose (docs/records.md): final records of the last 20 ms, never an
// attempt, and what remains verifies.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, frame, killStarted, runGuard, tempDir } from '../helpers/run.js';

after(killStarted);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const tool = (id, v) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'record', arguments: { v } } });
/** The session's whole records so far (a torn last line left out). */
function recordsSoFar(dir) {
  const [file] = readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
  const text = readFileSync(join(dir, file), 'utf8');
  return text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}
/** write(2)-family system calls the process has made so far (Linux task I/O accounting), or null where there is none. */
function writeCalls(pid) {
  try {
    return Number(/^syscw:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'latin1'))[1]);
  } catch {
    return null;
  }
}

/** mcpguard over recorder.py, its stdin kept open; `call(id)` sends one call and resolves when its answer arrived. */
function openRecorder(dir) {
  const g = runGuard([`--record-dir=${dir}`, '--', 'python3', fixture('recorder.py')], { keepOpen: true, timeout: 60000 });
  let answers = 0;
  const waiting = [];
  g.child.stdout.on('data', (c) => {
    answers += c.toString().split('\n').length - 1;
    while (waiting.length > 0 && waiting[0].n <= answers) waiting.shift().resolve();
  });
  const answered = (n) => new Promise((resolve) => (n <= answers ? resolve() : waiting.push({ n, resolve })));
  let sent = 0;
  return {
    g,
    async call(id) {
      g.child.stdin.write(tool(id, id));
      await answered(++sent);
    },
  };
}

describe('the audit log on the request path', () => {
  test('sequential quick calls cost one write(2) each for their records, not two (the final record rides with the next attempt)', {
    timeout: 60000,
    skip: writeCalls(process.pid) === null ? 'no /proc/PID/io here' : false,
  }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { g, call } = openRecorder(dir);
      for (let id = 1; id <= 20; id++) await call(id);
      const calls = 200;
      const before = writeCalls(g.child.pid);
      for (let id = 21; id < 21 + calls; id++) await call(id);
      const perCall = (writeCalls(g.child.pid) - before) / calls;
      g.child.stdin.end();
      await g.done;
      // Per call mcpguard writes the request to the server and the answer to the client, plus its records: two
      // writes before (attempt, then the final record at the end of its turn), one now. A late flush (20 ms without a
      // next call, e.g. on a loaded machine) adds one now and then; 3.5 sits halfway between the two designs.
      assert.ok(perCall < 3.5, `${perCall.toFixed(2)} write(2)s per call (request, answer, records)`);
      assert.ok(perCall >= 2.9, `fewer writes than a request and an answer per call: ${perCall.toFixed(2)}`);
      const log = recordsSoFar(dir);
      assert.equal(log.filter((r) => r.type === 'call_end').length, 20 + calls);
      const v = await runGuard(['verify', `--record-dir=${dir}`]).done;
      assert.equal(v.code, 0, v.stdout.toString() + v.stderr);
    } finally {
      cleanup();
    }
  });

  test('a SIGKILL right after an answer loses at most final records of the last 20 ms, never an attempt; 20 ms later none', {
    timeout: 60000,
  }, async () => {
    for (const wait of [0, 200]) {
      const { dir, cleanup } = tempDir();
      try {
        const { g, call } = openRecorder(dir);
        for (let id = 1; id <= 30; id++) await call(id);
        const t0 = Date.now();
        if (wait > 0) await sleep(wait);
        g.child.kill('SIGKILL');
        const waited = Date.now() - t0;
        await g.done.catch(() => {});
        const log = recordsSoFar(dir);
        const attempts = log.filter((r) => r.type === 'call_attempt').map((r) => r.request_id);
        const ends = log.filter((r) => r.type === 'call_end').map((r) => r.request_id);
        // Every call reached the server (it answered), so every attempt is on disk.
        assert.deepEqual(
          attempts,
          Array.from({ length: 30 }, (_, i) => i + 1),
        );
        if (waited >= 20 + 5) assert.equal(ends.length, 30, `killed ${waited} ms after the last answer: final records missing`);
        else assert.ok(ends.length >= 29, `only the last call's final record may be missing: ${ends.length} of 30`);
        // The ends that are there are the first ones, in order: nothing was skipped.
        assert.deepEqual(ends, attempts.slice(0, ends.length));
        // What is left verifies: intact but unsealed (2), never tampered (1).
        const v = await runGuard(['verify', `--record-dir=${dir}`]).done;
        assert.equal(v.code, 2, v.stdout.toString() + v.stderr);
        assert.ok(existsSync(dir));
      } finally {
        cleanup();
      }
    }
  });
});
