// The small-call tail (issue 16): what each small call costs the process the
// client talks to, beside its latency. Per round and variant, one connection:
// initialize, `warmup` untimed calls, then a window of `requests` timed calls
// opened and closed by SIGUSR2 to bench/fixtures/gc-probe.js (preloaded with
// --import), which counts CPU time, bytes allocated on the JS heap and
// collections in that window. Variants interleave as in every row (A B … B A).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { interleave, roundName } from './interleave.js';
import { timedCalls } from './latency.js';
import { BENCH_ENV, benchHome, launch, stop } from './proc.js';
import { Peer } from './rpc.js';
import { median, pairedRatio, percentiles } from './stats.js';
import { line, num, ratioText } from './table.js';
import { COPY_RELAY, ECHO_SERVER, NODE, ROOT, guarded } from './variants.js';

const PROBE = `${ROOT}bench/fixtures/gc-probe.js`;
const SMALL = { name: 'echo', arguments: { size: 64 } };

/** argv with the probe preloaded into its first `node`. */
function probed(argv) {
  // MCPGUARD_BENCH_NODE_FLAGS: V8 flags for the probed process only (e.g. --no-turbo-inlining, to see allocations by their own function).
  const flags = (process.env.MCPGUARD_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  return [argv[0], ...flags, '--import', PROBE, ...argv.slice(1)];
}

/** Lines in `file` (0 when it does not exist yet). */
function windows(file) {
  return existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : [];
}

async function closedWindow(file, count) {
  for (let waited = 0; waited < 5000; waited += 5) {
    const found = windows(file);
    if (found.length >= count) return found[count - 1];
    await sleep(5);
  }
  throw new Error(`the probe wrote no window to ${file}`);
}

/**
 * One connection: `warmup` calls, then `requests` timed calls inside a probe
 * window. Returns latency percentiles (µs) and the window's counts per call.
 */
export async function probedCalls(argv, requests, warmup, { heapProfile } = {}) {
  const dir = mkdtempSync(join(benchHome, 'probe-'));
  const file = join(dir, 'windows.jsonl');
  const env = { ...BENCH_ENV, MCPGUARD_BENCH_PROBE: file, ...(heapProfile ? { MCPGUARD_BENCH_HEAP_PROFILE: heapProfile } : {}) };
  const child = launch(probed(argv), { env });
  try {
    const peer = new Peer(child);
    await peer.initialize();
    for (let i = 0; i < warmup; i++) await peer.call('tools/call', SMALL);
    child.kill('SIGUSR2');
    await sleep(20); // the signal is handled on the child's event loop
    const micros = await timedCalls(peer, requests);
    child.kill('SIGUSR2');
    const w = await closedWindow(file, 1);
    return {
      ...percentiles(micros),
      cpuPerCall: w.cpuMicros / requests,
      bytesPerCall: w.allocated / requests,
      scavengesPer10k: (w.scavenges * 10000) / requests,
      gcMicrosPerCall: w.gcMicros / requests,
    };
  } finally {
    await stop(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function tailRows({ rounds, requests, warmup, warmupRounds = 1 }, progress) {
  const server = [NODE, ECHO_SERVER];
  const variants = [
    { name: 'copy', label: 'byte-copy relay', argv: [NODE, COPY_RELAY, ...server] },
    { name: 'mcpguard', label: 'mcpguard (records on)', argv: guarded(server) },
    { name: 'norecords', label: 'mcpguard --records off', argv: guarded(server, ['--records', 'off']) },
  ];
  // MCPGUARD_BENCH_BEFORE=path/to/bin/mcpguard.js: another build (the one before a change) interleaved in the same rounds.
  const before = process.env.MCPGUARD_BENCH_BEFORE;
  if (before !== undefined) {
    variants.push(
      { name: 'before', label: 'mcpguard before (records on)', argv: [NODE, before, '--', ...server] },
      { name: 'beforeNorecords', label: 'mcpguard before --records off', argv: [NODE, before, '--records', 'off', '--', ...server] },
    );
  }
  const samples = await interleave(
    variants,
    rounds,
    async (v, r) => {
      progress(`tail ${v.name} ${roundName(r, rounds)}`);
      return probedCalls(v.argv, requests, warmup);
    },
    { warmup: warmupRounds },
  );
  const lines = [];
  const rows = [
    ['p50', `small calls: latency p50 (µs), calls ${warmup + 1}-${warmup + requests}`],
    ['p99', `small calls: latency p99 (µs), calls ${warmup + 1}-${warmup + requests}`],
    ['cpuPerCall', 'small calls: CPU per call (µs, user+sys)'],
    ['bytesPerCall', 'small calls: JS heap bytes allocated per call'],
    ['scavengesPer10k', 'small calls: scavenges per 10,000 calls'],
  ];
  for (const [key, row] of rows) {
    const copy = samples.copy.map((s) => s[key]);
    for (const v of variants) {
      const values = samples[v.name].map((s) => s[key]);
      let ratio = v.name === 'copy' ? 'baseline' : ratioText(pairedRatio(values, copy), 'copy');
      // The build before a change against this one, round by round (the figure a change is judged by on a busy machine).
      const pairedWith = { before: 'mcpguard', beforeNorecords: 'norecords' }[v.name];
      if (pairedWith !== undefined)
        ratio += `; this build ${ratioText(
          pairedRatio(
            samples[pairedWith].map((s) => s[key]),
            values,
          ),
          'before',
        )}`;
      let target = '';
      let ok = null;
      if ((v.name === 'mcpguard' || v.name === 'before') && key === 'p99') {
        target = '≤ 1.5× copy';
        ok = pairedRatio(values, copy) <= 1.5;
      }
      if ((v.name === 'mcpguard' || v.name === 'before') && key === 'bytesPerCall') {
        target = '≤ 5 KB';
        ok = median(values) <= 5000;
      }
      lines.push(line(`${row} × ${rounds} rounds`, v.label, num(median(values)), ratio, target, ok));
    }
  }
  return { lines, notes: ['tail rows: counts from bench/fixtures/gc-probe.js preloaded into the relay process, over the timed calls only'] };
}
