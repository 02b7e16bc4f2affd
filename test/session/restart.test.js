// --restart over a raw wire: mcpguard in front of test/fixtures/crashy.py,
// which crashes on purpose and writes down every line each of its
// generations read. What the client sees, what each generation read, and
// what the records say.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { killStarted, runGuard, sessionEnd, tempDir } from '../helpers/run.js';
import { assertAllVerify } from '../helpers/peers.js';
import { CRASHY, clientRequests, openWire, until } from './restart-wire.js';

const TIMEOUT = 90000;
const wires = [];
after(() => {
  for (const wire of wires) wire.cleanup();
  killStarted();
});
function open(args, env) {
  const wire = openWire(args, env);
  wires.push(wire);
  return wire;
}
const ofType = (log, type) => log.records.filter((r) => r.type === type);

describe('--restart options are checked before the server starts', { timeout: TIMEOUT }, () => {
  for (const [args, message] of [
    [['--restart', 'sometimes'], /--restart expects one of never, on-failure, always, got 'sometimes'/],
    [['--max-restarts', '-1'], /--max-restarts expects a whole number from 0 to 1000000, got '-1'/],
    [['--restart-window', '0'], /--restart-window expects milliseconds .* of at least 1, got '0'/],
    [['--restart-delay', '31s'], /--restart-delay expects at most 30000 ms \(the cap of the exponential backoff\), got '31s'/],
    [['--restart-wait', 'soon'], /--restart-wait expects milliseconds .*got 'soon'/],
  ]) {
    test(args.join(' '), async () => {
      const tmp = tempDir();
      try {
        const { code, stderr } = await runGuard([...args, '--', 'python3', CRASHY], { env: { STATE_DIR: tmp.dir } }).done;
        assert.equal(code, 125, stderr);
        assert.match(stderr, message);
        assert.equal(existsSync(join(tmp.dir, 'starts')), false, 'the server never started');
      } finally {
        tmp.cleanup();
      }
    });
  }
});

