// The protobuf lane's arena (src/otel/arena.ts): a call's span written
// straight into the batch's bytes is the very span the object path encodes
// (byte for byte, and as the official definitions decode it), its queue keeps
// the bound and counts what it drops, a span whose writing throws is lost
// alone, and what a call's span costs the relay's process on the JS heap.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { test } from 'node:test';
import { processMasker } from '../../dist/mask/mask.js';
import { newCall } from '../../dist/mcp/call.js';
import { SpanArena } from '../../dist/otel/arena.js';
import { callSpan, writeCallSpan } from '../../dist/otel/call-span.js';
import { otlpConfig } from '../../dist/otel/config.js';
import { encodeProto } from '../../dist/otel/encode-proto.js';
import { createExporter } from '../../dist/otel/exporter.js';
import { callSpanId, sipHash24Hex } from '../../dist/otel/ids.js';
import { SpanBuilder } from '../../dist/otel/spans.js';
import { attrs, decodeOtlp, downUrl, startReceiver } from '../helpers/otlp-receiver.js';

const SESSION = { sessionId: 's_20260701T000000Z_0123456789ab', schema: true, policy: 'p.json' };
const T = Date.parse('2026-07-01T12:00:00.123Z');
const SCOPE = { name: 'mcpguard', version: '0' };
const batch = (spans) => ({ resource: [['service.name', 'x']], scope: SCOPE, spans, logs: [], metrics: [] });

function facts(extra) {
  return {
    callId: 'c_0123456789ab',
    requestId: 7,
    method: 'tools/call',
    tool: 'echo',
    target: null,
    state: 'completed',
    startedAt: T,
    dispatchedAt: T + 2,
    endedAt: T + 30,
    protocolVersion: '2025-06-18',
    traceparent: null,
    tracestate: null,
    decision: null,
    generation: 1,
    cancelRequested: false,
    errorCode: null,
    stderr: null,
    steps: { schemaMs: 0.25, policyMs: 0.5 },
    ...extra,
  };
}

const card = { shown_at: new Date(T + 3).toISOString(), answered_at: new Date(T + 2500).toISOString() };
const CASES = {
  completed: facts({}),
  'string id, error code, stderr': facts({
    requestId: 'req-ü',
    state: 'error',
    errorCode: -32001,
    stderr: { seen: 900, retained: 120, truncated: true, shared: true, text: 'x' },
  }),
  'denied by policy rule 3': facts({ state: 'denied', dispatchedAt: null, decision: { by: 'policy', rule: 2, channel: null, card: null, reason: 'r' } }),
  'schema refused': facts({ state: 'rejected', dispatchedAt: null, decision: { by: 'schema', rule: null, channel: null, card: null, reason: 'r' } }),
  'pins held': facts({ state: 'rejected', dispatchedAt: null, decision: { by: 'pins', rule: null, channel: null, card: null, reason: 'r' } }),
  'approved after a card': facts({ dispatchedAt: T + 2600, decision: { by: 'approval', rule: 0, channel: 'elicitation', card, reason: 'r' } }),
  'not approved': facts({ state: 'denied', dispatchedAt: null, decision: { by: 'approve-cmd', rule: null, channel: 'approve-cmd', card, reason: 'r' } }),
  "in the client's trace, with tracestate": facts({
    traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    tracestate: 'vendor=1',
    cancelRequested: true,
  }),
  'with content': facts({ content: { arguments: Buffer.from('{"a":1}'), argumentsBytes: 7, result: Buffer.from('{"ok":true}'), resultBytes: 11 } }),
  'prompts/get': facts({ method: 'prompts/get', tool: null, target: 'prompts/get greet', steps: undefined }),
  'ping, no generation': facts({ method: 'ping', tool: null, generation: null, dispatchedAt: null, steps: undefined }),
  'odd times (fractions of a ms, before 1970 + 2^32 ms, year 2200)': facts({ startedAt: 4294967295.5, dispatchedAt: 4294967296, endedAt: 7258118400000.4 }),
};

