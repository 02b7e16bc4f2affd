// Lifecycle: one owner for the child. Real processes, real signals, real pipes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, fixture, frame, killStarted, runGuard, runGuardUngated, sessionEnd, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const init = frame({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const tool = (id, name, args = {}) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const alive = (pid) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const pidsIn = (path) => (existsSync(path) ? readFileSync(path, 'utf8').split(/\s+/).filter(Boolean).map(Number) : []);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Wait until `done()` or `ms` pass; returns done(). */
async function eventually(done, ms = 5000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (done()) return true;
    await sleep(50);
  }
  return done();
}

/** Start mcpguard with stdin open; resolves once `n` stdout lines arrived. */
function start(args, env = {}) {
  const run = runGuardUngated(args, { keepOpen: true, env });
  let out = Buffer.alloc(0);
  run.child.stdout.on('data', (c) => {
    out = Buffer.concat([out, c]);
  });
  const lines = (n, ms = 10000) => eventually(() => out.toString().split('\n').length > n, ms);
  return { ...run, lines };
}

describe('shutdown sequence', () => {
  test('a child that ignores SIGTERM is killed at the grace deadline (forced)', { timeout: 30000 }, async () => {
    const grace = 300;
    const g = start([`--grace=${grace}`, '--', 'python3', fixture('lifecycle.py')], { ON_TERM: 'ignore', ON_EOF: 'ignore' });
    g.child.stdin.write(init);
    assert.ok(await g.lines(1));
    const t0 = Date.now();
    g.child.stdin.end();
    const r = await g.done;
    const s = sessionEnd(r.stderr);
    assert.equal(s.end_reason, 'client_eof');
    assert.equal(s.forced_kill, true);
    assert.deepEqual(s.signals_sent, ['SIGTERM', 'SIGKILL']);
    assert.equal(s.signal, 'SIGKILL');
    assert.equal(r.code, 137);
    // grace + grace + generous slack: it terminated, not "fast".
    assert.ok(Date.now() - t0 < grace * 2 + 5000, `took ${Date.now() - t0} ms`);
    assert.ok(s.trigger_to_exit_ms >= grace * 2, `trigger_to_exit_ms ${s.trigger_to_exit_ms}`);
  });

  test('a child that exits 0 on SIGTERM mid-call: the call is cancelled_after_dispatch, never completed', { timeout: 30000 }, async () => {
    const g = start(['--grace=200', '--', 'python3', fixture('lifecycle.py')], { ON_TERM: 'exit0' });
    g.child.stdin.write(init + tool(2, 'hang'));
    assert.ok(await g.lines(1));
    await sleep(200); // let the call reach the child
    g.child.stdin.end();
    const r = await g.done;
    const out = messages(r.stdout);
    const answer = out.find((m) => m.id === 2);
    assert.equal(answer.error.code, -32000);
    assert.equal(answer.error.data.state, 'cancelled_after_dispatch');
    const s = sessionEnd(r.stderr);
    assert.equal(s.exit_code, 0);
    assert.equal(s.forced_kill, false);
    assert.deepEqual(s.signals_sent, ['SIGTERM']);
    assert.equal(r.code, 0);
  });

  test('a child that crashes mid-call leaves the call unknown_after_dispatch and the client gets an error', { timeout: 30000 }, async () => {
    const g = start(['--', 'python3', fixture('lifecycle.py')]);
    g.child.stdin.write(init + tool(2, 'crash', { code: 7 }));
    const r = await g.done;
    const answer = messages(r.stdout).find((m) => m.id === 2);
    assert.equal(answer.error.data.state, 'unknown_after_dispatch');
    assert.match(answer.error.message, /exited \(exit code 7\) before answering/);
    assert.equal(sessionEnd(r.stderr).end_reason, 'child_exit');
    assert.equal(r.code, 7);
  });

  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    test(`${signal} to mcpguard runs the shutdown and is recorded as the cause`, { timeout: 30000 }, async () => {
      const g = start(['--grace=200', '--', 'python3', fixture('lifecycle.py')], { ON_EOF: 'ignore' });
      g.child.stdin.write(init);
      assert.ok(await g.lines(1));
      g.child.kill(signal);
      const r = await g.done;
      const s = sessionEnd(r.stderr);
      assert.equal(s.end_reason, `signal_${signal}`);
      assert.equal(s.signal, 'SIGTERM', 'the child ignored EOF and was terminated by the group SIGTERM');
      assert.equal(r.code, 143);
    });
  }
});

