/**
 * OTLP/JSON: the proto3 JSON mapping with OTLP's deviations (the OTLP
 * specification, "JSON Protobuf Encoding"): lowerCamelCase keys, trace and
 * span ids as hex (not base64), enums as numbers, 64-bit integers as decimal
 * strings (a nanosecond time does not fit a double), non-finite doubles as
 * "NaN" / "Infinity". Every string is made well-formed first: JSON.stringify
 * would keep a lone surrogate as a `\udXXX` escape, which decodes to text that
 * is not valid UTF-8; it becomes U+FFFD, as in the protobuf encoding.
 */
import type { Signal } from './encode-proto.js';
import type { Attributes, AttributeValue, Batch, HistogramPoint, LogData, MetricData, SpanData, SumPoint } from './model.js';

type Json = Record<string, unknown>;

const CUMULATIVE = 2;
// With the u flag a surrogate pair is one code point: only the unpaired halves match.
const LONE_SURROGATE = /\p{Surrogate}/gu;

/** One signal of a batch as the body of an OTLP/HTTP JSON request. */
export function encodeJson(signal: Signal, batch: Batch): Buffer {
  const scope = { name: text(batch.scope.name), version: text(batch.scope.version) };
  const resource = { attributes: attributes(batch.resource) };
  let body: Json;
  if (signal === 'traces') body = { resourceSpans: [{ resource, scopeSpans: [{ scope, spans: batch.spans.map(span) }] }] };
  else if (signal === 'logs') body = { resourceLogs: [{ resource, scopeLogs: [{ scope, logRecords: batch.logs.map(log) }] }] };
  else body = { resourceMetrics: [{ resource, scopeMetrics: [{ scope, metrics: batch.metrics.map(metric) }] }] };
  return Buffer.from(JSON.stringify(body), 'utf8');
}

function text(s: string): string {
  return s.replace(LONE_SURROGATE, '\uFFFD');
}

/** proto3 JSON for a double: a number, or the strings the mapping names for the values JSON lacks. */
function double(x: number): number | string {
  if (Number.isFinite(x)) return x;
  return Number.isNaN(x) ? 'NaN' : x > 0 ? 'Infinity' : '-Infinity';
}

function attributes(attrs: Attributes): Json[] {
  return attrs.map(([key, value]) => ({ key: text(key), value: anyValue(value) }));
}

function anyValue(value: AttributeValue): Json {
  if (typeof value === 'string') return { stringValue: text(value) };
  if (typeof value === 'boolean') return { boolValue: value };
  if (typeof value === 'number') return Number.isSafeInteger(value) ? { intValue: String(value) } : { doubleValue: double(value) };
  return { arrayValue: { values: value.map((item) => ({ stringValue: text(item) })) } };
}

function span(s: SpanData): Json {
  const out: Json = { traceId: s.traceId, spanId: s.spanId };
  if (s.traceState !== undefined && s.traceState !== '') out.traceState = text(s.traceState);
  if (s.parentSpanId !== undefined && s.parentSpanId !== '') out.parentSpanId = s.parentSpanId;
  out.name = text(s.name);
  out.kind = s.kind;
  out.startTimeUnixNano = String(s.startNs);
  out.endTimeUnixNano = String(s.endNs);
  out.attributes = attributes(s.attributes);
  out.events = s.events.map((e) => ({ timeUnixNano: String(e.timeNs), name: text(e.name), attributes: attributes(e.attributes) }));
  const status: Json = {};
  if (s.status.message !== undefined && s.status.message !== '') status.message = text(s.status.message);
  if (s.status.code !== 0) status.code = s.status.code;
  out.status = status;
  return out;
}

function log(l: LogData): Json {
  const out: Json = {
    timeUnixNano: String(l.timeNs),
    observedTimeUnixNano: String(l.timeNs),
    severityNumber: l.severityNumber,
    severityText: text(l.severityText),
    body: { stringValue: text(l.body) },
    attributes: attributes(l.attributes),
  };
  if (l.traceId !== undefined) out.traceId = l.traceId;
  if (l.spanId !== undefined) out.spanId = l.spanId;
  return out;
}

function metric(m: MetricData): Json {
  const out: Json = { name: text(m.name), description: text(m.description), unit: text(m.unit) };
  if (m.kind === 'sum') out.sum = { dataPoints: m.points.map(sumPoint), aggregationTemporality: CUMULATIVE, isMonotonic: m.monotonic };
  else out.histogram = { dataPoints: m.points.map(histogramPoint), aggregationTemporality: CUMULATIVE };
  return out;
}

function sumPoint(p: SumPoint): Json {
  const out: Json = { attributes: attributes(p.attributes), startTimeUnixNano: String(p.startNs), timeUnixNano: String(p.timeNs) };
  if (Number.isSafeInteger(p.value)) out.asInt = String(p.value);
  else out.asDouble = double(p.value);
  return out;
}

function histogramPoint(p: HistogramPoint): Json {
  const out: Json = {
    attributes: attributes(p.attributes),
    startTimeUnixNano: String(p.startNs),
    timeUnixNano: String(p.timeNs),
    count: String(p.count),
    sum: double(p.sum),
    bucketCounts: p.bucketCounts.map(String),
    explicitBounds: p.bounds.map(double),
  };
  if (p.count > 0) {
    out.min = double(p.min);
    out.max = double(p.max);
  }
  return out;
}
