/**
 * TEMPORARY (h-otel-live): the smallest `Exporter` the span builder's wiring
 * needs, until the delivery half (h-otel-wire: protobuf and JSON encoders,
 * gzip, retries with backoff and Retry-After) lands on main and replaces this
 * file. Batches each signal in the background over OTLP/HTTP JSON, holds at
 * most MAX_QUEUED items a signal (the oldest dropped and counted), one request
 * at a time per signal, each with its timeout; nothing here throws into the caller.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { DeliveryStats, Exporter, OtlpConfig, SignalTarget } from './api.js';
import type { Attributes, AttributeValue, LogData, MetricData, SpanData } from './model.js';

const MAX_QUEUED = 2048;
const MAX_BATCH = 512;

type Signal = 'spans' | 'logs' | 'metrics';

/** A background exporter for `config` (non-null: export is on), its items under `scope`. */
export function createExporter(config: OtlpConfig, scope: { name: string; version: string }): Exporter {
  return new JsonExporter(config, scope);
}

class JsonExporter implements Exporter {
  private readonly queues: { spans: SpanData[]; logs: LogData[] } = { spans: [], logs: [] };
  private pendingMetrics: readonly MetricData[] | null = null;
  private readonly busy = new Set<Signal>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly s: DeliveryStats = {
    sent: { spans: 0, logs: 0, metrics: 0 },
    dropped: { spans: 0, logs: 0, metrics: 0 },
    failed: { spans: 0, logs: 0, metrics: 0 },
    errors: 0,
  };
  private scheduled = false;
  private closed = false;

  constructor(
    private readonly config: OtlpConfig,
    private readonly scope: { name: string; version: string },
  ) {}

  span(span: SpanData): void {
    this.queue('spans', span);
  }

  log(log: LogData): void {
    this.queue('logs', log);
  }

  metrics(metrics: readonly MetricData[]): void {
    if (this.closed || this.config.metrics === null) return;
    this.pendingMetrics = metrics;
    this.schedule();
  }

  stats(): DeliveryStats {
    return structuredClone(this.s);
  }

  async shutdown(deadlineMs: number): Promise<DeliveryStats> {
    const deadline = Date.now() + deadlineMs;
    while (Date.now() < deadline && (this.queues.spans.length > 0 || this.queues.logs.length > 0 || this.pendingMetrics !== null || this.inFlight.size > 0)) {
      this.pump();
      const left = deadline - Date.now();
      await Promise.race([Promise.all(this.inFlight), new Promise((r) => setTimeout(r, Math.max(1, left)).unref())]);
    }
    this.closed = true;
    this.s.dropped.spans += this.queues.spans.splice(0).length;
    this.s.dropped.logs += this.queues.logs.splice(0).length;
    if (this.pendingMetrics !== null) this.s.dropped.metrics += this.pendingMetrics.length;
    this.pendingMetrics = null;
    return this.stats();
  }

  private queue(signal: 'spans' | 'logs', item: SpanData | LogData): void {
    if (this.closed || this.target(signal) === null) return;
    const q = this.queues[signal] as (SpanData | LogData)[];
    if (q.length >= MAX_QUEUED) {
      q.shift();
      this.s.dropped[signal]++;
    }
    q.push(item);
    this.schedule();
  }

  private target(signal: Signal): SignalTarget | null {
    return signal === 'spans' ? this.config.traces : signal === 'logs' ? this.config.logs : this.config.metrics;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      this.pump();
    }, 200).unref();
  }

  private pump(): void {
    for (const signal of ['spans', 'logs', 'metrics'] as const) {
      if (this.busy.has(signal)) continue;
      const target = this.target(signal);
      if (target === null) continue;
      let items: readonly unknown[];
      if (signal === 'metrics') {
        if (this.pendingMetrics === null) continue;
        items = this.pendingMetrics;
        this.pendingMetrics = null;
      } else {
        items = this.queues[signal].splice(0, MAX_BATCH);
      }
      if (items.length === 0) continue;
      this.busy.add(signal);
      const body = Buffer.from(JSON.stringify(encode(signal, this.config.resource, this.scope, items)));
      const sending = post(target, body).then((ok) => {
        this.busy.delete(signal);
        this.inFlight.delete(sending);
        if (ok) this.s.sent[signal] += items.length;
        else {
          this.s.failed[signal] += items.length;
          this.s.errors++;
        }
        if (!this.closed && (this.queues.spans.length > 0 || this.queues.logs.length > 0 || this.pendingMetrics !== null)) this.schedule();
      });
      this.inFlight.add(sending);
    }
  }
}

