// The OTLP encoders, decoded by the official definitions (test/helpers/otlp-receiver.js):
// every field of the model in both encodings, and the strings a hostile server can send.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeJson } from '../../dist/otel/encode-json.js';
import { encodeProto } from '../../dist/otel/encode-proto.js';
import { decodeOtlp } from '../helpers/otlp-receiver.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const PARENT = 'a3ce929d0e0e4736';
const ENCODINGS = [
  ['protobuf', 'application/x-protobuf', encodeProto],
  ['json', 'application/json', encodeJson],
];
const PATHS = { traces: '/v1/traces', logs: '/v1/logs', metrics: '/v1/metrics' };

function decode(signal, [, ct, encode], batch) {
  const { body, unknown } = decodeOtlp(PATHS[signal], ct, encode(signal, batch));
  assert.deepEqual(unknown, [], 'every JSON key is a field of the official definitions');
  return body;
}

const RESOURCE = [
  ['service.name', 'mcpguard'],
  ['str', 'text'],
  ['empty', ''],
  ['int', 42],
  ['negative', -7],
  ['big', Number.MAX_SAFE_INTEGER],
  ['double', 0.25],
  ['huge', 1e300],
  ['yes', true],
  ['no', false],
  ['list', ['a', 'b']],
];
const RESOURCE_OUT = [
  { key: 'service.name', value: { stringValue: 'mcpguard' } },
  { key: 'str', value: { stringValue: 'text' } },
  { key: 'empty', value: { stringValue: '' } },
  { key: 'int', value: { intValue: '42' } },
  { key: 'negative', value: { intValue: '-7' } },
  { key: 'big', value: { intValue: String(Number.MAX_SAFE_INTEGER) } },
  { key: 'double', value: { doubleValue: 0.25 } },
  { key: 'huge', value: { doubleValue: 1e300 } },
  { key: 'yes', value: { boolValue: true } },
  { key: 'no', value: { boolValue: false } },
  { key: 'list', value: { arrayValue: { values: [{ stringValue: 'a' }, { stringValue: 'b' }] } } },
];
const SCOPE = { name: 'mcpguard', version: '0.1.0' };
const T0 = 1_764_000_000_123_456_789n; // past 2^53: a double would lose the nanoseconds

function batch(part) {
  return { resource: RESOURCE, scope: SCOPE, spans: [], logs: [], metrics: [], ...part };
}

