// Profile mcpguard under one benchmark workload: mcpguard runs with
// `node --cpu-prof`, the workload drives it exactly as the table does, and the
// profile is summarised (self time per function and per file).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { summarize, report } from './cpuprofile.js';
import { largeFrames } from './throughput.js';
import { singleFlight } from './single-flight.js';
import { roundTrips } from './latency.js';
import { exited, launch, benchHome, stop } from './proc.js';
import { Peer } from './rpc.js';
import { ECHO_SERVER, MCPGUARD, NODE, STDERR_FLOOD } from './variants.js';

export const WORKLOADS = ['throughput', 'latency', 'flood', 'shutdown', 'startup', 'single-results', 'single-arguments'];

export async function profileGuard(workload, { frames, requests, floodBytes, keep, top, guardOptions = [] }) {
  // A kept profile must outlive the scratch directory, which run.js removes at exit.
  const dir = mkdtempSync(join(keep ? tmpdir() : benchHome, keep ? 'mcpguard-cpuprof-' : 'cpuprof-'));
  const prof = [NODE, '--cpu-prof', '--cpu-prof-dir', dir, MCPGUARD, ...guardOptions, '--'];
  let what;
  let window = {};
  if (workload === 'startup') {
    // Only the samples up to the first initialize response: mcpguard's own start-up work.
    const t0 = process.hrtime.bigint();
    const child = launch([...prof, NODE, ECHO_SERVER]);
    const { at } = await new Peer(child).initialize();
    await stop(child);
    window = { untilNs: at };
    what = `launch to first initialize response took ${(Number(at - t0) / 1e6).toFixed(0)} ms under the profiler; samples up to that response only`;
  } else if (workload === 'shutdown') {
    // Only the samples after stdin EOF count: what mcpguard does while shutting down.
    const child = launch([...prof, NODE, ECHO_SERVER]);
    const peer = new Peer(child);
    await peer.initialize();
    await peer.call('tools/call', { name: 'echo', arguments: { size: 64 } });
    await new Promise((resolve) => setTimeout(resolve, 1500)); // let start-up work finish
    const sinceNs = process.hrtime.bigint();
    child.stdin.end();
    const { at } = await exited(child);
    await stop(child);
    window = { sinceNs };
    what = `stdin EOF to exit took ${(Number(at - sinceNs) / 1e6).toFixed(0)} ms; samples after EOF only`;
  } else if (workload === 'throughput') {
    const { mibps } = await largeFrames([...prof, NODE, ECHO_SERVER], { frames, window: 4 });
    what = `${frames} × 1 MiB results, 4 in flight: ${mibps.toFixed(0)} MiB/s under the profiler`;
  } else if (workload === 'latency') {
    const { micros } = await roundTrips([...prof, NODE, ECHO_SERVER], requests, 100);
    what = `${requests} sequential small calls: mean ${(micros.reduce((a, b) => a + b, 0) / micros.length).toFixed(0)} µs under the profiler`;
  } else if (workload === 'single-results' || workload === 'single-arguments') {
    const direction = workload.slice('single-'.length);
    const { ms } = await singleFlight([...prof, NODE, ECHO_SERVER], { calls: frames, direction });
    what = `${frames} single-flight 1 MiB ${direction}, one in flight: median ${ms.toFixed(2)} ms per round trip under the profiler`;
  } else {
    const child = launch([...prof, NODE, STDERR_FLOOD, String(floodBytes)], { stdio: ['pipe', 'pipe', 'ignore'] });
    await exited(child);
    what = `${(floodBytes / 2 ** 20).toFixed(0)} MiB stderr flood, mcpguard's stderr → /dev/null`;
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`no .cpuprofile written in ${dir}`);
  const path = join(dir, file);
  const text = report(summarize(JSON.parse(readFileSync(path, 'utf8')), window), top);
  if (!keep) rmSync(dir, { recursive: true, force: true });
  return `workload: ${workload} (${what})\ncommand: ${prof.join(' ')} ${workload === 'flood' ? 'node stderr-flood.js' : 'node echo-server.js'}\n${keep ? `profile: ${path}\n` : ''}${text}`;
}