/** One POST; true on a 2xx. Never rejects. */
function post(target: SignalTarget, body: Buffer): Promise<boolean> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(target.url);
    } catch {
      resolve(false);
      return;
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(
      url,
      { method: 'POST', headers: { ...target.headers, 'content-type': 'application/json', 'content-length': body.length }, timeout: target.timeoutMs },
      (res) => {
        res.resume();
        res.on('end', () => resolve((res.statusCode ?? 0) >= 200 && (res.statusCode ?? 0) < 300));
        res.on('error', () => resolve(false));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end(body);
  });
}

function encode(signal: Signal, resource: Attributes, scope: { name: string; version: string }, items: readonly unknown[]): unknown {
  const res = { attributes: attrs(resource) };
  if (signal === 'spans') return { resourceSpans: [{ resource: res, scopeSpans: [{ scope, spans: (items as SpanData[]).map(spanJson) }] }] };
  if (signal === 'logs') return { resourceLogs: [{ resource: res, scopeLogs: [{ scope, logRecords: (items as LogData[]).map(logJson) }] }] };
  return { resourceMetrics: [{ resource: res, scopeMetrics: [{ scope, metrics: (items as MetricData[]).map(metricJson) }] }] };
}

function value(v: AttributeValue): unknown {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isSafeInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  return { arrayValue: { values: v.map((s) => ({ stringValue: s })) } };
}

const attrs = (a: Attributes): unknown[] => a.map(([key, v]) => ({ key, value: value(v) }));

function spanJson(s: SpanData): unknown {
  return {
    traceId: s.traceId,
    spanId: s.spanId,
    ...(s.parentSpanId === undefined ? {} : { parentSpanId: s.parentSpanId }),
    ...(s.traceState === undefined ? {} : { traceState: s.traceState }),
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: String(s.startNs),
    endTimeUnixNano: String(s.endNs),
    attributes: attrs(s.attributes),
    events: s.events.map((e) => ({ name: e.name, timeUnixNano: String(e.timeNs), attributes: attrs(e.attributes) })),
    status: { code: s.status.code, ...(s.status.message === undefined ? {} : { message: s.status.message }) },
  };
}

function logJson(l: LogData): unknown {
  return {
    timeUnixNano: String(l.timeNs),
    observedTimeUnixNano: String(l.timeNs),
    severityNumber: l.severityNumber,
    severityText: l.severityText,
    body: { stringValue: l.body },
    attributes: attrs(l.attributes),
    ...(l.traceId === undefined ? {} : { traceId: l.traceId }),
    ...(l.spanId === undefined ? {} : { spanId: l.spanId }),
  };
}

function metricJson(m: MetricData): unknown {
  const head = { name: m.name, unit: m.unit, description: m.description };
  if (m.kind === 'sum') {
    const dataPoints = m.points.map((p) => ({
      attributes: attrs(p.attributes),
      startTimeUnixNano: String(p.startNs),
      timeUnixNano: String(p.timeNs),
      asInt: String(p.value),
    }));
    return { ...head, sum: { dataPoints, aggregationTemporality: 2, isMonotonic: m.monotonic } };
  }
  const dataPoints = m.points.map((p) => ({
    attributes: attrs(p.attributes),
    startTimeUnixNano: String(p.startNs),
    timeUnixNano: String(p.timeNs),
    count: String(p.count),
    sum: p.sum,
    min: p.min,
    max: p.max,
    bucketCounts: p.bucketCounts.map(String),
    explicitBounds: p.bounds,
  }));
  return { ...head, histogram: { dataPoints, aggregationTemporality: 2 } };
}
