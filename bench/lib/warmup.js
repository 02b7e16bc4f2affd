// How a relay's round trip changes as its JIT warms up: p50 per window of
// call indexes on one connection, for the byte-copy relay and mcpguard (records
// on and off). This is the evidence behind the latency rows' split into a cold
// row (the first calls) and steady-state rows (after the warm-up calls).
import { interleave, roundName } from './interleave.js';
import { timedCalls } from './latency.js';
import { launch, stop } from './proc.js';
import { Peer } from './rpc.js';
import { median, pairedRatio, percentiles } from './stats.js';
import { line, num } from './table.js';
import { COPY_RELAY, ECHO_SERVER, NODE, guarded } from './variants.js';

/** Window ends (call indexes, 1-based, inclusive). */
export const WINDOWS = [200, 1000, 2000, 4000, 8000];

export async function warmupRows({ rounds, warmupRounds = 1 }, progress) {
  const server = [NODE, ECHO_SERVER];
  const variants = [
    { name: 'copy', label: 'byte-copy relay', argv: [NODE, COPY_RELAY, ...server] },
    { name: 'mcpguard', label: 'mcpguard', argv: guarded(server) },
    { name: 'norecords', label: 'mcpguard --records off', argv: guarded(server, ['--records', 'off']) },
  ];
  const samples = await interleave(
    variants,
    rounds,
    async (v, r) => {
      progress(`warmup ${v.name} ${roundName(r, rounds)}`);
      const child = launch(v.argv);
      try {
        const peer = new Peer(child);
        await peer.initialize();
        const micros = await timedCalls(peer, WINDOWS.at(-1));
        return WINDOWS.map((end, i) => percentiles(micros.subarray(i === 0 ? 0 : WINDOWS[i - 1], end)).p50);
      } finally {
        await stop(child);
      }
    },
    { warmup: warmupRounds },
  );
  const lines = [];
  WINDOWS.forEach((end, w) => {
    const row = `latency p50 (µs) of calls ${w === 0 ? 1 : WINDOWS[w - 1] + 1}-${end}, × ${rounds} rounds`;
    const copy = samples.copy.map((s) => s[w]);
    for (const v of variants) {
      const values = samples[v.name].map((s) => s[w]);
      lines.push(line(row, v.label, num(median(values)), v.name === 'copy' ? 'baseline' : `${pairedRatio(values, copy).toFixed(2)}× copy`));
    }
  });
  return { lines, notes: [] };
}
