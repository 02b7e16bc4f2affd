// Calls written a batch at a time (src/otel/later.ts): a call kept as a row
// of numbers says to the export exactly what it said when written at once
// (the same spans, as the official definitions decode them, the same logs and
// metrics), and the batch is written when full, after its delay, before a
// metrics snapshot and at the session's end. Calls that do not fit a row are
// written at once.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { processMasker } from '../../dist/mask/mask.js';
import { newCall } from '../../dist/mcp/call.js';
import { SpanArena } from '../../dist/otel/arena.js';
import { otlpConfig } from '../../dist/otel/config.js';
import { encodeProto } from '../../dist/otel/encode-proto.js';
import { createExporter } from '../../dist/otel/exporter.js';
import { LATER_MS, SpanBuilder } from '../../dist/otel/spans.js';
import { RawId } from '../../dist/wire/request-id.js';
import { attrs, decodeOtlp, memoryExporter, sessionEnd } from '../helpers/otlp-receiver.js';

const SESSION = { sessionId: 's_20260701T000000Z_0123456789ab', schema: true, policy: 'p.json' };
const T = Date.parse('2026-07-01T12:00:00.123Z');
const SCOPE = { name: 'mcpguard', version: '0' };
const END = sessionEnd(T + 60_000);

/** An exporter that takes encoded spans into a real arena, and logs and metrics as they come. */
function arenaExporter() {
  const arena = new SpanArena(100_000, 100_000, () => {});
  const out = { arena, objects: [], logs: [], snapshots: [] };
  out.spanWriter = () => arena;
  out.span = (s) => out.objects.push(s);
  out.log = (l) => out.logs.push(l);
  out.metrics = (m) => out.snapshots.push(m);
  out.stats = () => ({ sent: {}, dropped: {}, failed: {}, errors: 0 });
  out.shutdown = async () => out.stats();
  return out;
}

function builder(laterSpans, metricsIntervalMs = 0, exporter = arenaExporter()) {
  const b = new SpanBuilder({
    session: SESSION,
    startedAt: T,
    exporter,
    sampler: { kind: 'parentbased_always_on', ratio: 1 },
    masker: processMasker(),
    metricsIntervalMs,
    laterSpans,
  });
  return { b, exporter };
}

/** The arena's spans, decoded with the official OTLP definitions, by call id. */
function spansOf(exporter) {
  const chunk = exporter.arena.take();
  if (chunk === null) return new Map();
  const body = encodeProto('traces', { resource: [['service.name', 'x']], scope: SCOPE, spans: [], logs: [], metrics: [] }, chunk.bytes);
  const spans = decodeOtlp('/v1/traces', 'application/x-protobuf', body).body.resourceSpans[0].scopeSpans[0].spans;
  return new Map(spans.map((s) => [attrs(s.attributes)['mcpguard.call.id'], s]));
}

/** Metric snapshots with each metric's points in one order (by their attributes). */
function sortedPoints(snapshots) {
  return snapshots.map((metrics) =>
    metrics.map((m) => ({ ...m, points: [...m.points].sort((a, b) => JSON.stringify(a.attributes).localeCompare(JSON.stringify(b.attributes))) })),
  );
}

let n = 0;
/** A call as the relay ends it: `c_` and 12 hex digits, a numeric id, a completed tools/call unless told otherwise. */
function call(extra = {}) {
  n += 1;
  const c = newCall(n, String(n), 'tools/call', 'echo');
  c.callId = `c_${(0xa0000000000 + n * 7919).toString(16).padStart(12, '0')}`;
  Object.assign(
    c,
    {
      protocolVersion: '2025-06-18',
      generation: 1,
      startedAt: T + n,
      dispatchedAt: T + n + 0.5,
      endedAt: T + n + 3.25,
      state: 'completed',
      steps: { schemaMs: 0.125, policyMs: 0.0625 },
    },
    extra,
  );
  return c;
}

