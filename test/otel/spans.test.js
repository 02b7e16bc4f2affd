// The span builder against a recording Exporter (test/helpers/otlp-receiver.js):
// the sampler's decisions, the metrics, the diagnostic logs, and ids that are
// the same for the same session and call wherever they are built.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { newCall } from '../../dist/mcp/call.js';
import { processMasker } from '../../dist/mask/mask.js';
import { SpanBuilder, sample } from '../../dist/otel/spans.js';
import { callSpanId, sessionSpanId, sessionTraceId } from '../../dist/otel/ids.js';
import { memoryExporter, sessionEnd } from '../helpers/otlp-receiver.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const SESSION = 's_20260701T000000Z_0123456789ab';

function builder(sampler = { kind: 'parentbased_always_on', ratio: 1 }, policy = 'p.json') {
  const exporter = memoryExporter();
  const b = new SpanBuilder({
    session: { sessionId: SESSION, schema: true, policy },
    startedAt: Date.now() - 1000,
    exporter,
    sampler,
    masker: processMasker(),
    metricsIntervalMs: 0,
  });
  return { b, exporter };
}

function ended(id, tool, state, extra = {}) {
  const call = newCall(id, String(id), 'tools/call', tool);
  Object.assign(call, { state, endedAt: call.startedAt + 30, dispatchedAt: state === 'denied' ? null : call.startedAt + 1, generation: 1 }, extra);
  return call;
}

const END = sessionEnd();

test("parent-based sampling follows the client's sampled flag; a call without context follows the session's root", () => {
  const { b, exporter } = builder();
  b.callEnded(ended(1, 'echo', 'completed', { traceparent: `00-${TRACE}-${SPAN}-00` }));
  b.callEnded(ended(2, 'echo', 'completed', { traceparent: `00-${TRACE}-${SPAN}-01` }));
  b.callEnded(ended(3, 'echo', 'completed'));
  b.end(END);
  assert.deepEqual(
    exporter.spans.map((s) => s.attributes.find(([k]) => k === 'jsonrpc.request.id')?.[1] ?? s.name),
    ['2', '3', 'mcpguard session'],
    'the call whose client did not sample it is not sent',
  );
  assert.equal(exporter.spans[1].parentSpanId, sessionSpanId(SESSION));
  assert.equal(exporter.spans[1].traceId, sessionTraceId(SESSION));
});

test('always_off sends no span; traceidratio decides by the trace id alone, the same way every time', () => {
  const off = builder({ kind: 'always_off', ratio: 1 });
  off.b.callEnded(ended(1, 'echo', 'completed'));
  off.b.end(END);
  assert.equal(off.exporter.spans.length, 0);
  assert.ok(off.exporter.snapshots.length > 0, 'metrics are not sampled');
  const ids = Array.from({ length: 400 }, (_, i) => sessionTraceId(`s_${i}`));
  const half = ids.filter((t) => sample({ kind: 'traceidratio', ratio: 0.5 }, t, null)).length;
  assert.ok(half > 120 && half < 280, `about half of 400 sampled, got ${half}`);
  assert.deepEqual(
    ids.map((t) => sample({ kind: 'traceidratio', ratio: 0.5 }, t, null)),
    ids.map((t) => sample({ kind: 'traceidratio', ratio: 0.5 }, t, null)),
  );
});

