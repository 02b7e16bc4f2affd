// A real OTLP/HTTP collector stand-in for the tests: an HTTP server on
// 127.0.0.1:0 that records every request (path, headers, raw body) and decodes
// it with the official OTLP protobuf definitions (the protobufjs code that
// @opentelemetry/otlp-transformer 0.213.0 generates from opentelemetry-proto),
// in both encodings. It answers as told, one plan step per request: success,
// a status with Retry-After, partial success, a stall, garbage that is not
// HTTP, or a 10 MB body.
import { createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';

const require = createRequire(import.meta.url);
const { opentelemetry } = require('@opentelemetry/otlp-transformer/build/src/generated/root.js');
const collector = opentelemetry.proto.collector;

/** The official request and response types per OTLP/HTTP path. */
export const TYPES = {
  '/v1/traces': {
    request: collector.trace.v1.ExportTraceServiceRequest,
    response: collector.trace.v1.ExportTraceServiceResponse,
    rejected: 'rejectedSpans',
  },
  '/v1/logs': {
    request: collector.logs.v1.ExportLogsServiceRequest,
    response: collector.logs.v1.ExportLogsServiceResponse,
    rejected: 'rejectedLogRecords',
  },
  '/v1/metrics': {
    request: collector.metrics.v1.ExportMetricsServiceRequest,
    response: collector.metrics.v1.ExportMetricsServiceResponse,
    rejected: 'rejectedDataPoints',
  },
};

const ID_FIELDS = new Set(['traceId', 'spanId', 'parentSpanId']);
const OBJECT = { longs: String, enums: Number, bytes: String, defaults: false, oneofs: false };

/** Walks `value`, rewriting the id fields with `convert` (OTLP/JSON's hex ⇄ protobufjs's base64). */
function mapIds(value, convert) {
  if (Array.isArray(value)) return value.map((v) => mapIds(v, convert));
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) out[k] = ID_FIELDS.has(k) && typeof v === 'string' ? convert(v) : mapIds(v, convert);
  return out;
}

const toHex = (b64) => Buffer.from(b64, 'base64').toString('hex');
const toB64 = (hex) => Buffer.from(hex, 'hex').toString('base64');

/** Keys of a JSON body that the official definitions do not know (a misspelt field would vanish silently otherwise). */
function unknownKeys(original, known, path = '') {
  const out = [];
  if (Array.isArray(original)) {
    for (const [i, v] of original.entries()) out.push(...unknownKeys(v, known?.[i], `${path}[${i}]`));
  } else if (original !== null && typeof original === 'object')
    for (const [k, v] of Object.entries(original)) {
      if (known === undefined || known === null || !(k in known)) out.push(`${path}.${k}`);
      else out.push(...unknownKeys(v, known[k], `${path}.${k}`));
    }
  return out;
}

/**
 * Decodes one request body (already gunzipped) for `path` into the OTLP/JSON
 * shape: camelCase keys, hex ids, 64-bit integers as strings, enums as
 * numbers, defaults left out. JSON is checked for unknown keys and for being
 * valid UTF-8 (fatal decode); both go through the official message type.
 */
export function decodeOtlp(path, contentType, raw) {
  const type = TYPES[path]?.request;
  if (type === undefined) throw new Error(`no OTLP type for ${path}`);
  if (contentType === 'application/x-protobuf') return { body: mapIds(type.toObject(type.decode(raw), OBJECT), toHex), unknown: [] };
  if (contentType !== 'application/json') throw new Error(`unexpected content-type ${contentType}`);
  const json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(raw));
  const message = type.fromObject(mapIds(json, toB64));
  const known = type.toObject(message, { ...OBJECT, defaults: true, oneofs: false });
  return { body: mapIds(type.toObject(message, OBJECT), toHex), unknown: unknownKeys(json, known) };
}

/**
 * Starts a receiver. `plan` holds the answers for the next requests, in order
 * (then 'ok'): 'ok', 'stall', 'trickle', 'garbage', 'huge', { status, retryAfter },
 * { partial, message }, { raw } (a 200 with that body). With `tls`, it is
 * an https server with those options.
 */
