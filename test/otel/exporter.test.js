// Delivery against a real HTTP collector stand-in (test/helpers/otlp-receiver.js):
// what arrives, and what a collector that is down, stalls, throttles, answers
// garbage or 10 MB does to the exporter's counts (and to nothing else).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { otlpConfig } from '../../dist/otel/config.js';
import { createExporter } from '../../dist/otel/exporter.js';
import { retryAfterMs } from '../../dist/otel/post.js';
import { downUrl, startReceiver } from '../helpers/otlp-receiver.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SCOPE = { name: 'mcpguard', version: '0.1.0' };
const FAST = { delayMs: 20, backoffMs: 20, maxBackoffMs: 40, random: () => 0.5 };

function span(i, extra = {}) {
  const id = (i + 1).toString(16).padStart(16, '0');
  return {
    traceId: TRACE,
    spanId: id,
    name: `tools/call t${i}`,
    kind: 2,
    startNs: 1_764_000_000_000_000_000n + BigInt(i),
    endNs: 1_764_000_000_000_000_100n + BigInt(i),
    attributes: [['i', i]],
    events: [],
    status: { code: 0 },
    ...extra,
  };
}

function exporterFor(url, env = {}, options = {}) {
  const config = otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: url, ...env }, {});
  return createExporter(config, SCOPE, { ...FAST, ...options });
}

const spansOf = (requests) => requests.filter((r) => r.path === '/v1/traces').flatMap((r) => r.body.resourceSpans[0].scopeSpans[0].spans);

for (const protocol of ['http/protobuf', 'http/json']) {
  test(`exporter ${protocol}: spans, logs and metrics arrive decoded, gzipped, with the configured headers`, async (t) => {
    const rx = await startReceiver();
    t.after(() => rx.close());
    const ex = exporterFor(rx.url, {
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip',
      OTEL_EXPORTER_OTLP_HEADERS: 'authorization=Bearer%20k,x-team=ops',
    });
    for (let i = 0; i < 3; i++) ex.span(span(i));
    ex.log({ timeNs: 5n, severityNumber: 17, severityText: 'ERROR', body: 'boom', attributes: [], traceId: TRACE, spanId: '0000000000000001' });
    ex.metrics([{ kind: 'sum', name: 'old', unit: '1', description: '', monotonic: true, points: [{ attributes: [], startNs: 1n, timeNs: 2n, value: 1 }] }]);
    ex.metrics([
      {
        kind: 'sum',
        name: 'mcpguard.refusals',
        unit: '{request}',
        description: '',
        monotonic: true,
        points: [
          { attributes: [['rule', 'a']], startNs: 1n, timeNs: 3n, value: 2 },
          { attributes: [['rule', 'b']], startNs: 1n, timeNs: 3n, value: 1 },
        ],
      },
    ]);
    const stats = await ex.shutdown(5000);
    assert.deepEqual(stats, {
      sent: { spans: 3, logs: 1, metrics: 2 },
      dropped: { spans: 0, logs: 0, metrics: 0 },
      failed: { spans: 0, logs: 0, metrics: 0 },
      errors: 0,
    });
    const ct = protocol === 'http/json' ? 'application/json' : 'application/x-protobuf';
    for (const r of rx.requests) {
      assert.equal(r.error, null);
      assert.deepEqual(r.unknown, []);
      assert.equal(r.headers['content-type'], ct);
      assert.equal(r.headers['content-encoding'], 'gzip');
      assert.equal(r.headers.authorization, 'Bearer k');
      assert.equal(r.headers['x-team'], 'ops');
    }
    assert.deepEqual(
      spansOf(rx.requests).map((s) => s.name),
      ['tools/call t0', 'tools/call t1', 'tools/call t2'],
    );
    const logs = rx.requests.find((r) => r.path === '/v1/logs').body.resourceLogs[0].scopeLogs[0].logRecords;
    assert.deepEqual([logs[0].body.stringValue, logs[0].traceId, logs[0].spanId], ['boom', TRACE, '0000000000000001']);
    const metrics = rx.requests.filter((r) => r.path === '/v1/metrics');
    assert.equal(metrics.length, 1, 'only the newest metrics snapshot is sent');
    assert.equal(metrics[0].body.resourceMetrics[0].scopeMetrics[0].metrics[0].name, 'mcpguard.refusals');
  });
}