test('a call span written into the arena is byte for byte the span the object path encodes, for every kind of call', () => {
  const masker = processMasker();
  for (const [name, f] of Object.entries(CASES)) {
    const arena = new SpanArena(512, 2048, () => {});
    assert.equal(writeCallSpan(f, SESSION, masker, arena), true);
    const chunk = arena.take();
    assert.equal(chunk.spans, 1);
    const inPlace = encodeProto('traces', batch([]), chunk.bytes);
    const asObject = encodeProto('traces', batch([callSpan(f, SESSION, masker)]));
    assert.deepEqual(inPlace, asObject, name);
    const span = decodeOtlp('/v1/traces', 'application/x-protobuf', inPlace).body.resourceSpans[0].scopeSpans[0].spans[0];
    assert.equal(span.startTimeUnixNano, String(BigInt(Math.round(f.startedAt)) * 1_000_000n), `${name}: the start in ns`);
    assert.equal(attrs(span.attributes)['mcpguard.call.id'], 'c_0123456789ab', name);
  }
  assert.equal(writeCallSpan(facts({ method: null }), SESSION, masker, new SpanArena(1, 1, () => {})), false, 'no method, no span');
});

test('a span is the same whatever spans came before it: the runs of shared pairs are found by every value they were made from', async () => {
  const masker = processMasker();
  const one = (mod, f) => {
    const arena = new SpanArena(512, 2048, () => {});
    // Two sessions in turn (a backfill exports one after another): the session's id is in a run.
    mod.writeCallSpan(f, f.generation === 2 ? { ...SESSION, sessionId: 's_20260701T000000Z_ba9876543210' } : SESSION, masker, arena);
    return arena.take().bytes;
  };
  // Each case alone, in a module of its own (no run made by another case), against every case after every other, both ways,
  // and against more shapes than the runs keep (so that each was made again after it was replaced).
  const cases = Object.entries(CASES);
  // 12 shapes that share a tool, a version or a state pairwise: a run keyed by fewer values than it was made from is found by the wrong one.
  const tools = Array.from({ length: 12 }, (_, i) => [
    `shape ${i}`,
    facts({
      tool: `tool_${i % 3}`,
      protocolVersion: i % 2 ? '2025-06-18' : '2025-03-26',
      state: i % 4 < 2 ? 'completed' : 'tool_error',
      generation: 1 + (i % 5),
    }),
  ]);
  const alone = new Map();
  for (const [name, f] of [...cases, ...tools]) alone.set(name, one(await import(`../../dist/otel/call-span.js?alone=${encodeURIComponent(name)}`), f));
  const shared = await import('../../dist/otel/call-span.js?shared');
  for (const order of [cases, [...cases].reverse(), [...tools, ...cases, ...tools].reverse()])
    for (const [name, f] of order) assert.deepEqual(one(shared, f), alone.get(name), name);
});

test("call span ids: SipHash-2-4 by the reference vectors (key 00..0f, messages 00.., the paper's output bytes), keyed per session", () => {
  const key = Buffer.from([...Array(16).keys()]);
  const message = (n) => String.fromCharCode(...Array(n).keys());
  assert.equal(sipHash24Hex(key, message(0)), '310e0edd47db6f72');
  assert.equal(sipHash24Hex(key, message(7)), '37d1018bf50002ab');
  assert.equal(sipHash24Hex(key, message(8)), '6224939a79f5f593');
  assert.equal(sipHash24Hex(key, message(15)), 'e545be4961ca29a1');
  assert.equal(sipHash24Hex(key, message(63)), '724506eb4c328a95');
  // Non-ASCII (a call id read back from edited records) is hashed as its UTF-8 bytes.
  assert.match(sipHash24Hex(key, '\u00e9'), /^[0-9a-f]{16}$/);
  assert.notEqual(sipHash24Hex(key, '\u00e9'), sipHash24Hex(key, 'e'));
  const a = callSpanId(SESSION.sessionId, 'c_0123456789ab');
  assert.match(a, /^[0-9a-f]{16}$/);
  assert.equal(callSpanId('s_other', 'c_x'), callSpanId('s_other', 'c_x'));
  assert.equal(callSpanId(SESSION.sessionId, 'c_0123456789ab'), a, 'the same after another session was hashed');
  assert.notEqual(callSpanId(SESSION.sessionId, 'c_0123456789ac'), a);
  assert.match(callSpanId(SESSION.sessionId, 'c_\u00e9'), /^[0-9a-f]{16}$/);
});