export async function startReceiver(plan = [], tls = null) {
  const requests = [];
  const stalled = [];
  const waiters = [];
  const handler = (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const record = { at: Date.now(), path: req.url, headers: req.headers, raw, body: null, unknown: [], error: null, cut: false };
      try {
        const plain = req.headers['content-encoding'] === 'gzip' ? gunzipSync(raw) : raw;
        const decoded = decodeOtlp(req.url, req.headers['content-type'], plain);
        record.body = decoded.body;
        record.unknown = decoded.unknown;
      } catch (error) {
        record.error = error;
      }
      requests.push(record);
      answer(plan.length > 0 ? plan.shift() : 'ok', req, res, record);
      for (const w of waiters.splice(0)) w();
    });
  };
  // tls: https.createServer's options (key, cert; ca and requestCert for mTLS).
  const server = tls === null ? createServer(handler) : createTlsServer(tls, handler);
  function answer(step, req, res, record) {
    const type = TYPES[req.url];
    const ct = req.headers['content-type'] === 'application/json' ? 'application/json' : 'application/x-protobuf';
    if (step === 'stall') return stalled.push(res);
    if (step === 'garbage') {
      req.socket.write('\x00\x01 this is not HTTP \xff\r\n\r\n');
      return req.socket.destroy();
    }
    if (step === 'huge') return huge(res, ct, record);
    if (step === 'trickle') {
      // Headers at once, then one byte of body every 50 ms: an answer that never quite ends.
      res.writeHead(200, { 'content-type': ct, 'content-length': '1000' });
      const timer = setInterval(() => res.write('x'), 50);
      res.on('close', () => clearInterval(timer));
      return stalled.push(res);
    }
    if (typeof step === 'object' && step.raw !== undefined) {
      res.writeHead(200, { 'content-type': ct });
      return res.end(step.raw);
    }
    if (typeof step === 'object' && step.status !== undefined) {
      const headers = step.retryAfter === undefined ? {} : { 'retry-after': step.retryAfter };
      res.writeHead(step.status, headers);
      return res.end();
    }
    let message = {};
    if (typeof step === 'object' && step.partial !== undefined)
      message = { partialSuccess: { [type.rejected]: step.partial, errorMessage: step.message ?? '' } };
    const body =
      ct === 'application/json' ? Buffer.from(JSON.stringify(message)) : Buffer.from(type.response.encode(type.response.fromObject(message)).finish());
    res.writeHead(200, { 'content-type': ct });
    res.end(body);
  }
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `${tls === null ? 'http' : 'https'}://127.0.0.1:${port}`,
    requests,
    plan,
    /** Every span received (decoded by the official definitions), with its attributes as a plain object. */
    spans: () =>
      bodies(requests, '/v1/traces')
        .flatMap((b) => (b.resourceSpans ?? []).flatMap((rs) => (rs.scopeSpans ?? []).flatMap((s) => s.spans ?? [])))
        .map(plain),
    /** Every log record received, likewise. */
    logs: () =>
      bodies(requests, '/v1/logs')
        .flatMap((b) => (b.resourceLogs ?? []).flatMap((rl) => (rl.scopeLogs ?? []).flatMap((s) => s.logRecords ?? [])))
        .map(plain),
    /** Every metric received, in order. */
    metrics: () =>
      bodies(requests, '/v1/metrics').flatMap((b) => (b.resourceMetrics ?? []).flatMap((rm) => (rm.scopeMetrics ?? []).flatMap((s) => s.metrics ?? []))),
    /** Resolves once `n` requests have arrived, or rejects after `ms`. */
    async waitFor(n, ms = 10000) {
      const until = Date.now() + ms;
      while (requests.length < n) {
        if (Date.now() > until) throw new Error(`receiver: ${requests.length} of ${n} requests after ${ms} ms`);
        await new Promise((resolve) => {
          const t = setTimeout(resolve, 50);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
    },
    async close() {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

const HUGE = 10 * 1024 * 1024;

/**
 * A 200 with a 10 MB body, written a chunk at a time as the client reads it:
 * `record.written` says how much the client took before it hung up, and
 * `record.cut` whether it hung up before the end.
 */
async function huge(res, ct, record) {
  const chunk = Buffer.alloc(64 * 1024, 0x41);
  record.written = 0;
  res.on('close', () => {
    record.cut = record.written < HUGE;
  });
  res.writeHead(200, { 'content-type': ct, 'content-length': String(HUGE) });
  while (record.written < HUGE && !res.destroyed) {
    record.written += chunk.length;
    if (!res.write(chunk))
      await new Promise((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
  }
  if (!res.destroyed) res.end();
}

/** A URL where nothing listens (a port that was just free): a collector that is down. */
export async function downUrl() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/** The decoded bodies of the requests to `path`; a request that did not decode, or had keys the definitions do not know, fails the test. */
function bodies(requests, path) {
  return requests
    .filter((r) => r.path === path)
    .map((r) => {
      if (r.error !== null) throw new Error(`receiver: ${path} did not decode: ${r.error.message}`);
      if (r.unknown.length > 0) throw new Error(`receiver: ${path} has keys OTLP does not define: ${r.unknown.join(', ')}`);
      return r.body;
    });
}

/** OTLP attributes (decoded) as { key: value }. */
export function attrs(list = []) {
  const out = {};
  for (const { key, value } of list)
    out[key] = value.stringValue ?? value.boolValue ?? value.doubleValue ?? (value.intValue === undefined ? value.arrayValue : Number(value.intValue));
  return out;
}

function plain(item) {
  return { ...item, attrs: attrs(item.attributes), events: (item.events ?? []).map((e) => ({ ...e, attrs: attrs(e.attributes) })) };
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

/** A session's end as the span builder is told it (SessionEnd): a clean close after `endedAt`. */
export function sessionEnd(endedAt = Date.now()) {
  return {
    endedAt,
    endReason: 'client_closed',
    protocolVersion: '2025-06-18',
    status: 0,
    stderrTail: '',
    stderrSeen: 0,
    stderrRetained: 0,
    restarts: null,
  };
}
