/**
 * The seam between the two halves of the export: the span builder (which
 * turns calls, gate decisions and stderr into model data) hands finished
 * items to an `Exporter`, which batches, encodes and delivers them in the
 * background. Nothing here may block or throw into the relay.
 */
import type { Attributes, LogData, MetricData, SpanData, SpanWriter } from './model.js';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** One signal's destination, resolved from OTEL_EXPORTER_OTLP_* and the command line. */
export interface SignalTarget {
  /** Full URL including the signal's path (e.g. http://collector:4318/v1/traces). */
  url: string;
  headers: Readonly<Record<string, string>>;
  protocol: OtlpProtocol;
  compression: 'gzip' | 'none';
  timeoutMs: number;
  /** PEM from OTEL_EXPORTER_OTLP_[SIGNAL_]CERTIFICATE (trusted CA), CLIENT_CERTIFICATE and CLIENT_KEY (mTLS); https only. */
  tls?: Readonly<{ ca?: Buffer; cert?: Buffer; key?: Buffer }>;
}

/** Everything the export needs, or null when it is off (no endpoint, `--otlp off`, OTEL_SDK_DISABLED=true). */
export interface OtlpConfig {
  traces: SignalTarget | null;
  logs: SignalTarget | null;
  metrics: SignalTarget | null;
  /** Resource attributes: service.name and OTEL_RESOURCE_ATTRIBUTES, plus mcpguard's own. */
  resource: Attributes;
  /** The sampler's decision for a trace mcpguard starts itself (parent-based for a client's trace context). */
  sampler: {
    kind: 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';
    ratio: number;
  };
}

/** What delivery did, per signal: items accepted by the collector, dropped (queue full, sampler aside), and failed (gave up after retries). */
export interface DeliveryStats {
  sent: { spans: number; logs: number; metrics: number };
  dropped: { spans: number; logs: number; metrics: number };
  failed: { spans: number; logs: number; metrics: number };
  /** Export requests that were answered with something other than success (each retry counts). */
  errors: number;
}

/** A SpanWriter into the exporter's queue of encoded spans: a span is queued when end() returns. */
export interface EncodedSpans extends SpanWriter {
  /** The span being written is abandoned (its writer threw midway): nothing of it is sent. */
  abort(): void;
}

export interface Exporter {
  /** Queues a finished span (never blocks; over the queue's bound the oldest is dropped and counted). */
  span(span: SpanData): void;
  /**
   * Where a span can be written straight into the request's encoding (OTLP/protobuf; arena.ts), with no
   * SpanData made: the default path of a call's span. Null (or absent) when spans go as objects: OTLP/JSON,
   * no traces target, or after shutdown began.
   */
  spanWriter?(): EncodedSpans | null;
  /** False when no traces endpoint is configured: spans would be discarded, so the builder makes none. Absent: true. */
  readonly tracing?: boolean;
  log(log: LogData): void;
  /** Replaces the pending metrics snapshot (cumulative points: the newest snapshot is the one sent). */
  metrics(metrics: readonly MetricData[]): void;
  /** Sends what is queued now, waiting at most `deadlineMs`; what is still unsent then counts as dropped. */
  shutdown(deadlineMs: number): Promise<DeliveryStats>;
  stats(): DeliveryStats;
}
