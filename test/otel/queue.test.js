// The exporter's bounds against a collector that stalls: the queue drops the
// oldest and counts it, the heap stays bounded, shutdown ends at its deadline,
// and an export in flight never keeps the process alive.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { otlpConfig } from '../../dist/otel/config.js';
import { createExporter } from '../../dist/otel/exporter.js';
import { Ring } from '../../dist/otel/queue.js';
import { startReceiver } from '../helpers/otlp-receiver.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const EXPORTER = new URL('../../dist/otel/exporter.js', import.meta.url).href;
const CONFIG = new URL('../../dist/otel/config.js', import.meta.url).href;

test('ring: over its capacity the oldest goes, and the push says so', () => {
  const ring = new Ring(3);
  assert.deepEqual(
    [1, 2, 3, 4, 5].map((n) => ring.push(n)),
    [false, false, false, true, true],
  );
  assert.deepEqual(ring.take(2), [3, 4]);
  ring.push(6);
  assert.deepEqual([ring.length, ring.clear(), ring.length], [2, 2, 0]);
});

/** A span of about 2 KB of its own (unique strings, so the heap holds them if anything keeps them). */
function bigSpan(i) {
  const attributes = [];
  for (let k = 0; k < 10; k++) attributes.push([`mcpguard.attr.${k}`, `${i}:${k}:`.padEnd(180, 'x')]);
  const id = (i + 1).toString(16).padStart(16, '0');
  return {
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    spanId: id,
    name: `tools/call ${i}`,
    kind: 2,
    startNs: 1n,
    endNs: 2n,
    attributes,
    events: [],
    status: { code: 0 },
  };
}

test('queue: 100,000 spans against a stalled collector keep the heap bounded; shutdown returns by its deadline with every span counted as dropped', async (t) => {
  const rx = await startReceiver(['stall', 'stall']);
  t.after(() => rx.close());
  const ex = createExporter(otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url }, {}), { name: 'mcpguard', version: '0' });
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < 100_000; i++) ex.span(bigSpan(i));
  for (let i = 0; i < 3000; i++) ex.log({ timeNs: 1n, severityNumber: 9, severityText: 'INFO', body: `${i}`.padEnd(500, 'l'), attributes: [] });
  await rx.waitFor(2); // both lanes have a batch stuck in flight
  gc();
  const grown = (process.memoryUsage().heapUsed - before) / 1024 / 1024;
  // Unbounded, 100,000 such spans hold about 200 MB; bounded, the ring (2048) and one batch (512).
  t.diagnostic(`heap grew ${grown.toFixed(1)} MB for 100,000 spans and 3000 logs`);
  assert.ok(grown < 40, `heap grew ${grown.toFixed(1)} MB`);
  // The ring holds 2048; one batch of 512 left it for the collector before or after the ring filled.
  assert.ok(ex.stats().dropped.spans >= 100_000 - 2048 - 512);
  const started = Date.now();
  const stats = await ex.shutdown(300);
  const took = Date.now() - started;
  t.diagnostic(`shutdown(300) returned after ${took} ms`);
  assert.ok(took < 2000, `shutdown took ${took} ms for a 300 ms deadline`);
  assert.deepEqual(stats, {
    sent: { spans: 0, logs: 0, metrics: 0 },
    dropped: { spans: 100_000, logs: 3000, metrics: 0 },
    failed: { spans: 0, logs: 0, metrics: 0 },
    errors: 0,
  });
  ex.span(bigSpan(0));
  assert.equal(ex.stats().dropped.spans, 100_001, 'after shutdown a span is dropped and counted');
});

function runChild(script, ms = 20000) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => {
      out += c;
    });
    child.stderr.on('data', (c) => {
      err += c;
    });
    const started = Date.now();
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child still running after ${ms} ms: ${err}`));
    }, ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err, took: Date.now() - started });
    });
  });
}

test('queue: an export stuck in flight does not keep the process alive; shutdown keeps it only until its deadline', async (t) => {
  const rx = await startReceiver(['stall', 'stall', 'stall', 'stall']);
  t.after(() => rx.close());
  const setup = `
    import { createExporter } from '${EXPORTER}';
    import { otlpConfig } from '${CONFIG}';
    const config = otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: '${rx.url}', OTEL_EXPORTER_OTLP_TIMEOUT: '30000' }, {});
    const ex = createExporter(config, { name: 'mcpguard', version: '0' });
    for (let i = 0; i < 600; i++) ex.span({ traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7', name: 'x', kind: 2, startNs: 1n, endNs: 2n, attributes: [], events: [], status: { code: 0 } });
  `;
  // 300 ms of the script's own (a ref'd timer) lets the batch reach the stalled collector; then the process has nothing to do.
  const idle = await runChild(`${setup}\nsetTimeout(() => process.stdout.write('idle'), 300);`);
  assert.equal(idle.code, 0, idle.err);
  assert.equal(rx.requests.length, 1, 'the batch was at the collector, stalled');
  assert.ok(idle.took < 15000, `the process exited ${idle.took} ms after start (a held socket would keep it 30 s)`);
  const flushing = await runChild(`${setup}\nconst s = await ex.shutdown(1500); process.stdout.write(JSON.stringify(s));`);
  assert.equal(flushing.code, 0, flushing.err);
  const stats = JSON.parse(flushing.out);
  assert.equal(stats.dropped.spans, 600, 'the flush waited for the stalled collector until the deadline, then counted the batch dropped');
  assert.ok(flushing.took >= 1400, `shutdown(1500) held the process ${flushing.took} ms`);
  assert.equal(rx.requests.length, 2);
});
