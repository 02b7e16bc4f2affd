// What sampling the server's tree costs (src/process/resources.ts): the npm package
// `pidusage` against a direct /proc read, on a tree of 5 processes (sh + 4 sleeps).
//   npm run build && node bench/resources.js [rounds=300]
// pidusage is not a dependency: install it anywhere and name its directory,
//   (cd /tmp/pu && npm init -y && npm install pidusage) && PIDUSAGE_DIR=/tmp/pu node bench/resources.js
//
// Measured, interleaved round by round (A B C D, A B C D, ...):
//   load:   a fresh `node` that loads pidusage / dist/process/resources.js, minus a bare `node`
//   sample: pidusage(5 pids, found beforehand); the same 5 pids read directly (stat + status);
//           one ResourceMeter.sample() (it finds the tree itself, through the
//           kernel's children lists /proc/PID/task/TID/children); the same with
//           the fallback for kernels without those lists (a scan of all of /proc).
// Wall time per call and CPU time (process.cpuUsage) per call; pidusage is
// asynchronous, so its wall time includes event-loop turns.
import { execFileSync, spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { descendantsOfAny, readProc, treeOf } from '../dist/process/proctree.js';
import { ResourceMeter, readMemory } from '../dist/process/resources.js';
import { describeMachine, load } from './lib/machine.js';
import { median } from './lib/stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const rounds = Number(process.argv[2] ?? 300);
const require = createRequire(join(process.env.PIDUSAGE_DIR ?? ROOT, 'package.json'));
let pidusagePath;
try {
  pidusagePath = require.resolve('pidusage');
} catch {
  console.error('pidusage is not installed: (cd /tmp/pu && npm init -y && npm install pidusage), then PIDUSAGE_DIR=/tmp/pu node bench/resources.js');
  process.exit(2);
}
const pidusage = require(pidusagePath);

const tree = spawn('/bin/sh', ['-c', 'sleep 120 & sleep 120 & sleep 120 & sleep 120 & wait'], { stdio: 'ignore' });
try {
  await new Promise((resolve) => setTimeout(resolve, 500));
  const pids = (treeOf([{ pid: tree.pid }]) ?? []).map((p) => p.pid);
  if (pids.length !== 5) throw new Error(`expected a tree of 5 processes, found ${pids.length}`);
  console.log(describeMachine());
  console.log(
    `${readdirSync('/proc').filter((n) => /^\d+$/.test(n)).length} processes in /proc, load ${load()}, pidusage ${require(join(pidusagePath, '..', 'package.json')).version}`,
  );

  // Load time: fresh processes, interleaved.
  const loads = { bare: [], pidusage: [], direct: [] };
  const commands = {
    bare: ['-e', ''],
    pidusage: ['-e', `require(${JSON.stringify(pidusagePath)})`],
    direct: ['--input-type=module', '-e', `await import(${JSON.stringify(join(ROOT, 'dist', 'process', 'resources.js'))})`],
  };
  for (let i = 0; i < 15; i++) {
    for (const [name, args] of Object.entries(commands)) {
      const t0 = process.hrtime.bigint();
      execFileSync(process.execPath, args, { stdio: 'ignore' });
      loads[name].push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }
  const bare = median(loads.bare);
  console.log(
    `load (median of 15 fresh node processes, minus a bare node at ${bare.toFixed(1)} ms): pidusage +${(median(loads.pidusage) - bare).toFixed(1)} ms, dist/process/resources.js +${(median(loads.direct) - bare).toFixed(1)} ms`,
  );

  // First call: pidusage spawns `getconf` twice to learn the clock tick and page size.
  const first = await timedAsync(() => pidusage(pids));
  console.log(`pidusage first call: ${first.wall.toFixed(2)} ms wall`);

  const meter = new ResourceMeter();
  meter.start(tree.pid);
  const variants = {
    'pidusage(5 pids)': () => pidusage(pids),
    'direct read of the 5 pids': () => pids.map((pid) => [readProc(pid), readMemory(pid)]),
    'ResourceMeter.sample() (children lists)': () => meter.sample(),
    'scan of /proc + reads (the fallback)': () => {
      const d = descendantsOfAny([{ pid: tree.pid }]);
      return [readProc(tree.pid), ...d].map((p) => readMemory(p.pid));
    },
  };
  const results = Object.fromEntries(Object.keys(variants).map((name) => [name, { wall: [], cpu: [] }]));
  for (let i = 0; i < rounds; i++) {
    for (const [name, run] of Object.entries(variants)) {
      const t = await timedAsync(run);
      results[name].wall.push(t.wall);
      results[name].cpu.push(t.cpu);
    }
  }
  const figures = meter.finish();
  console.log(`per sample, median of ${rounds} interleaved rounds:`);
  for (const [name, r] of Object.entries(results)) {
    console.log(`  ${name.padEnd(40)} wall ${median(r.wall).toFixed(3)} ms, cpu ${median(r.cpu).toFixed(3)} ms`);
  }
  console.log(`meter saw ${figures.processes_seen} processes in ${figures.samples} samples (${figures.sampling_ms} ms in all)`);
} finally {
  for (const p of treeOf([{ pid: tree.pid }]) ?? []) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {}
  }
  process.exit();
}

async function timedAsync(run) {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await run();
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}