describe('no orphans', () => {
  test("sh -c 'server & wait': the whole tree ends", { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const pidfile = join(dir, 'pids');
      const g = start(['--grace=300', '--', 'sh', '-c', `exec 3<&0; python3 ${fixture('lifecycle.py')} <&3 3<&- & wait`], {
        PIDFILE: pidfile,
        ON_EOF: 'ignore',
      });
      g.child.stdin.write(init + tool(2, 'grandchild'));
      assert.ok(await g.lines(2));
      g.child.stdin.end();
      const r = await g.done;
      const pids = pidsIn(pidfile);
      assert.equal(pids.length, 2);
      assert.ok(await eventually(() => pids.every((p) => !alive(p)), 3000), `still alive: ${pids.filter(alive)}`);
      assert.deepEqual(sessionEnd(r.stderr).survivors, []);
    } finally {
      cleanup();
    }
  });

  test('a grandchild that keeps stderr open and writes every ms after the child exited', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const pidfile = join(dir, 'pids');
      const t0 = Date.now();
      const r = await runGuard(['--grace=300', '--drain-ms=300', '--', 'sh', fixture('stderr-holder.sh')], { env: { PIDFILE: pidfile }, keepOpen: true }).done;
      const s = sessionEnd(r.stderr);
      assert.equal(s.end_reason, 'child_exit');
      assert.ok(Date.now() - t0 < 10000);
      const [grandchild] = pidsIn(pidfile);
      assert.ok(grandchild > 0);
      assert.ok(await eventually(() => !alive(grandchild), 3000), 'grandchild survived');
      assert.deepEqual(s.survivors, []);
      assert.ok(s.stderr_bytes_seen > 0);
    } finally {
      cleanup();
    }
  });

  test('a descendant that called setsid is killed or listed as a survivor', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const pidfile = join(dir, 'pids');
      const g = start(['--grace=300', '--', 'python3', fixture('lifecycle.py')], { PIDFILE: pidfile });
      g.child.stdin.write(init + tool(2, 'setsid'));
      assert.ok(await g.lines(2));
      g.child.stdin.end();
      const r = await g.done;
      const [, escaped] = pidsIn(pidfile);
      assert.ok(escaped > 0);
      const s = sessionEnd(r.stderr);
      const dead = await eventually(() => !alive(escaped), 3000);
      assert.ok(dead || s.survivors.some((p) => p.pid === escaped), 'neither killed nor listed');
      assert.ok(dead, 'on Linux the procfs walk finds and kills it');
    } finally {
      cleanup();
    }
  });

  test('mcpguard SIGKILLed with a call in flight: a few seconds later nothing of the tree is alive', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const pidfile = join(dir, 'pids');
      const g = start(['--grace=500', '--', 'python3', fixture('lifecycle.py')], { PIDFILE: pidfile, ON_TERM: 'ignore', ON_EOF: 'ignore' });
      g.child.stdin.write(init + tool(2, 'grandchild') + tool(3, 'hang'));
      assert.ok(await g.lines(2));
      await sleep(200);
      g.child.kill('SIGKILL');
      await g.done;
      const pids = pidsIn(pidfile);
      assert.equal(pids.length, 2);
      assert.ok(await eventually(() => pids.every((p) => !alive(p)), 6000), `still alive: ${pids.filter(alive)}`);
    } finally {
      cleanup();
    }
  });
});

