// Fault family: the child's process tree. A server that forks, calls setsid,
// forks again and lets the middle process exit leaves a daemon re-parented to
// init, which no walk of the tree can find; the session marker
// (MCPGUARD_SESSION_ID in the child's environment) finds it. Real mcpguard,
// real processes (test/fixtures/daemon.py).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fixture, frame, killStarted, readLines, runGuard, sessionEnd, tempDir } from '../helpers/run.js';

const linux = process.platform === 'linux';
const DAEMON = fixture('daemon.py');
const init = frame({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});

const dirs = [];
const cleanups = [];
const sessionIds = [];
after(() => {
  killStarted();
  // The daemons (by the pids they wrote, if still theirs) and any watchdog still sleeping.
  for (const dir of dirs) {
    const pid = readPid(join(dir, 'daemon.pid'));
    if (pid !== null && alive(pid) && cmdline(pid).includes('daemon.py')) kill(pid);
  }
  for (const id of sessionIds) for (const pid of pidsWhoseCmdlineHas(id)) kill(pid);
  for (const cleanup of cleanups) cleanup();
});

function workDir() {
  const { dir, cleanup } = tempDir('mcpguard-tree-');
  dirs.push(dir);
  cleanups.push(cleanup);
  return dir;
}

const kill = (pid) => {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {}
};
const readPid = (path) => (existsSync(path) ? Number(readFileSync(path, 'utf8')) : null);
const cmdline = (pid) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'latin1');
  } catch {
    return '';
  }
};

/** The state letter of /proc/PID/stat (R, S, T, Z, ...), or null if the process is gone. */
function state(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2)[0];
  } catch {
    return null;
  }
}

/** Alive and not a zombie (this machine's init may never reap the orphans). */
const alive = (pid) => state(pid) !== null && state(pid) !== 'Z';

async function eventually(done, ms) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (done()) return true;
    await sleep(25);
  }
  return done();
}