describe('--restart on-failure', { timeout: TIMEOUT }, () => {
  test('without --restart a crash ends the session as before: one generation, its exit status', async () => {
    const wire = open([]);
    await wire.initialize();
    const crashed = await wire.tool('crash', { code: 3 });
    assert.equal(crashed.error.data.state, 'unknown_after_dispatch');
    const { code, stderr } = await wire.run.done;
    assert.equal(code, 3);
    const end = sessionEnd(stderr);
    assert.equal(end.end_reason, 'child_exit');
    assert.equal('restarts' in end, false, 'no restart fields without --restart');
    assert.deepEqual(wire.starts().length, 1);
  });

  test('calls that arrive while the server is down wait and reach the new generation in arrival order, once', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '800ms']);
    await wire.initialize();
    const crashed = await wire.tool('crash', { code: 3 });
    assert.equal(crashed.error.data.state, 'unknown_after_dispatch');
    assert.match(crashed.error.message, /does not retry/);
    // The server is down now (the crash was answered): these wait for generation 2.
    const waiting = [wire.tool('echo', { text: 'a' }), wire.call('ping', {}), wire.tool('echo', { text: 'b' })];
    const [a, ping, b] = await Promise.all(waiting);
    assert.match(a.result.content[0].text, /^gen 2 .*: a$/);
    assert.deepEqual(ping.result, {});
    assert.match(b.result.content[0].text, /^gen 2 .*: b$/);
    const { code, stderr } = await wire.close();
    assert.equal(code, 0, stderr);

    // Every request has exactly one answer on the wire.
    const answers = wire.messages.filter((m) => m.id !== undefined && !('method' in m));
    assert.deepEqual(
      answers.map((m) => m.id).sort((x, y) => x - y),
      [1, 2, 3, 4, 5],
    );
    // Generation 2 read the replayed handshake first, then the waiting calls in arrival order; nothing was read twice.
    const lines = wire.lines();
    const gen2 = lines.filter((e) => e.gen === 2).map((e) => e.message.method ?? 'response');
    assert.deepEqual(gen2, ['initialize', 'notifications/initialized', 'tools/call', 'ping', 'tools/call']);
    assert.match(lines.find((e) => e.gen === 2).message.id, /^mcpguard-restart-2-1-[0-9a-f]{24}$/);
    assert.deepEqual(clientRequests(lines), [
      [1, 1, 'initialize'],
      [1, 2, 'tools/call'],
      [2, 3, 'tools/call'],
      [2, 4, 'ping'],
      [2, 5, 'tools/call'],
    ]);
    // The replayed initialize's answer is mcpguard's own: the client got exactly one initialize answer.
    assert.equal(wire.messages.filter((m) => m.result?.serverInfo !== undefined).length, 1);
    // Logging was negotiated: the client is told that the server's state is gone.
    const warning = wire.messages.find((m) => m.method === 'notifications/message');
    assert.equal(warning.params.level, 'warning');
    assert.match(warning.params.data, /restarted the MCP server \(now generation 2\).*subscriptions/);

    const end = sessionEnd(stderr);
    assert.deepEqual([end.restarts, end.generations, end.restarts_stopped_by, end.end_reason], [1, 2, null, 'client_eof']);
    // mcpguard's own replay answers never reached the relay as stray lines.
    assert.deepEqual(end.rejected, { client: 0, child: 0 });
    const [log] = await assertAllVerify(wire.records, 1);
    assert.deepEqual(
      ofType(log, 'generation_start').map((r) => r.generation),
      [1, 2],
    );
    const [first, second] = ofType(log, 'generation_end');
    assert.deepEqual([first.generation, first.exit_code, first.status, second.generation, second.next], [1, 3, 3, 2, 'session_end']);
    assert.match(first.next, /^restart in \d+ ms$/);
    assert.ok(first.stderr_bytes_seen > 0);
    assert.match(first.stderr_tail, /generation 1 crashing with 3/);
    const [restart] = ofType(log, 'restart');
    assert.deepEqual([restart.generation, restart.handshake_replayed, restart.client_warned], [2, true, true]);
    const calls = ofType(log, 'call_end').map((r) => [r.request_id, r.state, r.generation]);
    assert.deepEqual(calls, [
      [1, 'completed', 1],
      [2, 'unknown_after_dispatch', 1],
      [3, 'completed', 2],
      [4, 'completed', 2],
      [5, 'completed', 2],
    ]);
  });

  for (const graceful of [false, true]) {
    test(`a server that closes its stdout but runs on is stopped and started again${graceful ? ' (even when it then exits 0)' : ''}; without --restart it ends the session`, async () => {
      const wire = open(['--restart', 'on-failure', '--restart-delay', '0', '--grace', '300ms']);
      await wire.initialize();
      let said = '';
      wire.run.child.stderr.on('data', (chunk) => (said += chunk));
      const hung = await wire.tool('hang_up', { graceful });
      assert.equal(hung.error.data.state, 'unknown_after_dispatch', JSON.stringify(hung));
      const echo = await wire.tool('echo', { text: 'after' });
      assert.match(echo.result.content[0].text, /^gen 2 .*: after$/);
      assert.match(said, /the server closed its stdout while still running \(generation 1, pid \d+\); stopping it to start it again \(--restart\)/);
      assert.match(said, new RegExp(`generation 1, pid \\d+\\) was stopped and exited \\(${graceful ? 'exit code 0' : 'killed by SIGTERM'}\\)`));
      const { code, stderr } = await wire.close();
      assert.equal(code, 0, stderr);
      const end = sessionEnd(stderr);
      assert.deepEqual([end.restarts, end.generations, end.end_reason], [1, 2, 'client_eof']);
      assert.equal(wire.alive().length, 0, 'no generation left running');
      const [log] = await assertAllVerify(wire.records, 1);
      assert.deepEqual(
        ofType(log, 'call_end')
          .filter((r) => r.method === 'tools/call')
          .map((r) => [r.state, r.generation]),
        [
          ['unknown_after_dispatch', 1],
          ['completed', 2],
        ],
      );
    });
  }

  test('requests still queued inside mcpguard when the server crashed (never in its stdin) go to the next generation', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '0']);
    await wire.initialize();
    // The server sleeps without reading, then crashes: 40 calls of 64 KiB fill its stdin and then mcpguard's queue.
    const crashed = wire.tool('crash', { code: 3, after_ms: 1500 });
    const text = 'q'.repeat(64 * 1024);
    const calls = Array.from({ length: 40 }, (_, i) => wire.tool('echo', { text: `${i} ${text}` }));
    const answers = await Promise.all(calls);
    assert.equal((await crashed).error.data.state, 'unknown_after_dispatch');
    const { code, stderr } = await wire.close();
    assert.equal(code, 0, stderr);
    // Calls handed to the dead server's stdin may have been read: answered once, never retried. The one
    // being written when the pipe broke (EPIPE) never got in whole: cancelled_before_dispatch. The rest,
    // still queued inside mcpguard, ran on generation 2.
    const states = answers.map((a) => a.error?.data?.state ?? `gen ${a.result.content[0].text.split(' ')[1]}`);
    const lost = states.filter((st) => st === 'unknown_after_dispatch').length;
    const cut = states.filter((st) => st === 'cancelled_before_dispatch').length;
    const moved = states.filter((st) => st === 'gen 2').length;
    assert.equal(lost + cut + moved, 40, states.join(', '));
    assert.ok(cut <= 1, states.join(', '));
    assert.ok(moved > 0, `some calls were still queued inside mcpguard at the crash: ${states.join(', ')}`);
    assert.deepEqual(
      states,
      [...Array(lost).fill('unknown_after_dispatch'), ...Array(cut).fill('cancelled_before_dispatch'), ...Array(moved).fill('gen 2')],
      'the queued calls are the last ones, in order',
    );
    // Generation 2 read each moved call once, in arrival order; generation 1 read none of them.
    const lines = wire.lines().filter((e) => e.message.method === 'tools/call' && e.message.params.name === 'echo');
    const byGen = (g) => lines.filter((e) => e.gen === g).map((e) => Number(e.message.params.arguments.text.split(' ')[0]));
    assert.deepEqual(byGen(1), []);
    assert.deepEqual(
      byGen(2),
      Array.from({ length: moved }, (_, i) => lost + cut + i),
    );
    const [log] = await assertAllVerify(wire.records, 1);
    const ends = ofType(log, 'call_end').filter((r) => r.tool === 'echo');
    assert.deepEqual(
      ends.filter((r) => r.generation === 2).map((r) => r.state),
      Array(moved).fill('completed'),
    );
  });

  test('without --restart, a server that closes its stdout but runs on ends the session', async () => {
    const wire = open(['--grace', '300ms']);
    await wire.initialize();
    const hung = await wire.tool('hang_up', {});
    assert.match(hung.error.data.state, /_after_dispatch$/);
    const { stderr } = await wire.run.done;
    assert.equal(sessionEnd(stderr).end_reason, 'child_stdout_closed');
    assert.match(stderr, /the server closed its stdout while still running; ending the session/);
    assert.equal(wire.alive().length, 0);
  });

  test('a call that arrives while the crashed generation is still being shut down waits for the next one', async () => {
    // The crash leaves a process in the group that ignores SIGTERM: its shutdown takes the grace period.
    const wire = open(['--restart', 'on-failure', '--restart-delay', '0', '--grace', '2500'], { ORPHAN: 'stubborn' });
    await wire.initialize();
    let said = '';
    wire.run.child.stderr.on('data', (chunk) => (said += chunk));
    const crashed = wire.tool('crash', { code: 3 });
    await until(() => /exited \(exit code 3\) with the client connected/.test(said), 10000, 'the crash seen');
    assert.equal(wire.alive().length, 1, 'generation 1 gone, its orphan left');
    const echo = await wire.tool('echo', { text: 'during shutdown' });
    assert.equal((await crashed).error.data.state, 'unknown_after_dispatch');
    assert.match(echo.result?.content[0].text, /^gen 2 .*during shutdown$/, JSON.stringify(echo));
    await wire.close();
    assert.deepEqual(wire.alive(), [], 'the orphan was killed');
    const [log] = await assertAllVerify(wire.records, 1);
    assert.ok(log.records.find((r) => r.type === 'generation_end').signals_sent.includes('SIGKILL'));
  });

  test('a call that waits longer than --restart-wait is answered and never reaches the server', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '3s', '--restart-wait', '300ms']);
    await wire.initialize();
    await wire.tool('crash', { code: 3 });
    const started = Date.now();
    const answer = await wire.tool('echo', { text: 'too late' });
    assert.equal(answer.error.data.state, 'cancelled_before_dispatch');
    assert.match(answer.error.message, /--restart-wait/);
    assert.ok(Date.now() - started >= 250, 'it waited for the bound');
    // Once generation 2 took the replayed handshake, the next one is dispatched to it.
    await until(() => wire.lines().some((e) => e.gen === 2 && e.message?.method === 'notifications/initialized'), 20000, 'generation 2');
    const later = await wire.tool('echo', { text: 'later' });
    assert.match(later.result.content[0].text, /^gen 2 /);
    await wire.close();
    assert.deepEqual(
      clientRequests(wire.lines()).map(([gen, id]) => [gen, id]),
      [
        [1, 1],
        [1, 2],
        [2, 4],
      ],
    );
  });

  test('a signal crash restarts too; a clean exit does not (on-failure), and does with --restart always', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '0']);
    await wire.initialize();
    const killed = await wire.tool('kill', { signal: 'USR1' });
    assert.equal(killed.error.data.state, 'unknown_after_dispatch');
    assert.match(killed.error.message, /killed by SIGUSR1/);
    assert.match((await wire.tool('echo', { text: 'x' })).result.content[0].text, /^gen 2 /);
    await wire.tool('crash', { code: 0 });
    const { code, stderr } = await wire.run.done;
    assert.equal(code, 0);
    assert.deepEqual([sessionEnd(stderr).end_reason, sessionEnd(stderr).generations], ['child_exit', 2]);

    const always = open(['--restart', 'always', '--restart-delay', '0']);
    await always.initialize();
    await always.tool('crash', { code: 0 });
    assert.match((await always.tool('echo', { text: 'x' })).result.content[0].text, /^gen 2 /);
    const closed = await always.close();
    assert.equal(sessionEnd(closed.stderr).restarts, 1);
  });

  test('a changed tool list: the client gets notifications/tools/list_changed before its next answer', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '0'], { TOOLS_VARY: '1' });
    await wire.initialize();
    const listed = await wire.call('tools/list', {});
    assert.ok(listed.result.tools.some((t) => t.name === 'gen1'));
    await wire.tool('crash', { code: 3 });
    const echo = await wire.tool('echo', { text: 'x' });
    const changed = wire.messages.findIndex((m) => m.method === 'notifications/tools/list_changed');
    assert.ok(changed !== -1, 'list_changed sent');
    assert.ok(changed < wire.messages.indexOf(echo), 'before the next answer');
    const relisted = await wire.call('tools/list', {});
    assert.ok(relisted.result.tools.some((t) => t.name === 'gen2'));
    await wire.close();
    const [log] = await assertAllVerify(wire.records, 1);
    assert.deepEqual(
      ofType(log, 'restart').map((r) => [r.tools_changed, r.list_changed_sent]),
      [[true, true]],
    );
  });

  test('the same tool list: no list_changed', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '0']);
    await wire.initialize();
    await wire.call('tools/list', {});
    await wire.tool('crash', { code: 3 });
    await wire.tool('echo', { text: 'x' });
    await wire.close();
    assert.equal(
      wire.messages.some((m) => m.method === 'notifications/tools/list_changed'),
      false,
    );
    const [log] = await assertAllVerify(wire.records, 1);
    assert.deepEqual(
      ofType(log, 'restart').map((r) => r.tools_changed),
      [false],
    );
  });

  test('a new generation that negotiates another protocol version ends the session with that reason', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '0'], { PROTO_BY_GEN: '2:2025-03-26' });
    await wire.initialize('2025-06-18');
    await wire.tool('crash', { code: 3 });
    const waiting = await wire.tool('echo', { text: 'x' });
    assert.equal(waiting.error.data.state, 'cancelled_before_dispatch');
    const { stderr } = await wire.run.done;
    const end = sessionEnd(stderr);
    assert.equal(end.end_reason, 'restart_incompatible');
    assert.match(end.restarts_stopped_by, /negotiated protocol version "2025-03-26", the session uses "2025-06-18"/);
    assert.match(stderr, /negotiated protocol version "2025-03-26".*ending the session/);
    assert.deepEqual(
      clientRequests(wire.lines()).map(([gen, id]) => [gen, id]),
      [
        [1, 1],
        [1, 2],
      ],
      'the waiting call never reached generation 2',
    );
    await until(() => wire.alive().length === 0, 5000, 'every generation gone');
  });
});