const card = { shown_at: new Date(T + 3).toISOString(), answered_at: new Date(T + 2500).toISOString() };
/** Every kind of call: those that fit a row, and those written at once. */
function variety() {
  return [
    call(),
    call({ tool: 'read_file' }),
    call({ state: 'error', errorCode: -32001 }),
    call({ state: 'tool_error', steps: { schemaMs: 0.5, policyMs: null } }),
    call({ method: 'tools/list', tool: null, steps: undefined }),
    call({ method: 'prompts/get', tool: null, target: 'prompts/get greet', steps: undefined }),
    call({ method: 'ping', tool: null, generation: null, dispatchedAt: null, steps: undefined }),
    call({ state: 'timed_out_after_dispatch' }),
    call({ protocolVersion: null, generation: 3 }),
    call({ requestId: -0.5 }),
    call({ requestId: 2 ** 53 - 1 }),
    call({ callId: 'c_ffffffffffff' }),
    call({ callId: 'c_000000000000' }),
    // In the client's trace: kept in the row as the client sent it (sampled, not sampled, and two the writer refuses).
    call({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
    call({ traceparent: '00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-00' }),
    call({ traceparent: 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
    call({ traceparent: '00-00000000000000000000000000000000-00f067aa0ba902b7-01' }),
    // Written at once: none of these fits a row.
    call({ requestId: 'req-ü' }),
    call({ requestId: new RawId('9007199254740993', '9007199254740993', '9007199254740993') }),
    call({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'vendor=1' }),
    call({ traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01' }),
    call({ traceparent: '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later-fields' }),
    call({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-' }),
    call({ state: 'denied', dispatchedAt: null, decision: { by: 'policy', rule: 2, channel: null, card: null, reason: 'r' } }),
    call({ dispatchedAt: T + 2600, decision: { by: 'approval', rule: 0, channel: 'elicitation', card, reason: 'r' } }),
    call({ stderr: { seen: 900, retained: 120, truncated: true, shared: false, text: 'line one\nline two\n' } }),
    call({ cancelRequested: true, state: 'cancelled_after_dispatch' }),
    call({ content: { arguments: Buffer.from('{"a":1}'), argumentsBytes: 7, result: null, resultBytes: 0 } }),
    call({ callId: 'c_0123456789AB' }),
    call({ callId: 'call-from-elsewhere' }),
    call({ method: null, tool: null }),
  ];
}

test('calls kept as rows say what they said when written at once: the same spans, logs and metrics, whatever the batch size', () => {
  const calls = variety();
  // More shapes than a batch keeps (each new tool is a new shape), and more calls than its capacity.
  for (let i = 0; i < 20; i++) calls.push(call({ tool: `tool_${i % 11}` }));
  const atOnce = builder(0);
  for (const c of calls) atOnce.b.callEnded(c);
  atOnce.b.end(END);
  const expected = spansOf(atOnce.exporter);
  assert.equal(expected.size, calls.length - 2, 'every call with a method has its span, but the one its client did not sample');
  for (const laterSpans of [1, 4, 7, 128]) {
    const later = builder(laterSpans);
    for (const c of calls) later.b.callEnded(c);
    later.b.end(END);
    const got = spansOf(later.exporter);
    assert.deepEqual([...got.keys()].sort(), [...expected.keys()].sort(), `batches of ${laterSpans}: the same calls`);
    for (const [id, span] of expected) assert.deepEqual(got.get(id), span, `batches of ${laterSpans}: the span of ${id}`);
    assert.deepEqual(later.exporter.logs, atOnce.exporter.logs, `batches of ${laterSpans}: the logs`);
    // A series is made when its first call is counted: calls written at once come first, so the series may be in another order.
    assert.deepEqual(sortedPoints(later.exporter.snapshots), sortedPoints(atOnce.exporter.snapshots), `batches of ${laterSpans}: the metrics`);
    assert.deepEqual(
      later.exporter.objects.map((s) => s.name),
      ['mcpguard session'],
    );
  }
});

test('a batch is written when it is full; calls that do not fit a row are written at once', () => {
  const { b, exporter } = builder(4);
  for (let i = 0; i < 3; i++) b.callEnded(call());
  assert.equal(exporter.arena.length, 0, 'three calls wait');
  b.callEnded(call({ requestId: 'a string id' }));
  assert.equal(exporter.arena.length, 1, 'a string id is written at once');
  b.callEnded(call({ traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'k=v' }));
  assert.equal(exporter.arena.length, 2, "a call with the client's tracestate is written at once");
  b.callEnded(call());
  assert.equal(exporter.arena.length, 6, 'the fourth waiting call fills the batch: all four written');
  b.callEnded(call());
  b.flushSpans();
  assert.equal(exporter.arena.length, 7, 'flushSpans writes what waits');
});

test('a waiting call is written after the delay, and before a metrics snapshot, with nothing else happening', async () => {
  const slow = builder(128);
  slow.b.callEnded(call());
  assert.equal(slow.exporter.arena.length, 0);
  await sleep(LATER_MS + 300);
  assert.equal(slow.exporter.arena.length, 1, `written within ${LATER_MS} ms`);

  const snap = builder(128, 40);
  snap.b.callEnded(call());
  snap.b.callEnded(call({ state: 'error', errorCode: -32601 }));
  for (let waited = 0; snap.exporter.snapshots.length === 0 && waited < 5000; waited += 10) await sleep(10);
  const operation = snap.exporter.snapshots[0].find((m) => m.name === 'mcp.server.operation.duration');
  assert.equal(
    operation.points.reduce((sum, p) => sum + p.count, 0),
    2,
    'the first snapshot counts both calls, though the batch had not been written',
  );
  snap.b.end(END);
});

test('the call a row keeps is the call that ended: its id, request id and times come back exactly', () => {
  const { b, exporter } = builder(1000);
  const calls = [];
  for (let i = 0; i < 300; i++) {
    const hex = Array.from({ length: 12 }, () => '0123456789abcdef'[Math.floor(Math.random() * 16)]).join('');
    const id = [Math.floor(Math.random() * 2 ** 53), -Math.random() * 1e6, i, 0][i % 4];
    const start = T + Math.random() * 1e9;
    calls.push(call({ callId: `c_${hex}`, requestId: id, startedAt: start, dispatchedAt: start + Math.random(), endedAt: start + 1 + Math.random() * 50 }));
  }
  for (const c of calls) b.callEnded(c);
  assert.equal(exporter.arena.length, 0);
  b.flushSpans();
  const spans = spansOf(exporter);
  for (const c of calls) {
    const span = spans.get(c.callId);
    assert.ok(span, c.callId);
    assert.equal(attrs(span.attributes)['jsonrpc.request.id'], String(c.requestId));
    assert.equal(span.startTimeUnixNano, String(BigInt(Math.round(c.startedAt)) * 1_000_000n));
    assert.equal(span.endTimeUnixNano, String(BigInt(Math.round(c.endedAt)) * 1_000_000n));
  }
});

test('without a traces endpoint no span is made, and the logs and metrics are those of a session that sends spans', async () => {
  const metricsOnly = createExporter(otlpConfig({ OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: 'http://127.0.0.1:9/v1/metrics' }, {}), SCOPE);
  assert.equal(metricsOnly.tracing, false, 'an exporter with no traces endpoint says so');
  await metricsOnly.shutdown(0);
  const calls = variety();
  const run = (exporter) => {
    const { b } = builder(undefined, 0, exporter);
    for (const c of calls) b.callEnded(c);
    b.diagnostic('a line of its own');
    b.end(END);
    return exporter;
  };
  const tracing = run(memoryExporter());
  const none = run(Object.assign(memoryExporter(), { tracing: false }));
  assert.ok(tracing.spans.length > 20, 'with traces on, spans are made');
  assert.deepEqual(none.spans, [], 'no span handed over, not even the session root');
  // The diagnostic is timed when it is said (Date.now()): the two runs may be a millisecond apart.
  const untimed = (logs) => logs.map((l) => (l.severityText === 'WARN' ? { ...l, timeNs: 0n } : l));
  assert.deepEqual(untimed(none.logs), untimed(tracing.logs), 'the stderr and diagnostic logs carry the same trace and span ids');
  assert.equal(none.logs.filter((l) => l.severityText === 'WARN').length, 1);
  assert.ok(none.logs.some((l) => l.body === 'line two'));
  assert.deepEqual(sortedPoints(none.snapshots), sortedPoints(tracing.snapshots));
});