/** Pids whose environment holds MCPGUARD_SESSION_ID=<id>, read independently of mcpguard. */
function pidsMarkedWith(id) {
  const entry = `MCPGUARD_SESSION_ID=${id}`;
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/environ`, 'latin1').split('\0').includes(entry)) found.push(Number(name));
    } catch {}
  }
  return found.sort((a, b) => a - b);
}

function pidsWhoseCmdlineHas(text) {
  return readdirSync('/proc')
    .filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid && cmdline(n).includes(text))
    .map(Number);
}

/**
 * mcpguard over daemon.py in `mode`, with stdin held open until the server has
 * answered initialize (it answers only once its daemon is set up).
 */
async function guardWithDaemon(mode, options) {
  const dir = workDir();
  const g = runGuard([...options, '--', 'python3', DAEMON, dir, mode], { keepOpen: true, timeout: 25000 });
  let out = '';
  g.child.stdout.on('data', (chunk) => {
    out += chunk;
  });
  g.child.stdin.write(init);
  assert.ok(await eventually(() => out.includes('"id": 1'), 15000), 'no initialize answer');
  const sessionId = readFileSync(join(dir, 'env'), 'utf8');
  sessionIds.push(sessionId);
  return { dir, g, sessionId, daemon: readPid(join(dir, 'daemon.pid')), server: readPid(join(dir, 'server.pid')) };
}

describe('a double-forked daemon', { skip: !linux && 'needs /proc' }, () => {
  test('is found by the session marker, stopped by SIGTERM, and named as found by the marker', { timeout: 30000 }, async () => {
    const { g, daemon } = await guardWithDaemon('plain', ['--grace=2000', '--records=off']);
    assert.ok(daemon > 0 && alive(daemon), 'the daemon is running');
    await sleep(3500); // as in the report: the periodic /proc samples cannot see it either
    g.child.stdin.end();
    const r = await g.done;
    const s = sessionEnd(r.stderr);
    assert.equal(s.end_reason, 'client_eof');
    assert.ok(await eventually(() => !alive(daemon), 3000), `daemon ${daemon} survived`);
    assert.deepEqual(
      s.found_by_marker.map((p) => p.pid),
      [daemon],
    );
    assert.deepEqual(s.survivors, []);
    assert.equal(s.forced_kill, false, 'SIGTERM was enough');
  });

  test('that ignores SIGTERM is SIGKILLed', { timeout: 30000 }, async () => {
    const { g, daemon } = await guardWithDaemon('stubborn', ['--grace=500', '--records=off']);
    g.child.stdin.end();
    const r = await g.done;
    const s = sessionEnd(r.stderr);
    assert.ok(await eventually(() => !alive(daemon), 3000), `daemon ${daemon} survived`);
    assert.deepEqual(
      s.found_by_marker.map((p) => p.pid),
      [daemon],
    );
    assert.equal(s.forced_kill, true);
    assert.deepEqual(s.survivors, []);
  });

  test('that stopped itself is continued, so SIGTERM is enough', { timeout: 30000 }, async () => {
    const { g, daemon } = await guardWithDaemon('stopped', ['--grace=500', '--records=off']);
    assert.ok(await eventually(() => state(daemon) === 'T', 3000), 'the daemon stopped itself');
    g.child.stdin.end();
    const s = sessionEnd((await g.done).stderr);
    assert.ok(await eventually(() => !alive(daemon), 3000), `daemon ${daemon} survived`);
    assert.deepEqual(
      s.found_by_marker.map((p) => p.pid),
      [daemon],
    );
    assert.equal(s.forced_kill, false, 'SIGTERM and SIGCONT were enough');
  });

  test('that re-executes itself with an empty environment escapes, and the summary does not claim it', { timeout: 30000 }, async () => {
    const { g, daemon } = await guardWithDaemon('clean-env', ['--grace=500', '--records=off']);
    g.child.stdin.end();
    const r = await g.done;
    const s = sessionEnd(r.stderr);
    // The documented gap: it is still running (the after hook kills it), and nothing says it was found.
    await sleep(300);
    assert.ok(alive(daemon), 'the daemon with a cleared environment is expected to escape');
    assert.deepEqual(s.found_by_marker, [], 'the sweep ran and found nothing');
    assert.ok(!s.survivors.some((p) => p.pid === daemon));
    kill(daemon);
  });

  test('dies when mcpguard is SIGKILLed: the watchdog signals marked processes (TERM at once)', { timeout: 30000 }, async () => {
    // A grace of 20 s: the watchdog's SIGKILL round is far away, so only its SIGTERM round can end the daemon in time.
    const { g, daemon } = await guardWithDaemon('plain', ['--grace=20000', '--records=off']);
    g.child.kill('SIGKILL');
    await g.done.catch(() => {});
    assert.ok(await eventually(() => !alive(daemon), 8000), `daemon ${daemon} survived mcpguard's SIGKILL`);
  });

  test('that stopped itself dies when mcpguard is SIGKILLed: the watchdog continues it with the SIGTERM', { timeout: 30000 }, async () => {
    const { g, daemon } = await guardWithDaemon('stopped', ['--grace=20000', '--records=off']);
    assert.ok(await eventually(() => state(daemon) === 'T', 3000), 'the daemon stopped itself');
    g.child.kill('SIGKILL');
    await g.done.catch(() => {});
    assert.ok(await eventually(() => !alive(daemon), 8000), `daemon ${daemon} survived mcpguard's SIGKILL`);
  });

  test('that ignores SIGTERM dies when mcpguard is SIGKILLed: the watchdog sweeps again with SIGKILL', { timeout: 30000 }, async () => {
    const { g, daemon } = await guardWithDaemon('stubborn', ['--grace=500', '--records=off']);
    g.child.kill('SIGKILL');
    await g.done.catch(() => {});
    assert.ok(await eventually(() => !alive(daemon), 8000), `daemon ${daemon} survived mcpguard's SIGKILL`);
  });

  test('left by a server under `mcpguard check` is stopped too', { timeout: 60000 }, async () => {
    const dir = workDir();
    const r = await runGuard(['check', '--grace=1000', '--json', '--', 'python3', DAEMON, dir, 'plain'], { timeout: 50000 }).done;
    const daemon = readPid(join(dir, 'daemon.pid'));
    assert.ok(daemon > 0, `no daemon started: ${r.stderr}`);
    sessionIds.push(readFileSync(join(dir, 'env'), 'utf8'));
    assert.ok(await eventually(() => !alive(daemon), 3000), `daemon ${daemon} survived the check`);
  });
});

