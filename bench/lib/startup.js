// Start-up: from spawn() to the first `initialize` response, direct and through
// mcpguard; bare `node -e 0` (spawn to exit) is the reference for one Node start.
import { interleave, roundName } from './interleave.js';
import { exited, launch, stop } from './proc.js';
import { Peer } from './rpc.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { ECHO_SERVER, NODE, guarded } from './variants.js';

async function firstInitialize(argv) {
  const t0 = process.hrtime.bigint();
  const child = launch(argv);
  try {
    const { at } = await new Peer(child).initialize(); // written at once; the pipe holds it until the server reads
    return Number(at - t0) / 1e6;
  } finally {
    await stop(child);
  }
}

async function bareNode() {
  const t0 = process.hrtime.bigint();
  const child = launch([NODE, '-e', '0'], { stdio: 'ignore' });
  const { at } = await exited(child);
  return Number(at - t0) / 1e6;
}

export async function startupRows({ rounds, warmupRounds = 1 }, progress) {
  const server = [NODE, ECHO_SERVER];
  const variants = [
    { name: 'bare', label: 'bare `node -e 0` (to exit)', run: bareNode },
    { name: 'direct', label: 'direct (no relay)', run: () => firstInitialize(server) },
    { name: 'mcpguard', label: 'mcpguard', run: () => firstInitialize(guarded(server)) },
  ];
  const samples = await interleave(
    variants,
    rounds,
    (v, r) => {
      progress(`startup ${v.name} ${roundName(r, rounds)}`);
      return v.run();
    },
    { warmup: warmupRounds },
  );
  const bare = median(samples.bare);
  const direct = median(samples.direct);
  const guardedMs = median(samples.mcpguard);
  const overhead = pairedRatio(
    samples.mcpguard.map((m, i) => m - samples.direct[i]),
    samples.bare,
  );
  const budget = direct + 1.5 * bare;
  const row = `start-up to first initialize response (ms), × ${rounds} rounds`;
  return {
    lines: [
      line(row, variants[0].label, num(bare), 'reference'),
      line(row, variants[1].label, num(direct), 'baseline'),
      line(
        row,
        'mcpguard',
        num(guardedMs),
        `${ratioText(pairedRatio(samples.mcpguard, samples.direct), 'direct')}; +${num(overhead)}× bare`,
        `≤ direct + 1.5× bare = ${num(budget)} ms`,
        guardedMs <= budget,
      ),
    ],
    notes: [],
  };
}