describe('endings', () => {
  test('the client disconnects while the stdout pipe is full: the session still ends and reports', { timeout: 30000 }, async () => {
    // yes floods stdout with a server→client request-shaped line... use a JSON notification flood.
    const flood = `while :; do echo '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"${'x'.repeat(1000)}"}}'; done`;
    const child = spawn(process.execPath, [BIN, '--grace=200', '--', 'sh', '-c', flood], { stdio: ['pipe', 'pipe', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => {
      err += c;
    });
    child.stdout.pause(); // never read: the pipe fills up
    await sleep(500);
    child.stdout.destroy(); // the client goes away
    const code = await new Promise((resolve) => child.on('close', (c) => resolve(c)));
    const s = sessionEnd(err);
    assert.ok(s, `no session_end on stderr: ${err.slice(-500)}`);
    assert.equal(s.end_reason, 'client_gone');
    assert.equal(code, s.status);
  });

  for (const n of [0, 1, 2, 42, 127, 255]) {
    test(`exit code ${n} propagates`, { timeout: 20000 }, async () => {
      const r = await runGuard(['--', 'sh', '-c', `exit ${n}`]).done;
      assert.equal(r.code, n);
    });
  }

  for (const [sig, num] of [
    ['KILL', 9],
    ['TERM', 15],
    ['SEGV', 11],
  ]) {
    test(`death by SIG${sig} propagates as ${128 + num}`, { timeout: 20000 }, async () => {
      const r = await runGuard(['--', 'sh', '-c', `kill -${sig} $$`]).done;
      assert.equal(r.code, 128 + num);
      assert.equal(sessionEnd(r.stderr).signal, `SIG${sig}`);
    });
  }

  test('a command that does not exist exits 127 with a message', { timeout: 20000 }, async () => {
    const r = await runGuard(['--', 'definitely-not-a-command-xyz']).done;
    assert.equal(r.code, 127);
    assert.match(r.stderr, /cannot start "definitely-not-a-command-xyz": command not found/);
    assert.equal(r.stdout.length, 0);
  });
});

describe('cancellation and deadlines', () => {
  test('--call-timeout never ends a subscriptions/listen (a stream): its notification arrives; a call still times out', { timeout: 30000 }, async () => {
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const g = start(['--call-timeout=300', '--', 'python3', fixture('listen-server.py')], { LISTEN_NOTIFY_MS: '900', SLOW_TOOL_MS: '1500' });
    g.child.stdin.write(
      frame({ jsonrpc: '2.0', id: 5, method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: meta } }) +
        frame({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'slow', _meta: meta } }),
    );
    assert.ok(await g.lines(2), "the timeout of 6 and the listen's notification");
    await sleep(300);
    g.child.stdin.end();
    const r = await g.done;
    const out = messages(r.stdout);
    assert.equal(out.find((m) => m.id === 6).error.code, -32001, 'the call is still bounded');
    const note = out.find((m) => m.method === 'notifications/tools/list_changed');
    assert.equal(note.params._meta['io.modelcontextprotocol/subscriptionId'], 5);
    const five = out.filter((m) => m.id === 5);
    assert.equal(five.length, 1, JSON.stringify(five));
    assert.notEqual(five[0].error?.code, -32001, 'no made-up timeout for the stream');
    assert.equal(five[0].error.data.state, 'stream_ended', 'it ended with the session');
    assert.equal(five[0].error.data.source, 'mcpguard');
  });

  test('a client cancellation is forwarded to the child; the late response is dropped', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const lines = join(dir, 'lines');
      const g = start(['--', 'python3', fixture('recorder.py')], { RECORD_LINES: lines, SLOW_TOOL_MS: '600' });
      g.child.stdin.write(frame({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'slow' } }));
      await sleep(150);
      g.child.stdin.write(frame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'user' } }));
      await sleep(1000);
      g.child.stdin.end();
      const r = await g.done;
      assert.equal(messages(r.stdout).filter((m) => m.id === 2).length, 0, 'the client cancelled: no answer, and the late one is dropped');
      const childLines = readFileSync(lines, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(childLines[1].method, 'notifications/cancelled');
      const s = sessionEnd(r.stderr);
      assert.equal(s.late_responses, 1);
      assert.deepEqual(s.calls, { cancelled_after_dispatch: 1 });
    } finally {
      cleanup();
    }
  });

  test('a request cancelled while queued inside mcpguard never reaches the child', { timeout: 30000 }, async () => {
    // The child stops reading stdin (hang); a big frame fills the pipe, so request 5 waits in mcpguard's queue.
    const g = start(['--grace=200', '--', 'python3', fixture('lifecycle.py')]);
    g.child.stdin.write(init + tool(2, 'hang'));
    assert.ok(await g.lines(1));
    await sleep(200);
    g.child.stdin.write(frame({ jsonrpc: '2.0', id: 3, method: 'ping', params: { pad: 'x'.repeat(1 << 20) } }));
    g.child.stdin.write(tool(5, 'never'));
    await sleep(200);
    g.child.stdin.write(frame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } }));
    await sleep(200);
    g.child.stdin.end();
    const r = await g.done;
    const s = sessionEnd(r.stderr);
    // 5 was withdrawn by the cancellation; 3 was still half-written when the child died (its stdin write failed), so it never got in whole.
    assert.deepEqual(s.calls, { completed: 1, cancelled_before_dispatch: 2, cancelled_after_dispatch: 1 });
    assert.equal(messages(r.stdout).filter((m) => m.id === 5).length, 0);
    assert.match(messages(r.stdout).find((m) => m.id === 3).error.message, /stdin is closed .*not delivered/);
  });

  test('initialize is never cancelled', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const lines = join(dir, 'lines');
      const r = await runGuard(['--', 'python3', fixture('recorder.py')], {
        env: { RECORD_LINES: lines },
        input: init + frame({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }),
      }).done;
      assert.ok(
        readFileSync(lines, 'utf8')
          .trim()
          .split('\n')
          .every((l) => !l.includes('notifications/cancelled')),
      );
      assert.match(r.stderr, /tried to cancel initialize/);
      assert.ok(messages(r.stdout).find((m) => m.id === 1).result);
    } finally {
      cleanup();
    }
  });

  test('--call-timeout: the client gets a timeout error, the child a cancellation, the late answer is dropped', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const lines = join(dir, 'lines');
      // stdin stays open past the deadline: after the client's EOF nothing more can reach the child.
      const g = start(['--call-timeout=200', '--', 'python3', fixture('recorder.py')], { RECORD_LINES: lines, SLOW_TOOL_MS: '800' });
      g.child.stdin.write(frame({ jsonrpc: '2.0', id: 'slow-1', method: 'tools/call', params: { name: 'slow' } }));
      await sleep(1200);
      g.child.stdin.end();
      const r = await g.done;
      const answers = messages(r.stdout).filter((m) => m.id === 'slow-1');
      assert.equal(answers.length, 1);
      assert.equal(answers[0].error.code, -32001);
      assert.equal(answers[0].error.data.state, 'timed_out_after_dispatch');
      const cancel = readFileSync(lines, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
        .find((m) => m.method === 'notifications/cancelled');
      assert.equal(cancel.params.requestId, 'slow-1');
      assert.equal(sessionEnd(r.stderr).late_responses, 1);
    } finally {
      cleanup();
    }
  });

  test('--call-timeout rejects a bad value naming the option and the value', { timeout: 20000 }, async () => {
    const r = await runGuard(['--call-timeout', 'soon', '--', 'true']).done;
    assert.equal(r.code, 125);
    assert.match(r.stderr, /--call-timeout expects milliseconds .*got 'soon'/);
  });
});

