// An OTLP/HTTP receiver for the tests, in this process: it records every
// request's path, headers and JSON body (OTLP/JSON, gzipped or not), answering 200 {}. Until the delivery
// half's receiver (test/helpers/otlp-receiver.js, both encodings decoded by
// the official protobuf definitions) is on main; then the tests can move to it.
import { createServer } from 'node:http';
import { gunzipSync } from 'node:zlib';

/** Starts a receiver on 127.0.0.1 (a free port); `close()` stops it. */
export async function jsonReceiver() {
  const requests = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let body = null;
      try {
        const raw = Buffer.concat(chunks);
        body = JSON.parse((req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw).toString('utf8'));
      } catch {}
      requests.push({ path: req.url, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    /** Every span received, with its attributes as a plain object. */
    spans: () =>
      requests
        .filter((r) => r.path === '/v1/traces')
        .flatMap((r) => r.body.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)))
        .map(plain),
    logs: () =>
      requests
        .filter((r) => r.path === '/v1/logs')
        .flatMap((r) => r.body.resourceLogs.flatMap((rl) => rl.scopeLogs.flatMap((s) => s.logRecords)))
        .map(plain),
    metrics: () =>
      requests.filter((r) => r.path === '/v1/metrics').flatMap((r) => r.body.resourceMetrics.flatMap((rm) => rm.scopeMetrics.flatMap((s) => s.metrics))),
    resources: () =>
      requests
        .map((r) => Object.values(r.body ?? {})[0]?.[0]?.resource)
        .filter(Boolean)
        .map((res) => attrs(res.attributes)),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** OTLP/JSON attributes as { key: value }. */
export function attrs(list = []) {
  const out = {};
  for (const { key, value } of list)
    out[key] = value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue === undefined ? value.arrayValue : Number(value.intValue));
  return out;
}

function plain(item) {
  return { ...item, attrs: attrs(item.attributes), events: item.events?.map((e) => ({ ...e, attrs: attrs(e.attributes) })) };
}

/** A recording Exporter (src/otel/api.ts) for tests of the span builder without a network. */
export function memoryExporter() {
  const spans = [];
  const logs = [];
  const snapshots = [];
  const stats = () => ({
    sent: { spans: spans.length, logs: logs.length, metrics: snapshots.length },
    dropped: { spans: 0, logs: 0, metrics: 0 },
    failed: { spans: 0, logs: 0, metrics: 0 },
    errors: 0,
  });
  return {
    spans,
    logs,
    /** Each metrics snapshot handed over, in order. */
    snapshots,
    span: (s) => spans.push(s),
    log: (l) => logs.push(l),
    metrics: (m) => snapshots.push(m),
    shutdown: async () => stats(),
    stats,
  };
}