test('exporter: gzip (OTEL_EXPORTER_OTLP_COMPRESSION=gzip) at its fastest level (the gzip header says so), and the body decodes', async (t) => {
  const rx = await startReceiver();
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, { OTEL_EXPORTER_OTLP_COMPRESSION: 'gzip' });
  for (let i = 0; i < 50; i++) ex.span(span(i));
  await ex.shutdown(5000);
  const traces = rx.requests.filter((r) => r.path === '/v1/traces');
  assert.equal(traces.length, 1);
  assert.equal(traces[0].headers['content-encoding'], 'gzip');
  // RFC 1952: XFL (byte 8) is 4 when the compressor used its fastest algorithm (zlib: level 1), 0 at the default level.
  assert.deepEqual([traces[0].raw[0], traces[0].raw[1], traces[0].raw[8]], [0x1f, 0x8b, 4]);
  assert.equal(spansOf(traces).length, 50);
});

test('exporter: a signal without an endpoint is not sent (and not counted); the per-signal URL is used as is', async (t) => {
  const rx = await startReceiver();
  t.after(() => rx.close());
  const config = otlpConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${rx.url}/v1/traces` }, {});
  const ex = createExporter(config, SCOPE, FAST);
  ex.span(span(0));
  ex.log({ timeNs: 1n, severityNumber: 9, severityText: 'INFO', body: 'x', attributes: [] });
  const stats = await ex.shutdown(3000);
  assert.deepEqual(
    rx.requests.map((r) => r.path),
    ['/v1/traces'],
  );
  assert.deepEqual([stats.sent, stats.dropped.logs], [{ spans: 1, logs: 0, metrics: 0 }, 0]);
});

test('exporter: batches of at most maxBatch, sent as soon as one is full; the rest after the delay', async (t) => {
  const rx = await startReceiver();
  t.after(() => rx.close());
  // No compression unless asked for (the exporter specification's default).
  const ex = exporterFor(rx.url, {}, { maxBatch: 10, delayMs: 200 });
  for (let i = 0; i < 25; i++) ex.span(span(i));
  await rx.waitFor(3); // the third, partial batch came by the delay: no shutdown yet
  assert.deepEqual(
    rx.requests.map((r) => r.body.resourceSpans[0].scopeSpans[0].spans.length),
    [10, 10, 5],
  );
  assert.equal(rx.requests[0].headers['content-encoding'], undefined);
  assert.deepEqual((await ex.shutdown(1000)).sent.spans, 25);
});

test('exporter: a collector that is down: retried with backoff, then failed; shutdown returns', async () => {
  const url = await downUrl();
  const ex = exporterFor(url, {}, { maxAttempts: 3 });
  for (let i = 0; i < 4; i++) ex.span(span(i));
  const stats = await ex.shutdown(5000);
  assert.deepEqual(stats.failed, { spans: 4, logs: 0, metrics: 0 });
  assert.equal(stats.errors, 3, 'three tries, each an error');
  assert.equal(stats.sent.spans, 0);
});

test('exporter: 503 with Retry-After: 1 is honoured, then the 200 delivers the batch', async (t) => {
  const rx = await startReceiver([{ status: 503, retryAfter: '1' }]);
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, {}, { backoffMs: 10, maxBackoffMs: 10 });
  for (let i = 0; i < 3; i++) ex.span(span(i));
  await rx.waitFor(2);
  const gap = rx.requests[1].at - rx.requests[0].at;
  assert.ok(gap >= 900, `the retry waited for Retry-After (gap ${gap} ms; the backoff alone is 10 ms)`);
  const stats = await ex.shutdown(2000);
  assert.equal(stats.sent.spans, 3);
  assert.equal(stats.errors, 1);
  assert.equal(spansOf(rx.requests.slice(1)).length, 3, 'the same batch, whole, on the retry');
});

test('exporter: 429, 502, 504 are retried; 400, 401, 404, 413 and 500 are not', async (t) => {
  for (const status of [429, 502, 504]) {
    const rx = await startReceiver([{ status }]);
    t.after(() => rx.close());
    const ex = exporterFor(rx.url);
    ex.span(span(0));
    const stats = await ex.shutdown(3000);
    assert.equal(rx.requests.length, 2, `${status} retried`);
    assert.equal(stats.sent.spans, 1);
  }
  for (const status of [400, 401, 404, 413, 500]) {
    const rx = await startReceiver([{ status }, { status }]);
    t.after(() => rx.close());
    const ex = exporterFor(rx.url);
    ex.span(span(0));
    const stats = await ex.shutdown(3000);
    assert.equal(rx.requests.length, 1, `${status} not retried`);
    assert.deepEqual([stats.failed.spans, stats.errors], [1, 1]);
  }
});

test('exporter: a stalling collector: each try ends at the timeout, and the batch fails after its tries', async (t) => {
  const rx = await startReceiver(['stall', 'stall']);
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, { OTEL_EXPORTER_OTLP_TIMEOUT: '200' }, { maxAttempts: 2 });
  ex.span(span(0));
  ex.span(span(1));
  await rx.waitFor(2);
  const stats = await ex.shutdown(5000);
  assert.deepEqual([stats.failed.spans, stats.errors, stats.sent.spans], [2, 2, 0]);
});

test('exporter: an answer that trickles in a byte at a time ends at the same timeout as one that never starts', async (t) => {
  const rx = await startReceiver(['trickle', 'trickle']);
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, { OTEL_EXPORTER_OTLP_TIMEOUT: '300' }, { maxAttempts: 2 });
  ex.span(span(0));
  const stats = await ex.shutdown(10000);
  assert.deepEqual([stats.failed.spans, stats.errors, rx.requests.length], [1, 2, 2]);
});

test('exporter: an answer that is not HTTP is a transient failure: retried, then failed', async (t) => {
  const rx = await startReceiver(['garbage', 'garbage', 'garbage']);
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, {}, { maxAttempts: 3 });
  ex.span(span(0));
  const stats = await ex.shutdown(5000);
  assert.equal(rx.requests.length, 3);
  assert.deepEqual([stats.failed.spans, stats.errors], [1, 3]);
});

test('exporter: a 10 MB answer is read only up to the cap, the connection cut, and the batch failed without retry', async (t) => {
  const rx = await startReceiver(['huge', 'huge']);
  t.after(() => rx.close());
  const ex = exporterFor(rx.url);
  ex.span(span(0));
  const stats = await ex.shutdown(5000);
  assert.deepEqual([stats.failed.spans, stats.errors, rx.requests.length], [1, 1, 1]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(rx.requests[0].cut, true, `the exporter hung up after ${rx.requests[0].written} of 10 MB`);
});

for (const protocol of ['http/protobuf', 'http/json']) {
  test(`exporter ${protocol}: a partial success counts the rejected items as failed, the rest as sent, and is not retried`, async (t) => {
    const rx = await startReceiver([{ partial: 2, message: 'too old' }]);
    t.after(() => rx.close());
    const ex = exporterFor(rx.url, { OTEL_EXPORTER_OTLP_PROTOCOL: protocol });
    for (let i = 0; i < 5; i++) ex.span(span(i));
    const stats = await ex.shutdown(3000);
    assert.deepEqual([stats.sent.spans, stats.failed.spans, stats.errors, rx.requests.length], [3, 2, 1, 1]);
  });
}

test('exporter: a partial success rejecting more than the batch held fails the batch, no more; a 200 whose body does not decode counts as sent', async (t) => {
  const rx = await startReceiver([{ partial: 1e9 }, { raw: Buffer.from('\xff\xff garbage') }]);
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, {}, { maxBatch: 2 });
  for (let i = 0; i < 4; i++) ex.span(span(i));
  const stats = await ex.shutdown(3000);
  assert.deepEqual([stats.failed.spans, stats.sent.spans, stats.errors, rx.requests.length], [2, 2, 1, 2]);
});

test('exporter: metrics go at their interval (a snapshot replaced before then is not sent), and the last at shutdown', async (t) => {
  const rx = await startReceiver();
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, {}, { metricsIntervalMs: 200 });
  const snapshot = (name) => [
    { kind: 'sum', name, unit: '1', description: '', monotonic: true, points: [{ attributes: [], startNs: 1n, timeNs: 2n, value: 1 }] },
  ];
  ex.metrics(snapshot('first'));
  ex.metrics(snapshot('second'));
  await rx.waitFor(1);
  ex.metrics(snapshot('third'));
  const stats = await ex.shutdown(3000);
  const names = rx.requests.map((r) => r.body.resourceMetrics[0].scopeMetrics[0].metrics[0].name);
  assert.deepEqual(names, ['second', 'third']);
  assert.deepEqual(stats.sent.metrics, 2);
});

test('exporter: Retry-After as seconds or an HTTP date, capped at 30 s; garbage is no value', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.equal(retryAfterMs('2', now), 2000);
  assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', now), 5000);
  assert.equal(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now), 0);
  assert.equal(retryAfterMs('86400', now), 30000);
  assert.equal(retryAfterMs('soon', now), undefined);
  assert.equal(retryAfterMs(undefined, now), undefined);
});

test('exporter: nothing throws into the caller: an unencodable span fails its batch only', async (t) => {
  const rx = await startReceiver();
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, {}, { maxBatch: 1 });
  ex.span(span(0, { startNs: 'not a bigint' }));
  ex.span(span(1));
  const stats = await ex.shutdown(3000);
  assert.deepEqual([stats.failed.spans, stats.sent.spans], [1, 1]);
});

test('exporter: span() only queues: a full batch is encoded on a later turn, not inside the caller', async (t) => {
  const rx = await startReceiver();
  t.after(() => rx.close());
  const ex = exporterFor(rx.url, {}, { maxBatch: 4 });
  let read = 0;
  for (let i = 0; i < 4; i++)
    ex.span({
      ...span(i),
      get name() {
        read += 1;
        return 'n';
      },
    });
  assert.equal(read, 0, 'nothing of the batch was read while span() ran');
  await rx.waitFor(1);
  assert.equal(read, 4);
  assert.equal((await ex.shutdown(1000)).sent.spans, 4);
});

test('exporter: a collector that answers before it read the body still gets each request whole (the next request is written over the last one only once it is sent)', {
  timeout: 60_000,
}, async (t) => {
  const { createServer } = await import('node:net');
  const { decodeOtlp } = await import('../helpers/otlp-receiver.js');
  // Answers 200 as soon as a request's headers are in, then reads its body slowly, and keeps each body it read.
  const bodies = [];
  const sockets = new Set();
  const server = createServer((socket) => {
    sockets.add(socket);
    let buf = Buffer.alloc(0);
    let need = -1;
    const take = () => {
      for (;;) {
        if (need < 0) {
          const end = buf.indexOf('\r\n\r\n');
          if (end < 0) return;
          need = Number(/content-length: *(\d+)/i.exec(buf.subarray(0, end).toString('latin1'))[1]);
          buf = buf.subarray(end + 4);
          socket.write('HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n');
          socket.pause();
          setTimeout(() => socket.resume(), 150).unref();
        }
        if (buf.length < need) return;
        bodies.push(buf.subarray(0, need));
        buf = buf.subarray(need);
        need = -1;
      }
    };
    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk]);
      take();
    });
    socket.on('error', () => {});
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  const ex = exporterFor(`http://127.0.0.1:${server.address().port}`, {}, { maxBatch: 12_000, maxQueue: 24_000, delayMs: 10_000, reuseMax: 64 * 1024 * 1024 });
  // Two batches of 12,000 spans: the first some 14 MB (more than a loopback socket's buffers take while the collector
  // does not read; kept for reuse, which by default only requests of up to 4 MiB are), the second shorter, written over
  // the first's bytes.
  const long = 'x'.repeat(1000);
  for (let i = 0; i < 12_000; i++) ex.span(span(i, { name: `first ${i} ${long}` }));
  for (let i = 0; i < 12_000; i++) ex.span(span(i, { name: `second ${i}` }));
  const stats = await ex.shutdown(20_000);
  assert.deepEqual(stats.sent.spans, 24_000);
  // Sent is not yet read: the collector reads on at its own pace.
  for (let waited = 0; bodies.length < 2 && waited < 10_000; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(bodies.length, 2);
  const names = bodies.map((b) => decodeOtlp('/v1/traces', 'application/x-protobuf', b).body.resourceSpans[0].scopeSpans[0].spans.map((s) => s.name));
  assert.deepEqual(
    names[0],
    Array.from({ length: 12_000 }, (_, i) => `first ${i} ${long}`),
  );
  assert.deepEqual(
    names[1],
    Array.from({ length: 12_000 }, (_, i) => `second ${i}`),
  );
});