test('metrics: the operation histogram by method and tool, refusals by rule (numbered from 1), restarts, frames refused (not those only reported)', () => {
  const { b, exporter } = builder();
  b.callEnded(ended(1, 'echo', 'completed'));
  b.callEnded(ended(2, 'exec', 'denied', { decision: { by: 'policy', rule: 1, channel: null, card: null, reason: 'x' } }));
  b.restarted();
  b.rejected({ direction: 'client', line: 1, code: -32700, reason: 'not JSON', frame: null, bytes: 3 });
  b.rejected({ direction: 'child', line: 2, code: null, reason: 'flag', frame: null, bytes: 3, rule: 'r', action: 'forwarded' });
  b.end(END);
  const last = exporter.snapshots.at(-1);
  const metric = (name) => last.find((m) => m.name === name);
  const op = metric('mcp.server.operation.duration');
  assert.equal(op.points.length, 2, 'one series per tool and outcome');
  const echo = op.points.find((p) => p.attributes.some(([k, v]) => k === 'gen_ai.tool.name' && v === 'echo'));
  assert.equal(echo.count, 1);
  assert.equal(echo.bucketCounts[2], 1, '30 ms falls in (0.02, 0.05]');
  const refused = metric('mcpguard.calls.refused').points[0];
  assert.deepEqual(refused.attributes, [
    ['mcpguard.refused.by', 'policy'],
    ['gen_ai.guardrail.security.policy.rule.id', '2'],
  ]);
  assert.equal(metric('mcpguard.server.restarts').points[0].value, 1);
  assert.equal(metric('mcpguard.frames.rejected').points[0].value, 1);
  assert.equal(metric('mcp.server.session.duration').points[0].count, 1);
});

test("mcpguard's own diagnostics are WARN log records on the session's span; ids depend only on the session and call ids", () => {
  const { b, exporter } = builder();
  b.diagnostic('the server wrote a non-protocol line');
  assert.equal(exporter.logs[0].severityText, 'WARN');
  assert.equal(exporter.logs[0].spanId, sessionSpanId(SESSION));
  assert.equal(callSpanId(SESSION, 'c_000000000001'), callSpanId(SESSION, 'c_000000000001'));
  assert.notEqual(callSpanId(SESSION, 'c_000000000001'), callSpanId(SESSION, 'c_000000000002'));
  assert.notEqual(callSpanId(SESSION, 'c_000000000001'), callSpanId('s_other', 'c_000000000001'));
  assert.match(sessionTraceId(SESSION), /^[0-9a-f]{32}$/);
  b.end(END);
});

test('attribute pairs shared between spans (interned, their protobuf bytes made once) decode as their own values; past the bound per key, tool names still do', async () => {
  const { encodeProto } = await import('../../dist/otel/encode-proto.js');
  const { decodeOtlp, attrs } = await import('../helpers/otlp-receiver.js');
  const { MAX_VALUES } = await import('../../dist/otel/interned.js');
  const { b, exporter } = builder();
  const n = MAX_VALUES + 50;
  for (let i = 1; i <= n; i++)
    b.callEnded(ended(i, `tool_${i}`, i % 3 === 0 ? 'denied' : 'completed', i % 3 === 0 ? { decision: { by: 'policy', rule: i % 7 } } : {}));
  const sent = exporter.spans.slice(0, n);
  const body = encodeProto('traces', { resource: [], scope: { name: 'mcpguard', version: '0' }, spans: sent, logs: [], metrics: [] });
  const decoded = decodeOtlp('/v1/traces', 'application/x-protobuf', body).body.resourceSpans[0].scopeSpans[0].spans;
  assert.equal(decoded.length, n);
  for (const [i, span] of decoded.entries()) {
    const id = i + 1;
    const at = attrs(span.attributes);
    assert.equal(span.name, `tools/call tool_${id}`);
    assert.equal(at['gen_ai.tool.name'], `tool_${id}`);
    assert.equal(at['jsonrpc.request.id'], String(id));
    assert.equal(at['mcpguard.call.state'], id % 3 === 0 ? 'denied' : 'completed');
    assert.deepEqual(at, Object.fromEntries(sent[i].attributes), `span ${id}: the encoded attributes are the model's`);
    const events = span.events ?? [];
    assert.deepEqual(
      events.map((e) => attrs(e.attributes)),
      sent[i].events.map((e) => Object.fromEntries(e.attributes)),
    );
    if (id % 3 === 0) assert.equal(attrs(events.at(-1).attributes)['gen_ai.guardrail.security.policy.rule.id'], String((id % 7) + 1));
  }
});
