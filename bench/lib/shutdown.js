// Shutdown: from closing stdin to the exit of the process the client started,
// for a cooperative child (the echo server exits at stdin EOF), through
// mcpguard and direct.
import { interleave, roundName } from './interleave.js';
import { exited, launch, stop } from './proc.js';
import { Peer } from './rpc.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { ECHO_SERVER, NODE, guarded } from './variants.js';

async function eofToExit(argv) {
  const child = launch(argv);
  try {
    const peer = new Peer(child);
    await peer.initialize();
    await peer.call('tools/call', { name: 'echo', arguments: { size: 64 } });
    const t0 = process.hrtime.bigint();
    child.stdin.end();
    const { at, code } = await exited(child);
    if (code !== 0) throw new Error(`${argv.join(' ')} exited with ${code}`);
    return Number(at - t0) / 1e6;
  } finally {
    await stop(child);
  }
}

export async function shutdownRows({ rounds, warmupRounds = 1 }, progress) {
  const server = [NODE, ECHO_SERVER];
  const variants = [
    { name: 'direct', label: 'direct (child exits at EOF)', argv: server },
    { name: 'mcpguard', label: 'mcpguard', argv: guarded(server) },
  ];
  const samples = await interleave(
    variants,
    rounds,
    (v, r) => {
      progress(`shutdown ${v.name} ${roundName(r, rounds)}`);
      return eofToExit(v.argv);
    },
    { warmup: warmupRounds },
  );
  const row = `shutdown: stdin EOF to exit (ms), × ${rounds} rounds`;
  return {
    lines: [
      line(row, variants[0].label, num(median(samples.direct)), 'baseline'),
      line(row, 'mcpguard', num(median(samples.mcpguard)), ratioText(pairedRatio(samples.mcpguard, samples.direct), 'direct')),
    ],
    notes: [],
  };
}
