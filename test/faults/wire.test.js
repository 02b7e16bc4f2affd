// Fault injection on the wire: a client that stops reading, ids reused across
// the session's close, a server that closes one of its pipes and stays alive,
// and ids that must come back exactly as the client wrote them. Real binary,
// real Python children, real pipes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, frame, killStarted, readLines, runGuard, runGuardUngated, sessionEnd, tempDir } from '../helpers/run.js';

after(killStarted);

const init = frame({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const tool = (id, name, args = {}) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const parseLines = (buf) =>
  buf
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

async function eventually(done, ms = 10000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (done()) return true;
    await sleep(25);
  }
  return done();
}

/** Peak RSS (VmHWM) of a live process in MiB, or null once it is gone. */
function peakMiB(pid) {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** mcpguard with stdin open and stdout collected as it comes (or not read at all with `paused`). */
function start(args, { env = {}, paused = false, timeout = 20000 } = {}) {
  const run = runGuardUngated(args, { keepOpen: true, env, timeout });
  const chunks = [];
  run.child.stdout.on('data', (c) => chunks.push(c));
  if (paused) run.child.stdout.pause();
  const out = () => Buffer.concat(chunks);
  const lines = (n, ms) => eventually(() => out().toString().split('\n').length > n, ms);
  return { ...run, out, lines };
}

describe('a client that stops reading', () => {
  test('answers mcpguard writes itself do not pile up: it stops reading the client, and keeps every answer', { timeout: 120000 }, async () => {
    const N = 100000; // 300 KB of input; at 1 KiB per queued answer (ENTRY_COST) plus its bytes, mcpguard pauses after about 15,000
    const g = start(['--on-invalid=reject', '--records=off', '--', 'python3', fixture('lifecycle.py')], { paused: true, timeout: 110000 });
    // The test's side queues what mcpguard does not read (600 KB): mcpguard stops reading once its answers back up.
    g.child.stdin.write('{}\n'.repeat(N));
    await sleep(1500);
    let peak = peakMiB(g.child.pid);
    assert.ok(g.child.stdin.writableLength > 0, 'mcpguard stopped reading the client while its answers waited');
    // Reading resumes: every rejection comes out, each exactly once, none dropped.
    g.child.stdout.resume();
    assert.ok(await g.lines(N, 90000), `only ${g.out().toString().split('\n').length - 1} of ${N} answers arrived`);
    peak = Math.max(peak ?? 0, peakMiB(g.child.pid) ?? 0);
    g.child.stdin.end();
    const r = await g.done;
    const answers = parseLines(r.stdout);
    assert.equal(answers.length, N);
    assert.ok(answers.every((m) => m.id === null && m.error.code === -32600));
    assert.equal(sessionEnd(r.stderr).output_dropped_frames, 0);
    // Unbounded, the queued answers grow with the input (about 2 KiB each); bounded, mcpguard stays near its resting size.
    assert.ok(peak < 150, `peak RSS ${peak} MiB`);
  });
});

describe('one id, one answer', () => {
  test('a request that reuses an in-flight id after the session closed is not answered a second time', { timeout: 30000 }, async () => {
    const g = start(['--grace=300', '--', 'python3', fixture('lifecycle.py')]);
    g.child.stdin.write(init + tool(7, 'hang'));
    assert.ok(await g.lines(1));
    await sleep(200);
    // An invalid line closes the session (default --on-invalid close); then id 7 again, and a fresh id 8.
    g.child.stdin.write('{}\n' + frame({ jsonrpc: '2.0', id: 7, method: 'ping' }) + frame({ jsonrpc: '2.0', id: 8, method: 'ping' }));
    await sleep(100);
    g.child.stdin.end();
    const r = await g.done;
    const out = parseLines(r.stdout);
    const seven = out.filter((m) => m.id === 7);
    assert.equal(seven.length, 1, JSON.stringify(seven));
    assert.equal(seven[0].error.data.state, 'cancelled_after_dispatch', "the one answer is the hang call's own ending");
    assert.equal(out.filter((m) => m.id === 8).length, 1);
    assert.match(r.stderr, /request id 7 arrived after the session closed while a request with that id is in flight/);
  });

  test('a batch after the session closed: each request in it is refused once', { timeout: 30000 }, async () => {
    const batch = `[${frame({ jsonrpc: '2.0', id: 20, method: 'ping' }).trimEnd()},${frame({ jsonrpc: '2.0', id: 21, method: 'ping' }).trimEnd()}]\n`;
    const r = await runGuard(['--allow-batch', '--', 'python3', fixture('lifecycle.py')], { input: init + '{}\n' + batch }).done;
    const out = parseLines(r.stdout);
    for (const id of [20, 21]) {
      const answers = out.filter((m) => m.id === id);
      assert.equal(answers.length, 1, `id ${id}: ${JSON.stringify(out)}`);
      assert.equal(answers[0].error.data.state, 'rejected');
    }
  });
});

describe('a server that closes one of its pipes and stays alive', () => {
  test('closed stdin: requests it cannot receive are answered at once as never delivered, and the session ends', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const g = start(['--grace=300', `--record-dir=${dir}`, '--', 'python3', fixture('half-closed.py')], { env: { CLOSE: 'stdin' } });
      g.child.stdin.write(init);
      assert.ok(await g.lines(1));
      await sleep(300); // the server has closed its stdin by now
      const sent = Date.now();
      g.child.stdin.write(tool(2, 'a') + tool(3, 'b'));
      assert.ok(await g.lines(3, 5000), 'both requests were answered');
      const answeredIn = Date.now() - sent;
      const r = await g.done; // the session ends on its own: the client never closed stdin
      const out = parseLines(r.stdout);
      for (const id of [2, 3]) {
        const m = out.find((x) => x.id === id);
        assert.equal(m.error.data.state, 'cancelled_before_dispatch');
        assert.match(m.error.message, /the server's stdin is closed \(EPIPE\); not delivered/);
      }
      // Answered by the failed write, not by the shutdown (which would take the grace and more).
      assert.ok(answeredIn < 3000, `answered after ${answeredIn} ms`);
      const s = sessionEnd(r.stderr);
      assert.equal(s.end_reason, 'child_stdin_closed');
      assert.deepEqual(s.calls, { completed: 1, cancelled_before_dispatch: 2 });
      assert.equal((r.stderr.match(/the server closed its stdin/g) ?? []).length, 1, r.stderr);
      const file = readLines(join(dir, `${s.session_id}.jsonl`)).map((l) => JSON.parse(l));
      const ends = file.filter((x) => x.type === 'call_end' && x.method === 'tools/call');
      assert.deepEqual(
        ends.map((x) => [x.request_id, x.state, x.dispatched_at]),
        [
          [2, 'cancelled_before_dispatch', null],
          [3, 'cancelled_before_dispatch', null],
        ],
      );
    } finally {
      cleanup();
    }
  });

  test('closed stdout: the session ends (its answers can no longer arrive) and the call in flight is answered once', { timeout: 30000 }, async () => {
    const g = start(['--grace=300', '--', 'python3', fixture('half-closed.py')], { env: { CLOSE: 'stdout' } });
    g.child.stdin.write(init);
    assert.ok(await g.lines(1));
    g.child.stdin.write(tool(2, 'a'));
    const r = await g.done; // ends on its own
    const out = parseLines(r.stdout);
    assert.equal(out.filter((m) => m.id === 2).length, 1);
    const s = sessionEnd(r.stderr);
    assert.equal(s.end_reason, 'child_stdout_closed');
    assert.match(r.stderr, /mcpguard: the server closed its stdout while still running; ending the session/);
  });

  test('a server that crashes is still a crash, not a closed pipe', { timeout: 30000 }, async () => {
    const g = start(['--', 'python3', fixture('lifecycle.py')]);
    g.child.stdin.write(init + tool(2, 'crash', { code: 3 }));
    const r = await g.done; // the crash ends it: the client never closed stdin
    const s = sessionEnd(r.stderr);
    assert.equal(s.end_reason, 'child_exit');
    assert.equal(r.code, 3);
    assert.equal(parseLines(r.stdout).find((m) => m.id === 2).error.data.state, 'unknown_after_dispatch');
    assert.doesNotMatch(r.stderr, /closed its std(in|out)/);
  });
});

describe('ids come back as the client wrote them', () => {
  test('an oversize line whose id is in its first bytes is answered with that id', { timeout: 30000 }, async () => {
    const big = `{"jsonrpc":"2.0","id":"req-42","method":"tools/call","params":{"name":"x","arguments":{"pad":"${'a'.repeat(5000)}"}}}\n`;
    const r = await runGuard(['--max-frame-bytes=1000', '--on-invalid=reject', '--', 'python3', fixture('lifecycle.py')], { input: big }).done;
    const [answer] = parseLines(r.stdout);
    assert.equal(answer.id, 'req-42');
    assert.match(answer.error.message, /exceeds --max-frame-bytes 1000/);
  });

  test('an integer id beyond 2^53 is refused with its own digits, unrounded', { timeout: 30000 }, async () => {
    const r = await runGuard(['--on-invalid=reject', '--', 'python3', fixture('lifecycle.py')], {
      input: '{"jsonrpc":"2.0","id":12345678901234567890,"method":"ping"}\n',
    }).done;
    const text = r.stdout.toString();
    assert.match(text, /^\{"jsonrpc":"2\.0","id":12345678901234567890,"error":\{"code":-32600,/);
  });

  test('an id written with escapes is answered with the same bytes (a timeout answer, and a cancellation to the server)', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const lines = join(dir, 'lines');
      const g = start(['--call-timeout=300', '--', 'python3', fixture('recorder.py')], { env: { RECORD_LINES: lines, SLOW_TOOL_MS: '1000' } });
      g.child.stdin.write('{"jsonrpc":"2.0","id":"\\u0061b\\/c","method":"tools/call","params":{"name":"slow"}}\n');
      assert.ok(await g.lines(1));
      await sleep(1200); // the server reads the cancellation once its slow call is over
      g.child.stdin.end();
      const r = await g.done;
      assert.match(r.stdout.toString(), /^\{"jsonrpc":"2\.0","id":"\\u0061b\\\/c","error":\{"code":-32001,/);
      const cancel = readFileSync(lines, 'utf8')
        .split('\n')
        .find((l) => l.includes('notifications/cancelled'));
      assert.match(cancel, /"requestId":"\\u0061b\\\/c"/);
    } finally {
      cleanup();
    }
  });
});

describe('a server that stops reading its stdin', () => {
  test("10,000 requests queued, then the client's EOF: the session ends, each request is answered once, the log is sealed", { timeout: 90000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const N = 10000; // ~400 KB: far more than the server's pipe and mcpguard's queue (16 MiB at 16 KiB a frame) hold
      // The user's defaults (--validate-args on): the call to hang waits for mcpguard's own tools/list first.
      const g = start(['--validate-args=on', '--grace=300', `--record-dir=${dir}`, '--', 'python3', fixture('lifecycle.py')], { timeout: 80000 });
      g.child.stdin.write(init + tool(2, 'hang')); // the server answers initialize and tools/list, then never reads again
      assert.ok(await g.lines(1));
      await sleep(300);
      let pings = '';
      for (let id = 3; id < N; id++) pings += frame({ jsonrpc: '2.0', id, method: 'ping' });
      g.child.stdin.end(pings);
      const r = await g.done;
      const answers = parseLines(r.stdout);
      const ids = answers.map((m) => m.id).sort((a, b) => a - b);
      assert.equal(ids.length, N - 1, 'one answer per request');
      assert.deepEqual(
        ids,
        Array.from({ length: N - 1 }, (_, i) => i + 1),
      );
      const s = sessionEnd(r.stderr);
      assert.equal(s.end_reason, 'client_eof');
      // The ones mcpguard could not queue were refused as it read them; the queued ones when the server was stopped.
      const refused = answers.filter((m) =>
        /took nothing from its stdin for \d+ ms with mcpguard's queue to it full; not delivered/.test(m.error?.message ?? ''),
      );
      assert.ok(refused.length > 0, 'some requests were refused while the server did not read');
      assert.ok(refused.every((m) => m.error.data.state === 'cancelled_before_dispatch'));
      assert.equal(
        (r.stderr.match(/took nothing from its stdin for \d+ ms with mcpguard's queue to it full; reading the client again/g) ?? []).length,
        1,
        r.stderr,
      );
      const verify = await runGuard(['verify', `--record-dir=${dir}`], { timeout: 30000 }).done;
      assert.equal(verify.code, 0, verify.stdout.toString() + verify.stderr);
      const file = readLines(join(dir, `${s.session_id}.jsonl`)).map((l) => JSON.parse(l));
      assert.deepEqual(
        file.slice(-2).map((x) => x.type),
        ['session_end', 'seal'],
      );
      const hang = file.find((x) => x.type === 'call_end' && x.request_id === 2);
      assert.notEqual(hang.dispatched_at, null, `the gate passed hang to the server, which read it and stopped: ${JSON.stringify(hang)}`);
    } finally {
      cleanup();
    }
  });
});

describe('a server that stops reading its stdin, then reads again', () => {
  test('the requests refused meanwhile are answered once; once it reads, backpressure is back and nothing more is refused', { timeout: 90000 }, async () => {
    const N = 8000;
    // --grace bounds the EOF's wait for answers: long enough that the second burst, queued when the EOF comes, drains on a busy machine.
    const g = start(['--grace=10000', '--records=off', '--', 'python3', fixture('lifecycle.py')], { timeout: 80000 });
    g.child.stdin.write(init + tool(2, 'pause', { ms: 7000 })); // past mcpguard's 5 s stall clock
    assert.ok(await g.lines(1));
    let first = '';
    for (let id = 3; id < N; id++) first += frame({ jsonrpc: '2.0', id, method: 'ping' });
    g.child.stdin.write(first);
    assert.ok(await g.lines(N - 1, 60000), 'every request of the first burst answered');
    // The server reads again: a second burst, as large, goes through backpressure alone.
    let second = '';
    for (let id = N; id < 2 * N; id++) second += frame({ jsonrpc: '2.0', id, method: 'ping' });
    g.child.stdin.end(second);
    const r = await g.done;
    const answers = parseLines(r.stdout);
    const byId = new Map();
    for (const m of answers) byId.set(m.id, (byId.get(m.id) ?? 0) + 1);
    assert.equal(byId.size, 2 * N - 1);
    assert.ok(
      [...byId.values()].every((n) => n === 1),
      'one answer per request',
    );
    const refused = answers.filter((m) => m.error?.data?.state === 'cancelled_before_dispatch');
    assert.ok(refused.length > 0, 'some of the first burst were refused while the server did not read');
    assert.ok(
      refused.every((m) => m.id < N),
      'none of the second burst was refused',
    );
    assert.ok(answers.filter((m) => m.id >= N).every((m) => m.result !== undefined));
  });
});