describe('the session marker', () => {
  test("the child sees MCPGUARD_SESSION_ID equal to the summary's session_id and the audit log's id", { timeout: 30000 }, async () => {
    const records = workDir();
    const { g, sessionId } = await guardWithDaemon('plain', ['--grace=2000', `--record-dir=${records}`]);
    g.child.stdin.end();
    const s = sessionEnd((await g.done).stderr);
    assert.match(sessionId, /^s_\d{8}T\d{6}Z_[0-9a-f]{8}$/);
    assert.equal(s.session_id, sessionId);
    const [header] = readLines(join(records, `${sessionId}.jsonl`)).map((l) => JSON.parse(l));
    assert.equal(header.log_id, sessionId);
  });

  test("with --records off there is still a session id, in the summary and the child's environment", { timeout: 30000 }, async () => {
    const { g, sessionId } = await guardWithDaemon('plain', ['--grace=2000', '--records=off']);
    g.child.stdin.end();
    const s = sessionEnd((await g.done).stderr);
    assert.match(sessionId, /^s_\d{8}T\d{6}Z_[0-9a-f]{8}$/);
    assert.equal(s.session_id, sessionId);
  });

  test("only the child's tree carries it: not mcpguard, not its watchdog", { timeout: 30000, skip: !linux && 'needs /proc' }, async () => {
    const { g, sessionId, server, daemon } = await guardWithDaemon('plain', ['--grace=2000', '--records=off']);
    try {
      const watchdogs = pidsWhoseCmdlineHas(sessionId).filter((pid) => cmdline(pid).startsWith('/bin/sh'));
      assert.equal(watchdogs.length, 1, 'the watchdog carries the id in its script');
      assert.deepEqual(
        pidsMarkedWith(sessionId),
        [server, daemon].sort((a, b) => a - b),
      );
    } finally {
      g.child.stdin.end();
      await g.done;
    }
  });
});

describe('a descendant that leaves the group during the shutdown', { skip: !linux && 'needs /proc' }, () => {
  test('an orphan that calls setsid when the group is signalled is still followed, killed and named', { timeout: 30000 }, async () => {
    const dir = workDir();
    const pidfile = join(dir, 'pids');
    const call = frame({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'leaver', arguments: {} } });
    const g = runGuard(['--grace=500', '--records=off', '--', 'python3', fixture('lifecycle.py')], {
      keepOpen: true,
      timeout: 25000,
      env: { PIDFILE: pidfile },
    });
    let out = '';
    g.child.stdout.on('data', (chunk) => {
      out += chunk;
    });
    g.child.stdin.write(init + call);
    assert.ok(await eventually(() => /"id": 2/.test(out), 15000), 'no answer to the call');
    g.child.stdin.end(); // at once: no periodic sample could have seen it either (its parent shell is long gone)
    const s = sessionEnd((await g.done).stderr);
    const leaver = readPid(`${pidfile}.leaver`);
    dirs.push(dir);
    assert.ok(leaver > 0);
    const dead = await eventually(() => !alive(leaver), 3000);
    if (!dead) kill(leaver);
    assert.ok(dead || s.survivors.some((p) => p.pid === leaver), `process ${leaver} left the group on SIGTERM, survived, and is not named`);
    assert.ok(dead, 'it was killed (SIGKILL: it outlived SIGTERM)');
    assert.deepEqual(
      s.found_by_marker.map((p) => p.pid),
      [leaver],
      'only the marker found it',
    );
  });
});