describe('the gate across a restart', { timeout: TIMEOUT }, () => {
  test("a call waiting for mcpguard's own tools/list when the server dies is checked against the new one", async () => {
    // The call names a tool the gate has not seen: mcpguard asks tools/list itself, and generation 1 dies of it.
    const wire = open(['--validate-args=on', '--restart', 'on-failure', '--restart-delay', '0'], { CRASH_ON_LIST_GEN: '1' });
    await wire.initialize();
    const echo = await wire.tool('echo', { text: 'checked' });
    assert.match(echo.result?.content[0].text ?? '', /^gen 2 .*checked$/, JSON.stringify(echo));
    await wire.close();
    const lists = wire
      .lines()
      .filter((e) => e.message?.method === 'tools/list')
      .map((e) => e.gen);
    assert.deepEqual(lists, [1, 2], 'the own tools/list asked again of generation 2');
  });
});

describe('a new generation with another contract', { timeout: TIMEOUT }, () => {
  test('one that drops a capability the first declared ends the session with that reason', async () => {
    const wire = open(['--restart', 'on-failure', '--restart-delay', '0'], { NO_LOGGING_GEN: '2' });
    await wire.initialize();
    await wire.tool('crash', { code: 3 });
    const { stderr } = await wire.run.done;
    const end = sessionEnd(stderr);
    assert.equal(end.end_reason, 'restart_incompatible');
    assert.match(end.restarts_stopped_by, /no longer declares the capabilities logging/);
    await until(() => wire.alive().length === 0, 5000, 'every generation gone');
  });
});