test('arena: spans sealed per batch, the oldest batch dropped whole over the bound and counted; an abandoned span leaves no bytes', () => {
  const masker = processMasker();
  const dropped = [];
  const arena = new SpanArena(4, 10, (n) => dropped.push(n));
  for (let i = 0; i < 13; i++) writeCallSpan(facts({ callId: `c_${String(i).padStart(12, '0')}` }), SESSION, masker, arena);
  assert.equal(
    dropped.reduce((a, b) => a + b, 0),
    4,
    'the first batch of 4 went when the 11th span came',
  );
  assert.equal(arena.length, 9);
  arena.begin('4bf92f3577b34da6a3ce929d0e0e4736', '00f067aa0ba902b7', '', undefined, 'half', 2, T, T);
  arena.attr(['k', 'v']);
  arena.abort();
  const chunks = [arena.take(), arena.take(), arena.take()];
  assert.deepEqual(
    chunks.map((c) => c.spans),
    [4, 4, 1],
  );
  assert.equal(arena.take(), null);
  const ids = chunks.flatMap(
    (c) => decodeOtlp('/v1/traces', 'application/x-protobuf', encodeProto('traces', batch([]), c.bytes)).body.resourceSpans[0].scopeSpans[0].spans,
  );
  assert.deepEqual(
    ids.map((s) => attrs(s.attributes)['mcpguard.call.id']),
    [4, 5, 6, 7, 8, 9, 10, 11, 12].map((i) => `c_${String(i).padStart(12, '0')}`),
    'the newest spans, whole, the abandoned one absent',
  );
});

test('exporter: live call spans go through the arena; a stalled collector keeps the bound, and shutdown counts every span once', async (t) => {
  const rx = await startReceiver(['stall']);
  t.after(() => rx.close());
  const ex = createExporter(otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url }, {}), SCOPE, { maxQueue: 8, maxBatch: 4, delayMs: 10 });
  const masker = processMasker();
  const b = new SpanBuilder({ session: SESSION, startedAt: T, exporter: ex, sampler: { kind: 'always_on', ratio: 1 }, masker, metricsIntervalMs: 0 });
  for (let i = 0; i < 4; i++)
    b.callEnded(Object.assign(newCall(i, String(i), 'tools/call', 'echo'), { state: 'completed', endedAt: Date.now(), dispatchedAt: Date.now() }));
  await rx.waitFor(1); // the first batch stalls in flight
  for (let i = 0; i < 30; i++)
    b.callEnded(Object.assign(newCall(i, String(i), 'tools/call', 'echo'), { state: 'completed', endedAt: Date.now(), dispatchedAt: Date.now() }));
  b.flushSpans(); // the spans of calls that ended are written a batch at a time (later.ts); the session's end does this
  assert.equal(ex.stats().dropped.spans, 24, 'the queue kept its bound of 8 (two batches of 4), the older batches dropped');
  const stats = await ex.shutdown(300);
  assert.deepEqual([stats.sent.spans, stats.dropped.spans, stats.failed.spans], [0, 34, 0], 'all 34 spans counted once');
  assert.equal(ex.spanWriter(), null, 'after shutdown, spans go the object way (and are counted as dropped)');
  assert.equal(rx.requests.length, 1);
});

for (const compression of ['none', 'gzip'])
  test(`exporter (${compression}): batch after batch, each request carries its own spans (a batch's buffers are written over by the next)`, async (t) => {
    const rx = await startReceiver();
    t.after(() => rx.close());
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_COMPRESSION: compression };
    const ex = createExporter(otlpConfig(env, {}), SCOPE, { maxBatch: 16, delayMs: 5 });
    const masker = processMasker();
    const b = new SpanBuilder({ session: SESSION, startedAt: T, exporter: ex, sampler: { kind: 'always_on', ratio: 1 }, masker, metricsIntervalMs: 0 });
    // Tools of growing names: each batch is longer than the one before, then shorter, so a reused buffer holds the old batch's tail.
    const tools = Array.from({ length: 160 }, (_, i) => `tool_${i}_${'x'.repeat((i * 7) % 90)}`);
    for (const [i, tool] of tools.entries()) {
      b.callEnded(Object.assign(newCall(i, String(i), 'tools/call', tool), { state: 'completed', endedAt: T + i, dispatchedAt: T + i }));
      if (i % 16 === 15) {
        b.flushSpans();
        await rx.waitFor(Math.floor(i / 16) + 1); // one batch at a time: the next is written after this one was sent
      }
    }
    const stats = await ex.shutdown(3000);
    assert.equal(stats.sent.spans, 160);
    assert.equal(rx.requests.length, 10);
    for (const r of rx.requests) assert.equal(r.headers['content-encoding'], compression === 'gzip' ? 'gzip' : undefined);
    assert.deepEqual(
      rx.spans().map((s) => s.name),
      tools.map((tool) => `tools/call ${tool}`),
    );
  });

