// One large frame at a time, as an agent calls a tool and waits: request →
// whole response → next request. Results: a 1 MiB tool result per call.
// Arguments: a 1 MiB string argument per call, a small result. Timed per
// round trip (median over the calls of one connection), against the Node
// byte-copy relay, interleaved per round.
import { readdirSync, readFileSync } from 'node:fs';
import { interleave, roundName } from './interleave.js';
import { payload } from './payloads.js';
import { launch, stop } from './proc.js';
import { Peer, requestFrame } from './rpc.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { NODE, STORE_FORWARD_RELAY, relayVariants } from './variants.js';

export const FRAME_BYTES = 1024 * 1024;

/** The 1 MiB argument: the multibyte text payload's text (realistic, no ASCII-only shortcut). */
function blobArgument() {
  const text = JSON.parse(payload('multibyte text', FRAME_BYTES).toString()).result.content[0].text;
  return text;
}

/**
 * CPU time (ns) used so far by all threads of process `pid` (Linux:
 * /proc/<pid>/task/<tid>/schedstat), or NaN elsewhere. On a loaded machine
 * round trips mostly measure waiting for a CPU; the relay's own CPU time per
 * call is the figure that load does not move much.
 */
function cpuNs(pid) {
  try {
    let sum = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) sum += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    return sum;
  } catch {
    return Number.NaN;
  }
}

/** Median round trip (ms), MiB/s and the relay's CPU ms per call of `calls` single calls through `argv`; `direction` is 'results' or 'arguments'. */
export async function singleFlight(argv, { calls, direction }) {
  const child = launch(argv);
  try {
    const peer = new Peer(child);
    await peer.initialize();
    const params =
      direction === 'results' ? { name: 'echo', arguments: { size: FRAME_BYTES } } : { name: 'echo', arguments: { size: 64, blob: blobArgument() } };
    const times = [];
    let frameBytes = 0;
    let cpuAtStart = Number.NaN;
    for (let i = -3; i < calls; i++) {
      if (i === 0) cpuAtStart = cpuNs(child.pid);
      const id = peer.reserveId();
      const frame = requestFrame(id, 'tools/call', params);
      const t0 = process.hrtime.bigint();
      const response = await peer.send(id, frame);
      if (i < 0) continue; // warm the server's cache and both relays' first large frames
      times.push(Number(response.at - t0) / 1e6);
      frameBytes = direction === 'results' ? response.bytes : frame.length;
    }
    const cpuMs = (cpuNs(child.pid) - cpuAtStart) / calls / 1e6;
    const ms = median(times);
    return { ms, mibps: frameBytes / 2 ** 20 / (ms / 1000), frameBytes, cpuMs };
  } finally {
    await stop(child);
  }
}

export async function singleFlightRows({ rounds, calls, warmupRounds = 1 }, progress) {
  const variants = relayVariants().filter((v) => v.name === 'copy' || v.name === 'mcpguard');
  // A relay that holds each line until its newline and checks nothing: what
  // forwarding only whole frames costs by itself, whatever the checks cost.
  const server = relayVariants()[0].argv;
  variants.push({ name: 'whole', label: 'whole-line relay (no checks)', argv: [NODE, STORE_FORWARD_RELAY, ...server] });
  // Before/after in one run: BENCH_BASE_GUARD=/path/to/other/bin/mcpguard.js adds that build, interleaved too.
  const base = process.env.BENCH_BASE_GUARD;
  if (base) variants.push({ name: 'base', label: `mcpguard at ${base}`, argv: [NODE, base, '--', ...server] });
  const lines = [];
  const notes = [];
  for (const direction of ['results', 'arguments']) {
    let frameBytes = 0;
    const samples = await interleave(
      variants,
      rounds,
      async (v, r) => {
        progress(`single-flight ${direction} ${v.name} ${roundName(r, rounds)}`);
        const result = await singleFlight(v.argv, { calls, direction });
        frameBytes = result.frameBytes;
        return result;
      },
      { warmup: warmupRounds },
    );
    const mibps = (name) => samples[name].map((s) => s.mibps);
    const ms = (name) => samples[name].map((s) => s.ms);
    const cpu = (name) => samples[name].map((s) => s.cpuMs);
    const vsCopy = pairedRatio(mibps('mcpguard'), mibps('copy'));
    const row = `single-flight 1 MiB ${direction} (MiB/s; ms per round trip; relay CPU ms per call), ${calls} calls × ${rounds} rounds`;
    const value = (name) => `${num(median(mibps(name)))}; ${num(median(ms(name)))} ms; ${num(median(cpu(name)))} ms CPU`;
    lines.push(line(row, 'byte-copy relay', value('copy'), 'baseline'));
    lines.push(line(row, 'whole-line relay (no checks)', value('whole'), ratioText(pairedRatio(mibps('whole'), mibps('copy')), 'copy')));
    lines.push(line(row, 'mcpguard', value('mcpguard'), ratioText(vsCopy, 'copy'), '≥ 0.8× copy', vsCopy >= 0.8));
    lines.push(line(row, 'mcpguard against the whole-line relay', value('mcpguard'), ratioText(pairedRatio(mibps('mcpguard'), mibps('whole')), 'whole-line')));
    if (base) lines.push(line(row, `mcpguard at ${base}`, value('base'), ratioText(pairedRatio(mibps('base'), mibps('copy')), 'copy')));
    notes.push(
      `single-flight ${direction}: ${Math.round(frameBytes)} bytes per ${direction === 'results' ? 'response' : 'request'} line, one call in flight, median round trip per connection; CPU: all threads of the relay process (not its server), per call`,
    );
  }
  return { lines, notes };
}
