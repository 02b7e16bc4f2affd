// Micro-benchmark of the OTLP export's delivery half (src/otel): what one
// finished span costs the relay's process between the span builder and the
// wire, per span, in batches of 512 like the exporter sends.
//
//   npm run build && node bench/otel-export.js [--quick] [--before=OTHER/dist]
//
// Rows (median over rounds; µs and JS-heap bytes allocated per span):
// - call span into the batch: what a tools/call's span costs the span builder with
//   OTLP/protobuf (writeCallSpan into the exporter's arena: encoded as it is written);
// - call span as a SpanData: the same span as an object (the OTLP/JSON path);
// - queue: Exporter.span() into the bounded ring (no encode: the batch is never full);
// - encode protobuf / encode JSON: one ExportTraceServiceRequest of 512 spans;
// - gzip: the protobuf batch compressed (run off the main thread by the
//   exporter; timed here synchronously for its CPU).
// The span is the shape the builder makes for a tools/call: 12 attributes and
// two guardrail events. Bytes allocated are counted as in bench/fixtures/gc-probe.js
// (Node 20 has no total_allocated_bytes): the heap's growth between collections.
import { randomBytes } from 'node:crypto';
import v8 from 'node:v8';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';

/** The exporter's level (src/otel/exporter.ts: level 1, zlib's fastest). */
const GZIP = { level: 1 };
import { processMasker } from '../dist/mask/mask.js';
import { SpanArena } from '../dist/otel/arena.js';
import { callSpan, writeCallSpan } from '../dist/otel/call-span.js';
import { otlpConfig } from '../dist/otel/config.js';
import { encodeJson } from '../dist/otel/encode-json.js';
import { encodeProto } from '../dist/otel/encode-proto.js';
import { createExporter } from '../dist/otel/exporter.js';
import { median } from './lib/stats.js';

const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 20 : 200;
const BATCH = 512;

function span(i) {
  // Random ids and times, as real ones are: gzip gets no help from the batch repeating itself.
  const t = 1_764_000_000_000_000_000n + BigInt(i) * 1_000_000n + BigInt(randomBytes(2).readUInt16LE());
  return {
    traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'),
    parentSpanId: randomBytes(8).toString('hex'),
    name: 'tools/call read_file',
    kind: 2,
    startNs: t,
    endNs: t + BigInt(randomBytes(3).readUIntLE(0, 3)),
    attributes: [
      ['mcp.method.name', 'tools/call'],
      ['gen_ai.tool.name', 'read_file'],
      ['gen_ai.operation.name', 'execute_tool'],
      ['jsonrpc.request.id', String(i * 7919)],
      ['mcp.protocol.version', '2025-06-18'],
      ['mcp.session.id', '01JQ8Z6Y3M4V0W8X2K5N7P9R1T'],
      ['network.transport', 'pipe'],
      ['rpc.response.status_code', '0'],
      ['mcpguard.state', 'answered'],
      ['mcpguard.generation', 1],
      ['mcpguard.stderr.bytes', randomBytes(2).readUInt16LE()],
      ['mcpguard.stderr.kept', true],
    ],
    events: [
      {
        name: 'gen_ai.guardrail',
        timeNs: t + 1000n,
        attributes: [
          ['gen_ai.guardrail.verdict.type', 'allow'],
          ['gen_ai.guardrail.target.subtype', 'tool_call'],
          ['mcpguard.step', 'schema'],
        ],
      },
      {
        name: 'gen_ai.guardrail',
        timeNs: t + 2000n,
        attributes: [
          ['gen_ai.guardrail.verdict.type', 'allow'],
          ['gen_ai.guardrail.target.subtype', 'tool_call'],
          ['mcpguard.step', 'policy'],
        ],
      },
    ],
    status: { code: 0 },
  };
}

const spans = Array.from({ length: BATCH }, (_, i) => span(i));
const config = otlpConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }, {});
const scope = { name: 'mcpguard', version: '0.1.0' };
const batch = { resource: config.resource, scope, spans, logs: [], metrics: [] };

/** Runs fn ROUNDS times; per span: median µs, and heap bytes allocated over all rounds. */
function measure(fn) {
  for (let i = 0; i < 5; i++) fn();
  const profiler = new v8.GCProfiler();
  const used = v8.getHeapStatistics().used_heap_size;
  profiler.start();
  const samples = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e3 / BATCH);
  }
  const usedNow = v8.getHeapStatistics().used_heap_size;
  let allocated = 0;
  let after = used;
  for (const gc of profiler.stop().statistics) {
    allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - after);
    after = gc.afterGC.heapStatistics.usedHeapSize;
  }
  allocated += Math.max(0, usedNow - after);
  return { us: median(samples), bytes: allocated / ROUNDS / BATCH };
}

