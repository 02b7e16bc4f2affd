// What the OpenTelemetry export costs a small call (issue 29): the tail row's
// probed connection (bench/lib/tail.js: latency percentiles, and the JS heap
// bytes allocated per call counted by bench/fixtures/gc-probe.js in the
// process the client talks to) for mcpguard with export off, with export to
// a collector that is up (bench/fixtures/otlp-sink.js, a child process
// answering 200 to every POST), and to one that is down (a port where nothing
// listens), interleaved per round. Run it on one CPU (`taskset -c 0`): on two,
// the export's work can hide on the other CPU.
import { createServer } from 'node:net';
import { interleave, roundName } from './interleave.js';
import { launch, stop } from './proc.js';
import { readLines } from './rpc.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { probedCalls } from './tail.js';
import { ECHO_SERVER, NODE, ROOT, guarded } from './variants.js';

const SINK = `${ROOT}bench/fixtures/otlp-sink.js`;

/** The sink child and its URL. */
async function startSink() {
  const child = launch([NODE, SINK], { stdio: ['pipe', 'pipe', 'ignore'] });
  const port = await new Promise((resolve, reject) => {
    child.once('exit', () => reject(new Error('otlp-sink exited before listening')));
    readLines(child.stdout, (l) => resolve(Number(l.toString())));
  });
  return { child, url: `http://127.0.0.1:${port}` };
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
  const down = await downUrl();
  // The machine's own OTEL_* must not reach the variants: export is on only where the row says so.
  const variants = [
    { name: 'off', label: 'mcpguard, export off', argv: guarded(server, ['--otlp', 'off']) },
    { name: 'up', label: 'mcpguard, export on, collector up', argv: guarded(server, ['--otlp-endpoint', sink.url]) },
    { name: 'down', label: 'mcpguard, export on, collector down', argv: guarded(server, ['--otlp-endpoint', down]) },
  ];
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
      ],
    };
  } finally {
    await stop(sink.child);
  }
}