describe('crash loops', { timeout: TIMEOUT }, () => {
  test('stop at --max-restarts with the last exit status, no orphan, and a backoff that grows', async () => {
    const wire = open(['--restart', 'on-failure', '--max-restarts', '3', '--restart-delay', '100ms', '--grace', '500'], { CRASH_ON_START: '7', ORPHAN: '1' });
    // The client stays connected (stdin open): the loop, not the client, ends the session.
    const { code, stderr } = await wire.run.done;
    assert.equal(code, 7, stderr);
    const end = sessionEnd(stderr);
    assert.deepEqual([end.end_reason, end.restarts, end.generations], ['restart_limit', 3, 4]);
    assert.match(end.restarts_stopped_by, /--max-restarts 3 within --restart-window 60000 ms/);
    assert.equal(wire.starts().length, 4);
    assert.deepEqual(wire.alive(), [], 'no generation and no orphan outlived mcpguard');
    const [log] = await assertAllVerify(wire.records, 1);
    const shown = await runGuard(['show', end.session_id, '--record-dir', wire.records]).done;
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout.toString(), /restarts +3 \(4 server generations\); stopped: --max-restarts 3/);
    const ends = ofType(log, 'generation_end');
    const starts = ofType(log, 'generation_start');
    assert.deepEqual(
      ends.map((r) => r.exit_code),
      [7, 7, 7, 7],
    );
    // Each delay lies in its jitter band (half to all of 100 ms × 2^n), and the wait really happened.
    const delays = ends.slice(0, 3).map((r) => r.delay_ms);
    delays.forEach((d, n) => {
      assert.ok(d >= 50 * 2 ** n && d <= 100 * 2 ** n, `delay ${n}: ${d} ms`);
    });
    assert.ok(delays[2] > delays[0], `the backoff grows: ${delays}`);
    for (let n = 0; n < 3; n++) {
      const gap = Date.parse(starts[n + 1].started_at) - Date.parse(ends[n].ended_at);
      assert.ok(gap >= delays[n] - 5, `generation ${n + 2} started ${gap} ms after generation ${n + 1} ended (delay ${delays[n]})`);
    }
  });
});

