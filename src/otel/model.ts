/**
 * What mcpguard exports to an OpenTelemetry backend, as plain data: spans,
 * log records and metric points, before any encoding. The span builder fills
 * these from the session's calls and the child's stderr; the encoders turn a
 * batch into OTLP (JSON or protobuf); the exporter delivers it. Keeping the
 * model free of both sides lets the live export and the backfill from records
 * share one encoder, and lets tests decode what was sent without mcpguard's code.
 */
import type { AttrRun, OwnKey } from './interned.js';

/** An attribute value as OTLP carries it: integers (safe ones) become intValue, other numbers doubleValue. */
export type AttributeValue = string | number | boolean | readonly string[];
export type Attributes = ReadonlyArray<readonly [key: string, value: AttributeValue]>;

/** OTLP SpanKind numbers. */
export const SpanKind = { internal: 1, server: 2, client: 3 } as const;
export type SpanKind = (typeof SpanKind)[keyof typeof SpanKind];

/** OTLP Status.code numbers: unset, ok, error. */
export type StatusCode = 0 | 1 | 2;

export interface SpanEvent {
  name: string;
  timeNs: bigint;
  attributes: Attributes;
}

export interface SpanData {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  parentSpanId?: string;
  /** The W3C tracestate the parent came with, passed on unchanged. */
  traceState?: string;
  name: string;
  kind: SpanKind;
  startNs: bigint;
  endNs: bigint;
  attributes: Attributes;
  events: readonly SpanEvent[];
  status: { code: StatusCode; message?: string };
}

/**
 * A span written field by field, in this order: begin, the span's attributes,
 * then each event followed by its attributes, then end. call-span.ts writes a
 * call's span this way, into a SpanData or straight into protobuf bytes
 * (arena.ts: no span object, no BigInt). Times are milliseconds since the
 * epoch, rounded to whole ms as mcpguard's clocks give them.
 */
/** begin()'s arguments, kept by a SpanWriter until its span ends (object-span.ts, span-template.ts). */
export class SpanHead {
  traceId = '';
  spanId = '';
  parentSpanId = '';
  traceState: string | undefined = undefined;
  name = '';
  kind = 0 as SpanKind;
  startMs = 0;
  endMs = 0;

  set(
    traceId: string,
    spanId: string,
    parentSpanId: string,
    traceState: string | undefined,
    name: string,
    kind: SpanKind,
    startMs: number,
    endMs: number,
  ): void {
    this.traceId = traceId;
    this.spanId = spanId;
    this.parentSpanId = parentSpanId;
    this.traceState = traceState;
    this.name = name;
    this.kind = kind;
    this.startMs = startMs;
    this.endMs = endMs;
  }
}

export interface SpanWriter {
  begin(
    traceId: string,
    spanId: string,
    parentSpanId: string,
    traceState: string | undefined,
    name: string,
    kind: SpanKind,
    startMs: number,
    endMs: number,
  ): void;
  /** An attribute of the span, or, once event() was called, of the last event. */
  attr(kv: readonly [string, AttributeValue]): void;
  /** Shared pairs in a row (interned.ts AttrRun), as attr() of each. */
  attrs(run: AttrRun): void;
  /** An attribute of this span's own (an id, a duration), given as its key and value: no pair is made to write it. */
  own(key: OwnKey, value: AttributeValue): void;
  event(name: string, timeMs: number): void;
  /** The span's status, which completes it. */
  end(code: StatusCode, message: string | undefined): void;
}

export interface LogData {
  timeNs: bigint;
  /** OTLP SeverityNumber (9 INFO, 13 WARN, 17 ERROR). */
  severityNumber: number;
  severityText: string;
  body: string;
  attributes: Attributes;
  traceId?: string;
  spanId?: string;
}

export interface HistogramPoint {
  attributes: Attributes;
  startNs: bigint;
  timeNs: bigint;
  count: number;
  sum: number;
  min: number;
  max: number;
  /** Upper bounds of the buckets, ascending; bucketCounts has one more entry than this. */
  bounds: readonly number[];
  bucketCounts: readonly number[];
}

export interface SumPoint {
  attributes: Attributes;
  startNs: bigint;
  timeNs: bigint;
  value: number;
}

export type MetricData =
  | { kind: 'histogram'; name: string; unit: string; description: string; points: readonly HistogramPoint[] }
  | { kind: 'sum'; name: string; unit: string; description: string; monotonic: boolean; points: readonly SumPoint[] };

/** One export request's worth of telemetry under one resource and instrumentation scope. */
export interface Batch {
  resource: Attributes;
  scope: { name: string; version: string };
  spans: readonly SpanData[];
  logs: readonly LogData[];
  metrics: readonly MetricData[];
}

/** A W3C trace context parent, as found in a request's `params._meta`. */
export interface TraceParent {
  traceId: string;
  spanId: string;
  sampled: boolean;
  traceState?: string;
}

const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/**
 * Reads a `traceparent` header value by W3C Trace Context level 1: lowercase
 * hex only, version `ff` and all-zero ids refused, version 00 exactly 55
 * characters, a later version may carry more fields after a dash. Anything
 * else is null: a client's malformed context starts no trace of its own.
 */
export function parseTraceparent(value: unknown, traceState?: unknown): TraceParent | null {
  if (typeof value !== 'string' || value.length < 55) return null;
  const m = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/.exec(value);
  if (m === null) return null;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return null;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  const parent: TraceParent = { traceId: traceId!, spanId: spanId!, sampled: (Number.parseInt(flags!, 16) & 1) === 1 };
  if (typeof traceState === 'string' && traceState.length > 0 && traceState.length <= 512) parent.traceState = traceState;
  return parent;
}
