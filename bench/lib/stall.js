// A client that stops reading: it sends LINES invalid lines (`{}`), which
// mcpguard answers itself (--on-invalid reject), while it takes nothing from
// mcpguard's stdout for a while; then it reads everything. mcpguard must stop
// reading the client once its own answers back up (as it stops reading the
// server), so its peak RSS stays bounded, and every answer must still arrive.
// Two peaks: while the client is stalled (the backlog: the target), and over
// the whole run, including the catch-up, when mcpguard answers the rest as
// fast as the client reads (a matter of allocation rate, not of backlog).
// The baseline is the same mcpguard session with no flood: what mcpguard
// weighs at rest, measured interleaved.
import { interleave, roundName } from './interleave.js';
import { exited, launch, stop } from './proc.js';
import { readMemory, sampleMemory } from './rss.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { ECHO_SERVER, NODE, guarded } from './variants.js';

const STALL_MS = 3000;
const TARGET_MIB = 100;

async function stallRun(lines) {
  const child = launch(guarded([NODE, ECHO_SERVER], ['--on-invalid', 'reject', '--records', 'off']), { stdio: ['pipe', 'pipe', 'ignore'] });
  const memory = sampleMemory(child.pid, 20);
  try {
    child.stdout.pause();
    let answers = 0;
    let tail = 0;
    child.stdout.on('data', (chunk) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) answers++;
      tail = chunk.length;
    });
    if (lines > 0) child.stdin.write('{}\n'.repeat(lines));
    await new Promise((resolve) => setTimeout(resolve, STALL_MS));
    const stalledMiB = (readMemory(child.pid)?.hwmKiB ?? 0) / 1024;
    child.stdout.resume();
    const deadline = Date.now() + 120000;
    while (answers < lines && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    if (answers !== lines) throw new Error(`stall: ${answers} of ${lines} answers arrived (last chunk ${tail} bytes)`);
    const { peakHwmKiB } = memory.stop();
    return { stalled: stalledMiB, whole: peakHwmKiB / 1024 };
  } finally {
    memory.stop();
    await stop(child);
    await exited(child);
  }
}

export async function stallRows({ rounds, lines, warmupRounds = 0 }, progress) {
  const variants = [
    { name: 'rest', label: 'mcpguard at rest (no flood)', lines: 0 },
    { name: 'stall', label: `mcpguard, ${lines} invalid lines, client not reading`, lines },
  ];
  const samples = await interleave(
    variants,
    rounds,
    (v, r) => {
      progress(`stall ${v.name} ${roundName(r, rounds)}`);
      return stallRun(v.lines);
    },
    { warmup: warmupRounds },
  );
  const row = `client stops reading: peak RSS (MiB), × ${rounds} rounds`;
  const rest = samples.rest.map((s) => s.whole);
  const stalled = samples.stall.map((s) => s.stalled);
  const whole = samples.stall.map((s) => s.whole);
  const worst = Math.max(...stalled);
  const worstWhole = Math.max(...whole);
  return {
    lines: [
      line(row, variants[0].label, num(median(rest)), 'baseline'),
      line(
        row,
        `${variants[1].label}: while stalled`,
        num(median(stalled)),
        ratioText(pairedRatio(stalled, rest), 'at rest'),
        `≤ ${TARGET_MIB} MiB`,
        worst <= TARGET_MIB,
      ),
      line(
        row,
        `${variants[1].label}: whole run (catch-up included)`,
        num(median(whole)),
        ratioText(pairedRatio(whole, rest), 'at rest'),
        `≤ ${TARGET_MIB} MiB`,
        worstWhole <= TARGET_MIB,
      ),
    ],
    notes: [
      `client stops reading: the client reads nothing for ${STALL_MS / 1000} s, then every answer is counted (all ${lines} arrived in every round); worst round ${num(worst)} MiB while stalled, ${num(worstWhole)} MiB over the whole run`,
    ],
  };
}