describe('generations that die or dawdle before they take over', { timeout: TIMEOUT }, () => {
  test("a crash loop before the handshake (the client initialized, then every generation dies at start) ends at --max-restarts with the server's status", async () => {
    // The gate as users get it (--validate-args on): only the --restart options are chosen.
    const wire = open(['--validate-args=on', '--restart', 'on-failure', '--max-restarts', '3', '--restart-delay', '50ms'], { CRASH_ON_START: '7' });
    const init = await wire.initialize();
    // Generation 1 may die before or after its stdin took the initialize: never a result, one answer either way.
    assert.ok(['unknown_after_dispatch', 'cancelled_before_dispatch'].includes(init.error?.data?.state), JSON.stringify(init));
    // The client stays connected: only the loop can end the session.
    const { code, stderr } = await wire.run.done;
    assert.equal(code, 7, stderr);
    const end = sessionEnd(stderr);
    assert.deepEqual([end.end_reason, end.restarts, end.generations], ['restart_limit', 3, 4], stderr);
    assert.equal(wire.starts().length, 4);
    assert.deepEqual(wire.alive(), []);
    const [log] = await assertAllVerify(wire.records, 1);
    assert.deepEqual(
      ofType(log, 'generation_end').map((r) => r.exit_code),
      [7, 7, 7, 7],
    );
  });

  test('a generation that exits on the replayed initialize counts as a crash: every restart is used, none waits out --restart-wait', async () => {
    const wire = open(['--validate-args=on', '--restart', 'on-failure', '--max-restarts', '3', '--restart-delay', '50ms', '--restart-wait', '60000'], {
      CRASH_ON_INIT_GEN: '2,3,4',
    });
    await wire.initialize();
    await wire.tool('crash', { code: 5 });
    const { code, stderr } = await wire.run.done; // within the test's timeout, far below the 60 s wait
    const end = sessionEnd(stderr);
    assert.deepEqual([end.end_reason, end.restarts, end.generations], ['restart_limit', 3, 4], stderr);
    assert.equal(code, 3, "the last generation's status");
    assert.equal(wire.starts().length, 4);
    // Each new generation read mcpguard's replayed initialize and nothing of the client's.
    const inits = wire
      .lines()
      .filter((e) => e.message?.method === 'initialize')
      .map((e) => [e.gen, String(e.message.id).startsWith('mcpguard-restart-')]);
    assert.deepEqual(inits, [
      [1, false],
      [2, true],
      [3, true],
      [4, true],
    ]);
  });

  test("a call to a known tool while the new generation takes 12 s to start waits for it (not refused at the own tools/list's 10 s)", async () => {
    const wire = open(['--validate-args=on', '--restart', 'on-failure', '--restart-delay', '0'], { SLOW_START_GEN: '2:12000' });
    await wire.initialize();
    const listed = await wire.call('tools/list', {});
    assert.ok(listed.result.tools.some((t) => t.name === 'echo'));
    await wire.tool('crash', { code: 3 });
    const echo = await wire.tool('echo', { text: 'waited' });
    assert.match(echo.result?.content[0].text ?? '', /^gen 2 .*waited$/, JSON.stringify(echo));
    const { code } = await wire.close();
    assert.equal(code, 0);
  });

  test('a session that ends restart_incompatible exits with the status of the crash it could not recover from', async () => {
    const wire = open(['--validate-args=on', '--restart', 'on-failure', '--restart-delay', '0'], { PROTO_BY_GEN: '2:2025-03-26' });
    await wire.initialize('2025-06-18');
    await wire.tool('crash', { code: 6 });
    const { code, stderr } = await wire.run.done;
    const end = sessionEnd(stderr);
    assert.equal(end.end_reason, 'restart_incompatible');
    assert.equal(code, 6, stderr);
    assert.equal(end.status, 6);
  });
});