describe('a real server that ignores stdin EOF', () => {
  test('mcp-server-everything after toggle-simulated-logging is shut down through the grace path', { timeout: 60000 }, async () => {
    const server = join(process.cwd(), 'node_modules', '.bin', 'mcp-server-everything');
    const g = start(['--grace=500', '--', server, 'stdio']);
    g.child.stdin.write(init + frame({ jsonrpc: '2.0', method: 'notifications/initialized' }) + tool(2, 'toggle-simulated-logging'));
    assert.ok(await g.lines(2, 20000));
    g.child.stdin.end();
    const r = await g.done;
    const s = sessionEnd(r.stderr);
    assert.equal(s.end_reason, 'client_eof');
    assert.ok(s.signals_sent.includes('SIGTERM'), JSON.stringify(s));
    assert.ok(s.trigger_to_exit_ms >= 500);
  });
});

describe('a server that exits at once', () => {
  test('its pipes ended before the session listened: still seen as EOF, not cut after --drain-ms', { timeout: 30000 }, async () => {
    const r = await runGuard(['--drain-ms=5000', '--', 'true'], { timeout: 30000 }).done;
    const s = sessionEnd(r.stderr);
    assert.equal(s.end_reason, 'child_exit');
    assert.deepEqual(s.stream_end, { stdout: 'eof', stderr: 'eof' }, 'before the fix both were cut_after_drain_timeout and mcpguard waited out --drain-ms');
    assert.equal(r.code, 0);
  });
});