test('a span whose writing throws midway is lost alone: the batch around it decodes, with the other calls', async (t) => {
  const rx = await startReceiver();
  t.after(() => rx.close());
  const ex = createExporter(otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url }, {}), SCOPE, { delayMs: 10 });
  const masker = Object.create(processMasker());
  masker.text = function (s) {
    if (s === 'boom') throw new Error('a masker that fails');
    return Object.getPrototypeOf(this).text(s);
  };
  const b = new SpanBuilder({ session: SESSION, startedAt: T, exporter: ex, sampler: { kind: 'always_on', ratio: 1 }, masker, metricsIntervalMs: 0 });
  for (const tool of ['a', 'boom', 'c'])
    assert.throws(() => {
      b.callEnded(Object.assign(newCall(1, '1', 'tools/call', tool), { state: 'completed', endedAt: Date.now(), dispatchedAt: Date.now() }));
      throw new Error('returned');
    }, /returned|a masker that fails/);
  b.flushSpans();
  const stats = await ex.shutdown(3000);
  assert.equal(stats.sent.spans, 2);
  assert.deepEqual(
    rx.spans().map((s) => s.name),
    ['tools/call a', 'tools/call c'],
  );
});

// What a call's span costs the relay's process: SpanBuilder.callEnded into a real exporter (collector down),
// in a child with a young generation large enough that no scavenge runs while 50,000 calls are measured
// (heapUsed's growth over them, after 20,000 calls of warm-up; fixed costs such as compiled code come to ~10 B a call).
const PROBE = `
  import { newCall } from '${new URL('../../dist/mcp/call.js', import.meta.url).href}';
  import { processMasker } from '${new URL('../../dist/mask/mask.js', import.meta.url).href}';
  import { otlpConfig } from '${new URL('../../dist/otel/config.js', import.meta.url).href}';
  import { createExporter } from '${new URL('../../dist/otel/exporter.js', import.meta.url).href}';
  import { SpanBuilder } from '${new URL('../../dist/otel/spans.js', import.meta.url).href}';
  const ex = createExporter(otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: process.argv[1] }, {}), { name: 'mcpguard', version: '0' });
  const b = new SpanBuilder({ session: { sessionId: 's_20260701T000000Z_0123456789ab', schema: true, policy: null },
    startedAt: Date.now(), exporter: ex, sampler: { kind: 'parentbased_always_on', ratio: 1 }, masker: processMasker(), metricsIntervalMs: 0 });
  const calls = Array.from({ length: 70000 }, (_, i) => Object.assign(newCall(i, String(i), 'tools/call', 'echo'),
    { state: 'completed', protocolVersion: '2025-06-18', generation: 1, endedAt: Date.now() + 1, dispatchedAt: Date.now(), steps: { schemaMs: 0.1, policyMs: null } }));
  for (let i = 0; i < 20000; i++) b.callEnded(calls[i]);
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 20000; i < 70000; i++) b.callEnded(calls[i]);
  const perCall = (process.memoryUsage().heapUsed - before) / 50000;
  process.stdout.write(String(Math.round(perCall)));
  process.exit(0);
`;

test('a call span costs the relay under 1 KB of JS heap (collector down; 1.5 KB with a SpanData per call and a hash per span id)', async (t) => {
  const url = await downUrl();
  const child = spawn(process.execPath, ['--expose-gc', '--min-semi-space-size=128', '--max-semi-space-size=128', '--input-type=module', '-e', PROBE, url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  clearTimeout(killer);
  assert.equal(code, 0, err);
  const perCall = Number(out);
  t.diagnostic(`JS heap per call: ${perCall} B`);
  assert.ok(perCall > 0 && perCall < 1024, `JS heap per call: ${out} B`);
});
