// CPU to build a quick call's two record lines (its attempt and its end, as
// session/audit.ts shapes them) into a LineBuffer, in-process: no hashing, no
// write. With --before=DIR (a build's root: DIR/dist/...) that build runs in
// the same process, interleaved round by round (A B B A ...), and its lines
// must be byte-identical to this build's, or the run stops. The times repeat
// for 16 calls (a busy relay's calls share their ms), the call and request ids change.
//   npm run build && taskset -c 0 node bench/record-lines.js [--before=DIR] [--rounds=N] [--calls=N]
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: { before: { type: 'string' }, rounds: { type: 'string', default: '15' }, calls: { type: 'string', default: '100000' } },
});
const ROUNDS = Number(args.rounds);
const CALLS = Number(args.calls);
// The shapes are this build's (session/audit.ts): both builds write the same fields, or their lines differ and the run stops.
const { CALL_SHAPES } = await import('../dist/session/audit.js');
const shape = (RecordShape, s) => new RecordShape(s.type, s.fields, s.times);

async function load(root, label) {
  const dist = join(resolve(root), 'dist', 'records');
  const { RecordShape, lineDigest } = await import(join(dist, 'chain.js'));
  const { LineBuffer } = await import(join(dist, 'line-buffer.js'));
  return {
    label,
    attempt: shape(RecordShape, CALL_SHAPES.attempt),
    end: shape(RecordShape, CALL_SHAPES.end),
    out: new LineBuffer(),
    prev: lineDigest('the line before', undefined),
    samples: [],
  };
}
const builds = [await load(fileURLToPath(new URL('..', import.meta.url)), 'this build')];
if (args.before !== undefined) builds.push(await load(args.before, 'before'));

const t0 = Date.now();
/** CPU ns per call for `count` calls' two lines; the buffer is emptied per call, so it holds the last call's lines. */
function run(b, count) {
  const { attempt, end, out, prev } = b;
  const c0 = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const ms = t0 + (i >> 4);
    const id = `c_${(0x5c25_0000_0000 + i).toString(16)}`;
    out.length = 0;
    attempt.write(out, [id, i, 'tools/call', 'echo', ms, null], 2 * i, prev, ms);
    const v = [id, 's_20261202T072900Z_bench000', i, 'tools/call', 'echo', 'completed', null, false, 0, 0, false, false, null, null, null, ms, ms, ms];
    v.push('2025-06-18', null, null, null, null, null, null, null, 1, null);
    end.write(out, v, 2 * i + 1, prev, ms);
  }
  const c = process.cpuUsage(c0);
  return ((c.user + c.system) * 1000) / count;
}
const lines = builds.map((b) => {
  run(b, CALLS); // warm-up
  return b.out.bytes.toString('latin1', 0, b.out.length);
});
if (new Set(lines).size !== 1) {
  process.stdout.write(`the builds' lines differ:\n${lines.join('\n')}\n`);
  process.exit(1);
}
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? builds : [...builds].reverse();
  for (const b of order) b.samples.push(run(b, CALLS));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
process.stdout.write(`a quick call's attempt and end lines, built in-process, ${CALLS} calls × ${ROUNDS} rounds\n`);
for (const b of builds) {
  const ratio = median(b.samples.map((x, k) => x / builds[0].samples[k]));
  process.stdout.write(
    `${b.label.padEnd(12)} ${median(b.samples).toFixed(0)} ns per call, min ${Math.min(...b.samples).toFixed(0)} (${ratio.toFixed(3)}× this build)\n`,
  );
}
