// Resource use of the server's tree (src/process/resources.ts), through the real binary:
// a server whose child (mcpguard's grandchild) does the work.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, runGuard, sessionEnd, tempDir } from '../helpers/run.js';

after(killStarted);

const MiB = 1024 * 1024;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Run the tree-burner until its grandchild is ready, then end the session; the session record and stderr. */
async function burnerSession(dir, env = {}) {
  const run = runGuard(['--record-dir', dir, '--', 'python3', fixture('tree-burner.py')], { keepOpen: true, timeout: 30000, env });
  let err = '';
  run.child.stderr.on('data', (c) => {
    err += c;
  });
  const end = Date.now() + 20000;
  while (!/tree ready pid \d+/.test(err) && Date.now() < end && run.child.exitCode === null) await sleep(50);
  assert.match(err, /tree ready pid \d+/, `the grandchild never got ready: ${err.slice(-500)}`);
  const grandchild = Number(/tree ready pid (\d+)/.exec(err)[1]);
  run.child.stdin.end();
  const r = await run.done;
  const file = readFileSync(join(dir, `${sessionEnd(r.stderr).session_id}.jsonl`), 'utf8');
  const record = file
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((x) => x.type === 'session_end');
  return { r, record, grandchild };
}

test('the session record counts the CPU and memory of a grandchild', { timeout: 60000 }, async () => {
  const { dir, cleanup } = tempDir();
  try {
    const { r, record, grandchild } = await burnerSession(dir);
    assert.equal(r.code, 0, r.stderr);
    const res = record.resources;
    assert.ok(res, `no resources in the session record: ${JSON.stringify(record)}`);
    assert.equal(res.method, 'procfs');
    // ~0.5 s of CPU and ~50 MB, with generous lower bounds.
    assert.ok(res.cpu_user_ms + res.cpu_system_ms >= 300, `cpu ${JSON.stringify(res)}`);
    assert.ok(res.peak_rss_bytes >= 45 * MiB, `peak ${JSON.stringify(res)}`);
    // The grandchild was alive at the last sample: the walk saw it, not only the kernel's reaped total.
    assert.ok(res.sampled_cpu_ms.user + res.sampled_cpu_ms.system >= 300, `sampled ${JSON.stringify(res)}`);
    assert.equal(res.peak_process.pid, grandchild, `the largest process is the grandchild: ${JSON.stringify(res)}`);
    assert.ok(res.peak_process.rss_bytes >= 45 * MiB);
    assert.ok(res.processes_seen >= 2 && res.samples >= 1, JSON.stringify(res));
    // The server waited for its child, and mcpguard for the server: the kernel's account holds both.
    assert.ok(res.reaped_cpu_ms.user + res.reaped_cpu_ms.system >= 300, `reaped ${JSON.stringify(res)}`);
    // The stderr summary (not a terminal: the JSON line) carries the same figures.
    assert.deepEqual(sessionEnd(r.stderr).resources, res);

    const shown = await runGuard(['show', '--record-dir', dir, sessionEnd(r.stderr).session_id]).done;
    assert.equal(shown.code, 0, shown.stderr);
    const show = { stdout: shown.stdout.toString() };
    const peakLine = /^ {2}peak rss +([\d.]+) MiB; largest process ([\d.]+) MiB, pid (\d+)/m.exec(show.stdout);
    assert.ok(peakLine, show.stdout);
    assert.ok(Number(peakLine[1]) >= 45 && Number(peakLine[3]) === grandchild, peakLine[0]);
    assert.match(show.stdout, /^ {2}cpu +\d+\.\d\ds user \+ \d+\.\d\ds sys \(sampled .*, reaped .*\)$/m);
    assert.match(show.stdout, /^ {2}processes +\d+ seen in \d+ samples$/m);
  } finally {
    cleanup();
  }
});

test('a daemon that was never in the tree is found by the session marker at the last sample', { timeout: 60000 }, async () => {
  const { dir, cleanup } = tempDir();
  try {
    const { r, record, grandchild } = await burnerSession(dir, { DAEMON: '1', READY_FILE: join(dir, 'ready') });
    assert.equal(r.code, 0, r.stderr);
    const res = record.resources;
    assert.equal(res.peak_process.pid, grandchild, JSON.stringify(res));
    assert.ok(res.peak_rss_bytes >= 45 * MiB, JSON.stringify(res));
    assert.ok(res.sampled_cpu_ms.user + res.sampled_cpu_ms.system >= 300, JSON.stringify(res));
    // Orphaned at once, it was reaped by init, not by the server: the kernel's account for mcpguard does not hold it.
    assert.ok(res.reaped_cpu_ms.user + res.reaped_cpu_ms.system < 300, JSON.stringify(res));
    assert.ok(res.cpu_user_ms + res.cpu_system_ms >= 300, JSON.stringify(res));
    // Shutdown ended it (a zombie until init reaps it).
    let state = 'gone';
    try {
      state = readFileSync(`/proc/${grandchild}/stat`, 'latin1').split(') ')[1][0];
    } catch {}
    assert.ok(state === 'gone' || state === 'Z', `the daemon is ${state}`);
  } finally {
    cleanup();
  }
});

test('without procfs the meter says unavailable and has no figures', async () => {
  const { ResourceMeter } = await import('../../dist/process/resources.js');
  const meter = new ResourceMeter({ available: false });
  meter.start(process.pid);
  meter.sample();
  const figures = meter.finish();
  assert.equal(figures.method, 'unavailable');
  assert.equal(figures.cpu_user_ms, null);
  assert.equal(figures.peak_rss_bytes, null);
  assert.equal(figures.samples, 0);
});
