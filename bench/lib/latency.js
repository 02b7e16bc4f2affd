// Round-trip latency of small requests. One persistent connection per variant
// per round: spawn, initialize, warm up, then N sequential tools/call requests,
// each timed from just before its write to the arrival of its response line.
//
// Every relay here is a Node process whose JIT is still compiling for the first
// few thousand calls (on a 2-vCPU machine its compiler threads also take CPU
// from the client and the server). Measured by call index (calls 1-200, ...,
// 8001-16000), p50 settles after about 2000-4000 calls for every relay. So the
// steady-state rows measure after `warmup` calls, and the first `cold` calls
// of the same connection are reported as a row of their own: what the first
// calls of a short agent session see.
import { existsSync } from 'node:fs';
import { interleave, roundName } from './interleave.js';
import { benchHome, launch, stop } from './proc.js';
import { Peer, requestFrame } from './rpc.js';
import { readMemory } from './rss.js';
import { median, pairedRatio, percentiles } from './stats.js';
import { line, num, ratioText } from './table.js';
import { ECHO_SERVER, PLAIN_RELAY, NODE, POLICY_20, VALIDATE_RELAY, fencedPolicy, guarded, mcpguardHelp, relayVariants } from './variants.js';

const SMALL = { name: 'echo', arguments: { size: 64 } };

/** µs for each of `count` sequential calls on `peer` (`call`: the tools/call params, the small echo unless given). */
export async function timedCalls(peer, count, call = SMALL) {
  const micros = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const id = peer.reserveId();
    const frame = requestFrame(id, 'tools/call', call);
    const t0 = process.hrtime.bigint();
    const { at } = await peer.send(id, frame);
    micros[i] = Number(at - t0) / 1000;
  }
  return micros;
}

/**
 * Sequential round trips on one connection: the first `cold` calls after
 * initialize (timed, in `coldMicros`), then up to `warmup` calls in all
 * untimed, then `requests` timed calls (`micros`), in µs per request.
 */
export async function roundTrips(argv, requests, warmup, cold = 0, call = SMALL) {
  const child = launch(argv);
  try {
    const peer = new Peer(child);
    await peer.initialize();
    const coldMicros = await timedCalls(peer, cold, call);
    for (let i = cold; i < warmup; i++) await peer.call('tools/call', call);
    const micros = await timedCalls(peer, requests, call);
    const memory = readMemory(child.pid);
    return { micros, coldMicros, hwmKiB: memory?.hwmKiB ?? NaN };
  } finally {
    await stop(child);
  }
}

