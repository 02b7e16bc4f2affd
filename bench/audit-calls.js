// What the audit log costs per quick call, in-process, without the relay:
// SessionLog through AuditLog, one call after another as the relay drives it
// (attempt and dispatch in one event-loop turn, the end in the next, the
// end-of-turn work after it), to a real file. CPU time per call (the turns'
// own overhead included, the same for every build), and write(2)s per call
// from /proc/self/io. With --before=DIR (a build's root: DIR/dist/...) the
// other build runs interleaved in the same rounds (A B B A ...), so load on a
// shared machine moves both alike; ratios are medians of per-round pairs. The
// min of a build's rounds is its least disturbed one (on a busy machine, the
// figure to compare).
//   npm run build && node bench/audit-calls.js [--before=DIR] [--rounds=N] [--calls=N]
//   taskset -c 0 node bench/audit-calls.js --before=/path/to/build   # one CPU
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: { before: { type: 'string' }, rounds: { type: 'string', default: '9' }, calls: { type: 'string', default: '20000' } },
});
const ROUNDS = Number(args.rounds);
const CALLS = Number(args.calls);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

async function load(root, label) {
  const dist = join(resolve(root), 'dist');
  return {
    label,
    AuditLog: (await import(join(dist, 'session', 'audit.js'))).AuditLog,
    newCall: (await import(join(dist, 'mcp', 'call.js'))).newCall,
  };
}
const builds = [await load(ROOT, 'this build')];
if (args.before !== undefined) builds.push(await load(args.before, 'before'));

const turn = () => new Promise((r) => setImmediate(r));
const writeCalls = () => Number(/^syscw:\s+(\d+)/m.exec(readFileSync('/proc/self/io', 'latin1'))?.[1] ?? Number.NaN);
let sessions = 0;

/** A quick call's life as the relay's observer sees it: the build's own new call, as the relay makes it, gated. */
function newCall(build, i) {
  return Object.assign(build.newCall(i, null, 'tools/call', 'echo'), { protocolVersion: '2025-06-18', gated: true });
}

/** CPU µs and write(2)s per call over `count` sequential calls of one session. */
async function session(build, count) {
  const dir = mkdtempSync(join(tmpdir(), 'mcpguard-audit-bench-'));
  const id = `s_bench${(sessions++).toString(36).padStart(13, '0')}`;
  const audit = new build.AuditLog({ dir, fsync: false }, id, (error) => {
    throw error;
  });
  try {
    audit.sessionStarted({ command: 'bench', args: [], cwd: '/', options: {} });
    const w0 = writeCalls();
    const c0 = process.cpuUsage();
    for (let i = 0; i < count; i++) {
      const call = newCall(build, i);
      audit.callStarted(call);
      call.dispatchedAt = Date.now();
      call.generation = 1;
      audit.callDispatched(call);
      await turn(); // the server answers in a later turn
      call.state = 'completed';
      call.endedAt = Date.now();
      audit.callEnded(call);
      await turn(); // the end-of-turn work runs before this resolves
    }
    const c = process.cpuUsage(c0);
    const writes = writeCalls() - w0;
    audit.sessionEnded({ reason: 'bench' });
    return { cpu: (c.user + c.system) / count, writes: writes / count };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The loop's own cost: the same calls and turns, no audit log. */
async function turnsAlone(count) {
  const c0 = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const call = newCall(builds[0], i);
    call.dispatchedAt = Date.now();
    await turn();
    call.endedAt = Date.now();
    await turn();
  }
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / count;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const b of builds) await session(b, CALLS); // warm-up
const samples = builds.map(() => []);
const alone = [];
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => i).reverse();
  for (const i of order) samples[i].push(await session(builds[i], CALLS));
  alone.push(await turnsAlone(CALLS));
}
process.stdout.write(`audit log per quick call, ${CALLS} calls × ${ROUNDS} rounds (CPU includes two event-loop turns per call, the same for every build)\n`);
process.stdout.write(`${'no records'.padEnd(12)} CPU ${median(alone).toFixed(2)} µs per call (the loop and its two turns alone)\n`);
for (const [i, b] of builds.entries()) {
  const cpu = samples[i].map((s) => s.cpu);
  const ratio = median(cpu.map((x, k) => x / samples[0][k].cpu));
  process.stdout.write(
    `${b.label.padEnd(12)} CPU ${median(cpu).toFixed(2)} µs per call, min ${Math.min(...cpu).toFixed(2)} (rounds ${cpu.map((x) => x.toFixed(1)).join(' ')}; ${ratio.toFixed(3)}× this build), write(2)s per call ${median(samples[i].map((s) => s.writes)).toFixed(2)}\n`,
  );
}
