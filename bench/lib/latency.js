// Round-trip latency of small requests. One persistent connection per variant
// per round: spawn, initialize, warm up, then N sequential tools/call requests,
// each timed from just before its write to the arrival of its response line.
import { interleave, roundName } from './interleave.js';
import { launch, stop } from './proc.js';
import { Peer, requestFrame } from './rpc.js';
import { readMemory } from './rss.js';
import { median, pairedRatio, percentiles } from './stats.js';
import { line, num, ratioText } from './table.js';
import { ECHO_SERVER, NODE, VALIDATE_RELAY, guarded, mcpguardHelp, relayVariants } from './variants.js';

const SMALL = { name: 'echo', arguments: { size: 64 } };

/** Sequential round trips on one connection; returns µs per request. */
export async function roundTrips(argv, requests, warmup) {
  const child = launch(argv);
  try {
    const peer = new Peer(child);
    await peer.initialize();
    for (let i = 0; i < warmup; i++) await peer.call('tools/call', SMALL);
    const micros = new Float64Array(requests);
    for (let i = 0; i < requests; i++) {
      const id = peer.reserveId();
      const frame = requestFrame(id, 'tools/call', SMALL);
      const t0 = process.hrtime.bigint();
      const { at } = await peer.send(id, frame);
      micros[i] = Number(at - t0) / 1000;
    }
    const memory = readMemory(child.pid);
    return { micros, hwmKiB: memory?.hwmKiB ?? NaN };
  } finally {
    await stop(child);
  }
}

export async function latencyRows({ rounds, requests, warmup, warmupRounds = 1 }, progress) {
  const variants = relayVariants();
  // Records are on by default once issue 5 landed: show what the relay costs without them.
  if (/--records\s+on\|off/.test(mcpguardHelp())) {
    variants.splice(3, 0, { name: 'norecords', label: 'mcpguard --records off', argv: guarded([NODE, ECHO_SERVER], ['--records', 'off']) });
  }
  // What validation alone costs: the copy relay plus mcpguard's classifyFrame on every line.
  variants.splice(2, 0, { name: 'validate', label: 'copy + mcpguard validator', argv: [NODE, VALIDATE_RELAY, NODE, ECHO_SERVER] });
  const samples = await interleave(variants, rounds, async (v, r) => {
    progress(`latency ${v.name} ${roundName(r, rounds)}`);
    const { micros, hwmKiB } = await roundTrips(v.argv, requests, warmup);
    return { ...percentiles(micros), hwmKiB };
  }, { warmup: warmupRounds });
  const series = (name, key) => samples[name].map((s) => s[key]);
  const lines = [];
  for (const key of ['p50', 'p99']) {
    const row = `latency ${key} (µs), ${requests} req × ${rounds} rounds`;
    const copy = series('copy', key);
    const sdk = series('sdk', key);
    for (const v of variants) {
      const values = series(v.name, key);
      const vsCopy = pairedRatio(values, copy);
      if (v.name === 'mcpguard' && key === 'p50') {
        const vsSdk = pairedRatio(values, sdk);
        lines.push(line(row, v.label, num(median(values)), `${ratioText(vsCopy, 'copy')}; ${ratioText(vsSdk, 'sdk')}`,
          '≤ 1.25× copy and < 1× sdk', vsCopy <= 1.25 && vsSdk < 1));
      } else if (v.name === 'norecords' && key === 'p50') {
        lines.push(line(row, v.label, num(median(values)), `${ratioText(vsCopy, 'copy')}; ${ratioText(pairedRatio(values, sdk), 'sdk')}`));
      } else {
        lines.push(line(row, v.label, num(median(values)), v.name === 'copy' ? 'baseline' : ratioText(vsCopy, 'copy')));
      }
    }
  }
  const memory = Object.fromEntries(variants.map((v) => [v.name, median(series(v.name, 'hwmKiB')) / 1024]));
  const note = `peak RSS (VmHWM) of the process the client talks to after the latency run: ${variants.map((v) => `${v.name} ${num(memory[v.name])} MiB`).join(', ')}`;
  return { lines, notes: [note] };
}