for (const enc of ENCODINGS) {
  test(`encode ${enc[0]}: a span with every field round-trips through the official ExportTraceServiceRequest`, () => {
    const span = {
      traceId: TRACE,
      spanId: SPAN,
      parentSpanId: PARENT,
      traceState: 'congo=t61rcWkgMzE',
      name: 'tools/call read_file',
      kind: 2,
      startNs: T0,
      endNs: T0 + 1_500_000n,
      attributes: [
        ['mcp.method.name', 'tools/call'],
        ['jsonrpc.request.id', '7'],
      ],
      events: [{ name: 'gen_ai.guardrail', timeNs: T0 + 10n, attributes: [['gen_ai.guardrail.verdict.type', 'deny']] }],
      status: { code: 2, message: 'refused' },
    };
    const root = { ...span, spanId: PARENT, parentSpanId: undefined, traceState: undefined, events: [], attributes: [], status: { code: 0 } };
    const body = decode('traces', enc, batch({ spans: [span, root] }));
    assert.deepEqual(body, {
      resourceSpans: [
        {
          resource: { attributes: RESOURCE_OUT },
          scopeSpans: [
            {
              scope: SCOPE,
              spans: [
                {
                  traceId: TRACE,
                  spanId: SPAN,
                  parentSpanId: PARENT,
                  traceState: 'congo=t61rcWkgMzE',
                  name: 'tools/call read_file',
                  kind: 2,
                  startTimeUnixNano: String(T0),
                  endTimeUnixNano: String(T0 + 1_500_000n),
                  attributes: [
                    { key: 'mcp.method.name', value: { stringValue: 'tools/call' } },
                    { key: 'jsonrpc.request.id', value: { stringValue: '7' } },
                  ],
                  events: [
                    {
                      timeUnixNano: String(T0 + 10n),
                      name: 'gen_ai.guardrail',
                      attributes: [{ key: 'gen_ai.guardrail.verdict.type', value: { stringValue: 'deny' } }],
                    },
                  ],
                  status: { code: 2, message: 'refused' },
                },
                {
                  traceId: TRACE,
                  spanId: PARENT,
                  name: 'tools/call read_file',
                  kind: 2,
                  startTimeUnixNano: String(T0),
                  endTimeUnixNano: String(T0 + 1_500_000n),
                  status: {},
                },
              ],
            },
          ],
        },
      ],
    });
  });

  test(`encode ${enc[0]}: logs with and without trace/span ids round-trip through ExportLogsServiceRequest`, () => {
    const logs = [
      {
        timeNs: T0,
        severityNumber: 17,
        severityText: 'ERROR',
        body: 'Traceback (most recent call last):',
        attributes: [['mcpguard.stream', 'stderr']],
        traceId: TRACE,
        spanId: SPAN,
      },
      { timeNs: T0 + 1n, severityNumber: 9, severityText: 'INFO', body: '', attributes: [] },
    ];
    const body = decode('logs', enc, batch({ logs }));
    assert.deepEqual(body.resourceLogs[0].scopeLogs[0].logRecords, [
      {
        timeUnixNano: String(T0),
        observedTimeUnixNano: String(T0),
        severityNumber: 17,
        severityText: 'ERROR',
        body: { stringValue: 'Traceback (most recent call last):' },
        attributes: [{ key: 'mcpguard.stream', value: { stringValue: 'stderr' } }],
        traceId: TRACE,
        spanId: SPAN,
      },
      { timeUnixNano: String(T0 + 1n), observedTimeUnixNano: String(T0 + 1n), severityNumber: 9, severityText: 'INFO', body: { stringValue: '' } },
    ]);
    assert.deepEqual(body.resourceLogs[0].resource.attributes, RESOURCE_OUT);
    assert.deepEqual(body.resourceLogs[0].scopeLogs[0].scope, SCOPE);
  });

  test(`encode ${enc[0]}: histograms and sums round-trip through ExportMetricsServiceRequest`, () => {
    const metrics = [
      {
        kind: 'histogram',
        name: 'mcp.server.operation.duration',
        unit: 's',
        description: 'calls',
        points: [
          {
            attributes: [['mcp.method.name', 'tools/call']],
            startNs: T0,
            timeNs: T0 + 5n,
            count: 3,
            sum: 0.75,
            min: 0.125,
            max: 0.5,
            bounds: [0.01, 0.1, 1],
            bucketCounts: [0, 0, 3, 0],
          },
          { attributes: [], startNs: T0, timeNs: T0 + 5n, count: 0, sum: 0, min: 0, max: 0, bounds: [1], bucketCounts: [0, 0] },
        ],
      },
      {
        kind: 'sum',
        name: 'mcpguard.refusals',
        unit: '{request}',
        description: 'refused',
        monotonic: true,
        points: [{ attributes: [['rule', 'r1']], startNs: T0, timeNs: T0 + 5n, value: 12 }],
      },
      {
        kind: 'sum',
        name: 'mcpguard.level',
        unit: '1',
        description: '',
        monotonic: false,
        points: [{ attributes: [], startNs: T0, timeNs: T0 + 5n, value: 2.5 }],
      },
    ];
    const out = decode('metrics', enc, batch({ metrics })).resourceMetrics[0].scopeMetrics[0].metrics;
    assert.deepEqual(out[0], {
      name: 'mcp.server.operation.duration',
      unit: 's',
      description: 'calls',
      histogram: {
        aggregationTemporality: 2,
        dataPoints: [
          {
            attributes: [{ key: 'mcp.method.name', value: { stringValue: 'tools/call' } }],
            startTimeUnixNano: String(T0),
            timeUnixNano: String(T0 + 5n),
            count: '3',
            sum: 0.75,
            min: 0.125,
            max: 0.5,
            explicitBounds: [0.01, 0.1, 1],
            bucketCounts: ['0', '0', '3', '0'],
          },
          { startTimeUnixNano: String(T0), timeUnixNano: String(T0 + 5n), count: '0', sum: 0, explicitBounds: [1], bucketCounts: ['0', '0'] },
        ],
      },
    });
    assert.deepEqual(out[1].sum, {
      aggregationTemporality: 2,
      isMonotonic: true,
      dataPoints: [{ attributes: [{ key: 'rule', value: { stringValue: 'r1' } }], startTimeUnixNano: String(T0), timeUnixNano: String(T0 + 5n), asInt: '12' }],
    });
    assert.equal(out[2].sum.dataPoints[0].asDouble, 2.5);
    assert.equal(out[2].sum.isMonotonic ?? false, false);
  });

  test(`encode ${enc[0]}: hostile strings: lone surrogates become U+FFFD, NUL and 1 MB strings pass whole`, () => {
    const mb = 'x'.repeat(1024 * 1024 - 3) + 'é€';
    const hostile = ['a\uD800b', '\uDC00', 'end\uD83D', '\uD83D\uDE00 ok', 'nul\u0000nul', mb, 'x'.repeat(127), 'y'.repeat(128), 'z'.repeat(16384)];
    const span = {
      traceId: TRACE,
      spanId: SPAN,
      name: hostile[0],
      kind: 2,
      startNs: T0,
      endNs: T0,
      attributes: hostile.map((s, i) => [`k${i}\uD800`, s]),
      events: [],
      status: { code: 2, message: hostile[2] },
    };
    const raw = enc[2]('traces', batch({ spans: [span] }));
    new TextDecoder('utf-8', { fatal: true }).decode(raw.subarray(0, enc[0] === 'json' ? raw.length : 0)); // JSON: valid UTF-8 throughout
    const out = decode('traces', enc, batch({ spans: [span] })).resourceSpans[0].scopeSpans[0].spans[0];
    const expected = ['a\uFFFDb', '\uFFFD', 'end\uFFFD', '\uD83D\uDE00 ok', 'nul\u0000nul', mb, 'x'.repeat(127), 'y'.repeat(128), 'z'.repeat(16384)];
    assert.equal(out.name, 'a\uFFFDb');
    assert.equal(out.status.message, 'end\uFFFD');
    assert.deepEqual(
      out.attributes.map((a) => [a.key, a.value.stringValue]),
      expected.map((s, i) => [`k${i}\uFFFD`, s]),
    );
  });
}

