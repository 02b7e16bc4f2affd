// Signals to mcpguard itself, through the real binary: SIGQUIT ends a session
// through the shutdown like SIGTERM (every request answered, the log sealed);
// SIGUSR1 opens no inspector and SIGUSR2 kills nothing: the session goes on.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { BIN, fixture, frame, killStarted, runCommand, runGuard, sessionEnd, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const ping = (id) => frame({ jsonrpc: '2.0', id, method: 'ping' });

/** Records of the one session in `dir` written so far (whole lines only). */
function records(dir) {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) => {
      const text = readFileSync(join(dir, f), 'utf8');
      return text
        .slice(0, text.lastIndexOf('\n') + 1)
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    });
}

async function until(done, what, ms = 10000) {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** Collects a running mcpguard's stdout messages as they arrive. */
function collect(g) {
  const seen = { out: Buffer.alloc(0), err: '' };
  g.child.stdout.on('data', (c) => {
    seen.out = Buffer.concat([seen.out, c]);
  });
  g.child.stderr.on('data', (c) => {
    seen.err += c;
  });
  return seen;
}

/** true if something accepts connections on 127.0.0.1:9229 (Node's inspector port). */
function inspectorPortOpen() {
  return new Promise((resolve) => {
    const socket = connect(9229, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The pids of `pid`'s children (Linux: /proc). */
function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

describe('SIGQUIT', () => {
  test('mid-session with a request in flight: answered, the session ends through the shutdown, the log is sealed', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const g = runGuard([`--record-dir=${dir}`, '--grace=300', '--', 'python3', fixture('lifecycle.py')], { keepOpen: true });
      const seen = collect(g);
      g.child.stdin.write(frame({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }));
      await until(() => messages(seen.out).length === 1, 'the initialize answer');
      g.child.stdin.write(frame({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'hang', arguments: {} } }));
      await until(() => records(dir).some((r) => r.type === 'call_dispatched'), 'the hanging call to be dispatched');
      g.child.kill('SIGQUIT');
      const r = await g.done;
      assert.equal(r.signal, null, `mcpguard died of ${r.signal}`);
      const answers = messages(r.stdout);
      assert.equal(answers.length, 2, r.stdout.toString());
      assert.equal(answers[1].id, 2);
      assert.match(answers[1].error.message, /the session ended \(signal_SIGQUIT\) before the server answered/);
      const end = sessionEnd(r.stderr);
      assert.equal(end.end_reason, 'signal_SIGQUIT');
      assert.deepEqual(end.signals_sent, ['SIGTERM'], 'the hanging server went through the grace path');
      const log = records(dir);
      assert.equal(log.at(-1).type, 'seal');
      const v = await runGuard(['verify', `--record-dir=${dir}`]).done;
      assert.equal(v.code, 0, v.stdout.toString() + v.stderr);
    } finally {
      cleanup();
    }
  });

  test('check: SIGQUIT interrupts the run like SIGTERM (reported, server stopped)', { timeout: 30000 }, async () => {
    const g = runGuard(['check', '--grace=200', '--', 'sleep', '30'], { keepOpen: true });
    const seen = collect(g);
    await until(() => childrenOf(g.child.pid).length > 0, 'the server to start');
    g.child.kill('SIGQUIT');
    const r = await g.done;
    assert.equal(r.signal, null, `mcpguard check died of ${r.signal}`);
    assert.equal(r.code, 2);
    assert.match(seen.err, /mcpguard check: interrupted by SIGQUIT/);
  });
});

describe('SIGUSR1 and SIGUSR2', () => {
  test('SIGUSR1 opens no inspector on 127.0.0.1:9229; SIGUSR2 kills nothing; the session goes on', { timeout: 30000 }, async () => {
    const portWasFree = !(await inspectorPortOpen());
    const g = runGuard(['--', 'python3', fixture('stdlib_server.py')], { keepOpen: true });
    const seen = collect(g);
    g.child.stdin.write(ping(1));
    // An answer means mcpguard's own code runs: its listeners are in place.
    await until(() => messages(seen.out).length === 1, 'the first answer');
    g.child.kill('SIGUSR1');
    g.child.kill('SIGUSR2');
    await until(() => /ignored SIGUSR1/.test(seen.err) && /ignored SIGUSR2/.test(seen.err), 'the notices');
    await sleep(300);
    if (portWasFree) assert.equal(await inspectorPortOpen(), false, 'something listens on 127.0.0.1:9229');
    g.child.kill('SIGUSR1'); // reported once only
    g.child.stdin.write(ping(2));
    await until(() => messages(seen.out).length === 2, 'the second answer');
    g.child.stdin.end();
    const r = await g.done;
    assert.equal(r.signal, null);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      messages(r.stdout).map((m) => m.id),
      [1, 2],
    );
    assert.doesNotMatch(r.stderr, /Debugger listening|Starting inspector/);
    assert.equal(r.stderr.match(/mcpguard: ignored SIGUSR1: mcpguard does not open a debugger\n/g).length, 1);
    assert.equal(r.stderr.match(/mcpguard: ignored SIGUSR2\n/g).length, 1);
    assert.equal(sessionEnd(r.stderr).end_reason, 'client_eof');
  });

  test('an inspector opened by a SIGUSR1 before mcpguard runs is closed as soon as it does', { timeout: 30000 }, async (t) => {
    // With the port taken, Node cannot open the inspector at all: nothing to observe.
    if (await inspectorPortOpen()) return t.skip('127.0.0.1:9229 is in use by another process');
    // The preload sends the signal while Node is starting, before bin/mcpguard.js runs.
    const preload = 'data:text/javascript,process.kill(process.pid,"SIGUSR1")';
    const g = runCommand(process.execPath, ['--import', preload, BIN, '--', 'python3', fixture('stdlib_server.py')], { keepOpen: true });
    const seen = collect(g);
    g.child.stdin.write(ping(1));
    await until(() => messages(seen.out).length === 1, 'the first answer');
    await until(() => /closed the Node inspector/.test(seen.err), 'the inspector to be closed');
    assert.equal(await inspectorPortOpen(), false, 'something listens on 127.0.0.1:9229');
    g.child.stdin.end();
    const r = await g.done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /mcpguard: closed the Node inspector that a SIGUSR1 during start-up had opened\n/);
  });

  test('check: SIGUSR1 is ignored and reported, the run goes on to its end', { timeout: 30000 }, async () => {
    const g = runGuard(['check', '--grace=200', '--', 'sleep', '30'], { keepOpen: true });
    const seen = collect(g);
    await until(() => childrenOf(g.child.pid).length > 0, 'the server to start');
    g.child.kill('SIGUSR1');
    g.child.kill('SIGUSR2');
    await until(() => /ignored SIGUSR1/.test(seen.err) && /ignored SIGUSR2/.test(seen.err), 'the notices');
    assert.equal(g.child.exitCode, null, 'check is still running');
    g.child.kill('SIGTERM');
    const r = await g.done;
    assert.equal(r.code, 2);
    assert.match(r.stderr, /interrupted by SIGTERM/);
    assert.doesNotMatch(r.stderr, /Debugger listening|Starting inspector/);
  });
});