export async function latencyRows({ rounds, requests, warmup, cold, warmupRounds = 1 }, progress) {
  const variants = relayVariants();
  // Records are on by default once issue 5 landed: show what the relay costs without them.
  if (/--records\s+on\|/.test(mcpguardHelp())) {
    variants.splice(3, 0, { name: 'norecords', label: 'mcpguard --records off', argv: guarded([NODE, ECHO_SERVER], ['--records', 'off']) });
  }
  // The gate (on by default once issue 14 landed): what checking each call's arguments costs, and what a 20-rule policy adds.
  if (/--validate-args\s+on\|off/.test(mcpguardHelp())) {
    variants.push(
      { name: 'novalidate', label: 'mcpguard --validate-args off', argv: guarded([NODE, ECHO_SERVER], ['--validate-args', 'off']) },
      { name: 'policy20', label: 'mcpguard --policy (20 rules)', argv: guarded([NODE, ECHO_SERVER], ['--policy', POLICY_20]) },
    );
    // Path and host rules (builds that have them): the same call with a path and a URL, without and with a
    // 20-rule policy of which one path rule and one host rule are the echo tool's (its path resolved on every call).
    const fenced = fencedPolicy(benchHome);
    if (fenced !== null) {
      variants.push(
        { name: 'fencedArgs', label: 'mcpguard, a call with a path and a URL', argv: guarded([NODE, ECHO_SERVER]), call: fenced.call },
        // What the path rule's two system calls cost at least, in a relay: the plain-promises relay with and without them.
        { name: 'plainArgs', label: 'plain relay, the call with a path and a URL', argv: [NODE, PLAIN_RELAY, NODE, ECHO_SERVER], call: fenced.call },
        {
          name: 'plainPaths',
          label: 'the same + realpath(3) and lstat of its path',
          argv: [NODE, PLAIN_RELAY, '--paths', NODE, ECHO_SERVER],
          call: fenced.call,
        },
        {
          name: 'policyPaths',
          label: 'the same, --policy (20 rules: 10 paths, 10 hosts)',
          argv: guarded([NODE, ECHO_SERVER], ['--policy', fenced.file]),
          call: fenced.call,
        },
      );
    }
  }
  // MCPGUARD_BENCH_BEFORE=path/to/bin/mcpguard.js: another build (the one before a change) interleaved in the same rounds.
  const before = process.env.MCPGUARD_BENCH_BEFORE;
  if (before !== undefined) variants.push({ name: 'before', label: 'mcpguard before (MCPGUARD_BENCH_BEFORE)', argv: [NODE, before, '--', NODE, ECHO_SERVER] });
  // What validation alone costs: the copy relay plus mcpguard's classifyFrame on every line.
  variants.splice(2, 0, { name: 'validate', label: 'copy + mcpguard validator', argv: [NODE, VALIDATE_RELAY, NODE, ECHO_SERVER] });
  // The promises on a small call done plainly: that, plus the schema check, the secrets scan and a quick call's records (bench/fixtures/plain-relay.js).
  if (existsSync(PLAIN_RELAY)) {
    variants.splice(3, 0, { name: 'plain', label: 'plain relay: validator + schema + secrets + records', argv: [NODE, PLAIN_RELAY, NODE, ECHO_SERVER] });
  }
  const samples = await interleave(
    variants,
    rounds,
    async (v, r) => {
      progress(`latency ${v.name} ${roundName(r, rounds)}`);
      const { micros, coldMicros, hwmKiB } = await roundTrips(v.argv, requests, warmup, cold, v.call);
      return { ...percentiles(micros), coldP50: percentiles(coldMicros).p50, hwmKiB };
    },
    { warmup: warmupRounds },
  );
  const series = (name, key) => samples[name].map((s) => s[key]);
  const lines = [];
  for (const key of ['p50', 'p99', 'coldP50']) {
    const row =
      key === 'coldP50'
        ? `latency p50 (µs) of calls 1-${cold} (JIT cold), × ${rounds} rounds`
        : `latency ${key} (µs), calls ${warmup + 1}-${warmup + requests} × ${rounds} rounds`;
    const copy = series('copy', key);
    const sdk = series('sdk', key);
    for (const v of variants) {
      const values = series(v.name, key);
      const vsCopy = pairedRatio(values, copy);
      if (v.name === 'mcpguard' && key === 'p50') {
        const vsSdk = pairedRatio(values, sdk);
        lines.push(
          line(
            row,
            v.label,
            num(median(values)),
            `${ratioText(vsCopy, 'copy')}; ${ratioText(vsSdk, 'sdk')}`,
            '≤ 1.25× copy and < 1× sdk',
            vsCopy <= 1.25 && vsSdk < 1,
          ),
        );
      } else if (v.name === 'policyPaths') {
        // Against the same call through mcpguard without a policy.
        lines.push(
          line(
            row,
            v.label,
            num(median(values)),
            `${ratioText(vsCopy, 'copy')}; ${ratioText(pairedRatio(values, series('fencedArgs', key)), 'the same call without policy')}`,
          ),
        );
      } else if (v.name === 'plainPaths') {
        lines.push(
          line(
            row,
            v.label,
            num(median(values)),
            `${ratioText(vsCopy, 'copy')}; ${ratioText(pairedRatio(values, series('plainArgs', key)), 'the same without them')}`,
          ),
        );
      } else if (v.name === 'novalidate' || v.name === 'policy20' || v.name === 'before') {
        // Against mcpguard with its defaults (the gate checking each call's arguments, no policy).
        lines.push(
          line(row, v.label, num(median(values)), `${ratioText(vsCopy, 'copy')}; ${ratioText(pairedRatio(values, series('mcpguard', key)), 'default')}`),
        );
      } else if (v.name === 'plain' || (v.name === 'norecords' && key === 'p50') || (v.name === 'mcpguard' && key === 'coldP50')) {
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
