// The cost of one session-marker sweep (src/process/marker.ts) with N extra processes
// running, next to one /proc tree walk for reference:
//   npm run build && node bench/sweep-cost.js [N=400]
// Run as root it reads every process's environ (the worst case); as another
// user, other users' processes fail at open.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { markedProcesses } from '../dist/process/marker.js';
import { descendantsOf } from '../dist/process/proctree.js';

const extra = Number(process.argv[2] ?? 400);
const MARKED = 's_bench_marked';
const sleepers = [];
for (let i = 0; i < extra; i++) {
  // One in a hundred carries the marker the sweep looks for.
  const env = { ...process.env, MCPGUARD_SESSION_ID: i % 100 === 0 ? MARKED : 's_bench_other' };
  sleepers.push(spawn('sleep', ['120'], { stdio: 'ignore', env }));
}
try {
  await new Promise((resolve) => setTimeout(resolve, 1000 + extra * 2));
  const processes = readdirSync('/proc').filter((name) => /^\d+$/.test(name)).length;
  const sweep = timed(() => markedProcesses(MARKED));
  const walk = timed(() => descendantsOf(process.pid));
  const ms = (t) => `median ${t.median.toFixed(2)} ms (min ${t.min.toFixed(2)}, max ${t.max.toFixed(2)})`;
  console.log(`${processes} processes in /proc, uid ${process.getuid()}`);
  console.log(`marker sweep: ${ms(sweep)}, found ${sweep.result.length} of ${Math.ceil(extra / 100)} marked`);
  console.log(`tree walk:    ${ms(walk)}`);
} finally {
  for (const sleeper of sleepers) sleeper.kill('SIGKILL');
}

function timed(run, rounds = 30) {
  const samples = [];
  let result;
  for (let i = 0; i < rounds; i++) {
    const t0 = process.hrtime.bigint();
    result = run();
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[rounds >> 1], min: samples[0], max: samples[rounds - 1], result };
}