// A tools/call that passed the schema and the policy, as the builder sees it when the call ends.
const session = { sessionId: 's_20261202T000000Z_0123456789ab', schema: true, policy: 'policy.json' };
const masker = processMasker();
const facts = Array.from({ length: BATCH }, (_, i) => ({
  callId: `c_${randomBytes(6).toString('hex')}`,
  requestId: i * 7919,
  method: 'tools/call',
  tool: 'read_file',
  target: null,
  state: 'completed',
  startedAt: 1_764_000_000_000 + i,
  dispatchedAt: 1_764_000_000_001 + i,
  endedAt: 1_764_000_000_003 + i,
  protocolVersion: '2025-06-18',
  traceparent: null,
  tracestate: null,
  decision: null,
  generation: 1,
  cancelRequested: false,
  errorCode: null,
  stderr: null,
  steps: { schemaMs: 0.12, policyMs: 0.05 },
}));

const proto = encodeProto('traces', batch);
const json = encodeJson('traces', batch);
const zipped = gzipSync(proto, GZIP);
const rows = [
  [
    'call span into the batch (arena, OTLP/protobuf)',
    measure(() => {
      const arena = new SpanArena(BATCH, BATCH, () => {});
      for (const f of facts) writeCallSpan(f, session, masker, arena);
    }),
    '',
  ],
  [
    'call span as a SpanData (OTLP/JSON path)',
    measure(() => {
      for (const f of facts) callSpan(f, session, masker);
    }),
    '',
  ],
  [
    'queue: Exporter.span() into the ring',
    measure(() => {
      const ex = createExporter(config, scope, { maxBatch: 1e9, maxQueue: BATCH, delayMs: 1e9 });
      for (const s of spans) ex.span(s);
    }),
    '',
  ],
  ['encode protobuf (batch of 512)', measure(() => encodeProto('traces', batch)), `${(proto.length / BATCH).toFixed(0)} B on the wire`],
  ['encode JSON (batch of 512)', measure(() => encodeJson('traces', batch)), `${(json.length / BATCH).toFixed(0)} B on the wire`],
  ['gzip the protobuf batch (off the main thread in the exporter)', measure(() => gzipSync(proto, GZIP)), `${(zipped.length / BATCH).toFixed(0)} B gzipped`],
];

console.log(`otel export: per span, batches of ${BATCH}, median of ${ROUNDS} rounds (Node ${process.versions.node})`);
const width = Math.max(...rows.map(([label]) => label.length));
for (const [label, { us, bytes }, note] of rows)
  console.log(`  ${label.padEnd(width)}  ${us.toFixed(2).padStart(6)} µs  ${bytes.toFixed(0).padStart(6)} B allocated  ${note}`);

// --before=DIR (the dist/ of another build): the first row again, this build and that one in alternate rounds
// (A B A B …), so that a change to the span writer is read against the build before it under the same load.
const before = process.argv.find((a) => a.startsWith('--before='))?.slice(9);
if (before !== undefined) {
  const dir = pathToFileURL(`${resolve(before)}/`).href;
  const builds = [
    ['this build', { SpanArena, writeCallSpan, masker }],
    [
      'before',
      {
        SpanArena: (await import(`${dir}otel/arena.js`)).SpanArena,
        writeCallSpan: (await import(`${dir}otel/call-span.js`)).writeCallSpan,
        masker: (await import(`${dir}mask/mask.js`)).processMasker(),
      },
    ],
  ];
  const times = builds.map(() => []);
  for (let r = 0; r < ROUNDS * 2; r++)
    builds.forEach(([, b], k) => {
      const arena = new b.SpanArena(BATCH, BATCH, () => {});
      const start = process.hrtime.bigint();
      for (const f of facts) b.writeCallSpan(f, session, b.masker, arena);
      times[k].push(Number(process.hrtime.bigint() - start) / 1e3 / BATCH);
    });
  const [now, then] = times.map((t) => median(t.slice(ROUNDS)));
  console.log(
    `  call span into the batch, paired with ${before}: ${now.toFixed(2)} µs this build, ${then.toFixed(2)} µs before (${(now / then).toFixed(2)}×), median of the last ${ROUNDS} of ${ROUNDS * 2} alternate rounds`,
  );
}
