// What the OpenTelemetry export costs a small call (issue 29): the tail row's
// probed connection (bench/lib/tail.js: latency percentiles, and the JS heap
// bytes allocated per call counted by bench/fixtures/gc-probe.js in the
// process the client talks to) for mcpguard with export off, with export to
// a collector that is up (bench/fixtures/otlp-sink.js, a child process
// answering 200 to every POST), and to one that is down (a port where nothing
// listens), interleaved per round. Run it on one CPU (`taskset -c 0`): on two,
// the export's work can hide on the other CPU.
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus } from 'node:os';
import { interleave, roundName } from './interleave.js';
import { launch, stop } from './proc.js';
import { readLines } from './rpc.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { probedCalls } from './tail.js';
import { ECHO_SERVER, NODE, ROOT, guarded } from './variants.js';

const SINK = `${ROOT}bench/fixtures/otlp-sink.js`;

/** The sink child and its URL; on `cpu` (taskset) when one is named. */
async function startSink(cpu = null) {
  const argv = cpu === null ? [NODE, SINK] : ['taskset', '-c', String(cpu), NODE, SINK];
  const child = launch(argv, { stdio: ['pipe', 'pipe', 'ignore'] });
  const port = await new Promise((resolve, reject) => {
    child.once('exit', () => reject(new Error('otlp-sink exited before listening')));
    readLines(child.stdout, (l) => resolve(Number(l.toString())));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/**
 * A CPU outside this process's affinity (`taskset -c 0` is inherited by every
 * child, the sink included), or null when there is none or no taskset: a real
 * collector runs on another host or core, never on the relay's CPU.
 */
function otherCpu() {
  if (!existsSync('/usr/bin/taskset') && !existsSync('/bin/taskset')) return null;
  let status = '';
  try {
    status = readFileSync('/proc/self/status', 'utf8');
  } catch {
    return null;
  }
  const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(status)?.[1] ?? '';
  const mine = new Set();
  for (const part of list.split(',')) {
    const [a, b = a] = part.split('-').map(Number);
    for (let c = a; c <= b; c++) mine.add(c);
  }
  for (let c = cpus().length - 1; c >= 0; c--) if (!mine.has(c)) return c;
  return null;
}

/** A URL where nothing listens: a port that was just free. */
async function downUrl() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

export async function otelRows({ rounds, requests, warmup, warmupRounds = 1 }, progress) {
  const server = [NODE, ECHO_SERVER];
  const sink = await startSink();
  const apart = otherCpu();
  const farSink = apart === null ? null : await startSink(apart);
  const down = await downUrl();
  // The machine's own OTEL_* must not reach the variants: export is on only where the row says so.
  const variants = [
    { name: 'off', label: 'mcpguard, export off', argv: guarded(server, ['--otlp', 'off']) },
    { name: 'up', label: 'mcpguard, export on, collector up', argv: guarded(server, ['--otlp-endpoint', sink.url]) },
    { name: 'down', label: 'mcpguard, export on, collector down', argv: guarded(server, ['--otlp-endpoint', down]) },
  ];
  // The same collector on a CPU of its own: the relays keep theirs (the one-CPU rule is about them), the collector's work does not compete.
  if (farSink !== null) {
    variants.splice(2, 0, { name: 'far', label: `mcpguard, export on, collector up on CPU ${apart}`, argv: guarded(server, ['--otlp-endpoint', farSink.url]) });
  }
  try {
    const samples = await interleave(
      variants,
      rounds,
      async (v, r) => {
        progress(`otel ${v.name} ${roundName(r, rounds)}`);
        return probedCalls(v.argv, requests, warmup);
      },
      { warmup: warmupRounds },
    );
    const lines = [];
    for (const [key, row] of [
      ['p50', `otlp export: latency p50 (µs), calls ${warmup + 1}-${warmup + requests}`],
      ['p99', `otlp export: latency p99 (µs), calls ${warmup + 1}-${warmup + requests}`],
      ['cpuPerCall', 'otlp export: CPU per call (µs, user+sys)'],
      ['bytesPerCall', 'otlp export: JS heap bytes allocated per call'],
    ]) {
      const off = samples.off.map((s) => s[key]);
      for (const v of variants) {
        const values = samples[v.name].map((s) => s[key]);
        if (v.name === 'off') {
          lines.push(line(`${row} × ${rounds} rounds`, v.label, num(median(values)), 'baseline'));
          continue;
        }
        const ratio = pairedRatio(values, off);
        const extra = median(values.map((x, i) => x - off[i]));
        let target = '';
        let ok = null;
        if (key === 'p50' || key === 'p99') {
          target = '≤ 1.05× off';
          ok = ratio <= 1.05;
        } else if (key === 'bytesPerCall') {
          target = '≤ +1 KB';
          ok = extra <= 1024;
        }
        lines.push(
          line(`${row} × ${rounds} rounds`, v.label, num(median(values)), `${ratioText(ratio, 'off')}; ${extra >= 0 ? '+' : ''}${num(extra)}`, target, ok),
        );
      }
    }
    return {
      lines,
      notes: [
        'otlp export rows: counts from bench/fixtures/gc-probe.js in the relay process over the timed calls; the collector is bench/fixtures/otlp-sink.js',
        farSink === null
          ? 'otlp export rows: no CPU outside the bench affinity (or no taskset): the collector shares the relays CPU'
          : `otlp export rows: "collector up" shares the relays CPU (taskset is inherited); "on CPU ${apart}" is the same sink pinned apart, as a real collector runs`,
      ],
    };
  } finally {
    await stop(sink.child);
    if (farSink !== null) await stop(farSink.child);
  }
}