test('encode protobuf: every string is valid UTF-8 on the wire (a lone surrogate is EF BF BD, never a CESU half)', () => {
  const raw = encodeProto('logs', batch({ logs: [{ timeNs: T0, severityNumber: 9, severityText: 'INFO', body: '\uD800\uDFFF\uDBFF', attributes: [] }] }));
  // The body's bytes: U+103FF as four bytes, then one U+FFFD.
  assert.ok(raw.includes(Buffer.from('f0908fbfefbfbd', 'hex')));
  assert.ok(!raw.includes(Buffer.from('eda0', 'hex')));
});

test('encode protobuf: a snapshot of many series decodes whole, whatever byte the buffer grows at (bucket counts and bounds included)', () => {
  // Each series is some 200 bytes, so across 1–80 series the writer's buffer grows at every kind of field,
  // among them the packed bucket counts and bounds. Before the fix, a count written as the buffer grew went into the old buffer.
  for (let n = 1; n <= 80; n++) {
    const points = Array.from({ length: n }, (_, i) => ({
      attributes: [['gen_ai.tool.name', `tool_${i}`]],
      startNs: T0,
      timeNs: T0 + BigInt(i),
      count: 1000 + i,
      sum: i / 8,
      min: 0.5,
      max: i + 1,
      bounds: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      bucketCounts: Array.from({ length: 15 }, (_, k) => i * 100 + k),
    }));
    const out = decode('metrics', ENCODINGS[0], batch({ metrics: [{ kind: 'histogram', name: 'h', unit: 's', description: '', points }] }));
    const got = out.resourceMetrics[0].scopeMetrics[0].metrics[0].histogram.dataPoints;
    assert.equal(got.length, n);
    got.forEach((p, i) => {
      assert.deepEqual(p.bucketCounts.map(Number), points[i].bucketCounts, `${n} series, series ${i}`);
      assert.deepEqual(p.explicitBounds, points[i].bounds, `${n} series, series ${i}`);
      assert.equal(Number(p.count), 1000 + i);
    });
  }
});
