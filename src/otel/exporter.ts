/**
 * Delivery: the `Exporter` the span builder hands finished spans, logs and
 * metric snapshots to. Each signal has its own lane: a bounded ring (over it
 * the oldest item is dropped and counted), batches sent when full or after a
 * delay, one request in flight at a time, gzip off the main thread, retries
 * with backoff and jitter on 429/502/503/504 and on no answer (honouring
 * Retry-After), none on other answers. Nothing here throws into the caller or
 * waits on the collector: a collector that is down, slow or hostile costs the
 * relay a bounded queue and nothing else. `shutdown` is the only wait, and it
 * ends at its deadline whatever the collector does.
 */
import { promisify } from 'node:util';
import { gzip as gzipCb } from 'node:zlib';
import type { DeliveryStats, Exporter, OtlpConfig, SignalTarget } from './api.js';
import { type Chunk, SpanArena } from './arena.js';
import { encodeJson } from './encode-json.js';
import { encodeProto, REUSE_MAX, type Signal } from './encode-proto.js';
import type { Batch, LogData, MetricData, SpanData } from './model.js';
import { agentFor, post, rejectedCount, retryAfterMs } from './post.js';
import { Ring } from './queue.js';

const gzip = promisify(gzipCb);
/**
 * Level 1 (zlib's fastest): on a real 512-span batch (442 KB of OTLP/protobuf)
 * 0.64 ms of CPU against 1.8 ms at the default level (1.25 against 3.5 µs a
 * span), for 8 % more bytes on the wire (26.9 against 24.9 KB). The thread
 * pool's CPU is the relay's CPU on a loaded or one-CPU host.
 */
const GZIP = { level: 1 };

/** The bounds and pacing of delivery; the defaults are the OpenTelemetry batch processor's where it has one. */
export interface DeliveryOptions {
  /** Items waiting per signal before the oldest is dropped (OTEL_BSP_MAX_QUEUE_SIZE's default). */
  maxQueue: number;
  /** Items per export request: also the bound on one synchronous encode. */
  maxBatch: number;
  /** How long a partial batch waits for company, ms. */
  delayMs: number;
  /** How often a changed metrics snapshot is sent, ms (OTEL_METRIC_EXPORT_INTERVAL's default); shutdown sends the last one. */
  metricsIntervalMs: number;
  /** Tries per batch, the first included. */
  maxAttempts: number;
  /** The first backoff, ms; doubled per try, up to maxBackoffMs, half of it jittered. */
  backoffMs: number;
  maxBackoffMs: number;
  /** The source of jitter, 0 ≤ x < 1 (tests pass a fixed one). */
  random: () => number;
  /** The largest request kept to write the next one over (REUSE_MAX); a larger one is made afresh each time. */
  reuseMax: number;
}

export const DEFAULT_DELIVERY: DeliveryOptions = {
  maxQueue: 2048,
  maxBatch: 512,
  delayMs: 1000,
  metricsIntervalMs: 60_000,
  maxAttempts: 5,
  backoffMs: 500,
  maxBackoffMs: 30_000,
  random: Math.random,
  reuseMax: REUSE_MAX,
};

/** The requests' own ceiling: above it a batch is not sent (OTLP's recommended 64 MiB), and counts as failed. */
const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

type Counter = 'spans' | 'logs' | 'metrics';

/**
 * The exporter for `config` (from otlpConfig). Signals without a target
 * accept items and discard them uncounted: the person asked for other signals only.
 */
export function createExporter(config: OtlpConfig, scope: { name: string; version: string }, options: Partial<DeliveryOptions> = {}): Exporter {
  const opts = { ...DEFAULT_DELIVERY, ...options };
  const stats: DeliveryStats = {
    sent: { spans: 0, logs: 0, metrics: 0 },
    dropped: { spans: 0, logs: 0, metrics: 0 },
    failed: { spans: 0, logs: 0, metrics: 0 },
    errors: 0,
  };
  const shared: Shared = { config, scope, opts, stats, abort: new AbortController(), closed: false };
  const one = (): number => 1;
  const spans = new Lane<SpanData>('traces', 'spans', config.traces, shared, opts.maxQueue, opts.delayMs, one);
  const logs = new Lane<LogData>('logs', 'logs', config.logs, shared, opts.maxQueue, opts.delayMs, one);
  const metrics = new Lane<readonly MetricData[]>('metrics', 'metrics', config.metrics, shared, 1, opts.metricsIntervalMs, points);
  return {
    span: (s) => spans.push(s),
    spanWriter: () => (shared.closed ? null : spans.arena),
    tracing: config.traces !== null,
    log: (l) => logs.push(l),
    metrics: (m) => metrics.push(m),
    stats: () => copy(stats),
    shutdown: async (deadlineMs) => {
      if (!shared.closed) {
        shared.closed = true;
        await flushAll([spans, logs, metrics], deadlineMs, shared.abort);
      }
      return copy(stats);
    },
  };
}

interface Shared {
  config: OtlpConfig;
  scope: { name: string; version: string };
  opts: DeliveryOptions;
  stats: DeliveryStats;
  abort: AbortController;
  closed: boolean;
}

/** A batch on its way: counted exactly once, by whoever settles it first (the send, or shutdown's deadline). */
interface InFlight {
  n: number;
  settled: boolean;
}

class Lane<T> {
  private readonly ring: Ring<T>;
  private timer: NodeJS.Timeout | null = null;
  private soon: NodeJS.Immediate | null = null;
  private current: Promise<void> | null = null;
  private inflight: InFlight | null = null;
  private readonly agent: ReturnType<typeof agentFor> | null;
  /**
   * The last request's protobuf bytes, written over by the next: one request
   * at a time, and post() resolves only once the socket is done with its body.
   */
  private scratch: Buffer | null = null;
  /** Spans encoded as they end (OTLP/protobuf traces only): the queue holds their bytes; the ring, spans handed over as objects. */
  readonly arena: SpanArena | null;

  constructor(
    private readonly signal: Signal,
    private readonly counter: Counter,
    private readonly target: SignalTarget | null,
    private readonly shared: Shared,
    capacity: number,
    private readonly delayMs: number,
    private readonly count: (item: T) => number,
  ) {
    this.ring = new Ring<T>(capacity);
    this.agent = target === null ? null : agentFor(target.url, target.tls);
    this.arena =
      signal === 'traces' && target !== null && target.protocol === 'http/protobuf'
        ? new SpanArena(Math.min(shared.opts.maxBatch, capacity), capacity, (dropped) => {
            shared.stats.dropped[counter] += dropped;
            this.schedule();
          })
        : null;
  }

  /** Items waiting: in the ring, and encoded in the arena. */
  private queued(): number {
    return this.ring.length + (this.arena?.length ?? 0);
  }

  push(item: T): void {
    if (this.target === null) return;
    const { stats } = this.shared;
    if (this.shared.closed) {
      stats.dropped[this.counter] += this.count(item);
      return;
    }
    // A metrics snapshot replaces the last one (cumulative points): that is not a loss.
    if (this.ring.push(item) && this.signal !== 'metrics') stats.dropped[this.counter] += 1;
    this.schedule();
  }

  /** A full batch is sent from the next turn, never inside the caller's span() or log(); a partial one after the delay. */
  private schedule(): void {
    if (this.queued() >= this.shared.opts.maxBatch) {
      if (this.soon === null && this.current === null) {
        this.soon = setImmediate(() => {
          this.soon = null;
          this.kick();
        });
        this.soon.unref();
      }
    } else if (this.timer === null && this.current === null) {
      this.timer = setTimeout(() => this.kick(), this.delayMs);
      this.timer.unref();
    }
  }

  /** Starts sending the next batch unless one is on its way. */
  private kick(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.current !== null || this.target === null || this.queued() === 0) return;
    const chunk = this.arena?.take() ?? null;
    const room = this.shared.opts.maxBatch - (chunk?.spans ?? 0);
    const items = room > 0 ? this.ring.take(this.signal === 'metrics' ? 1 : room) : [];
    const batch = this.batch(items);
    const flight: InFlight = { n: items.reduce((sum, item) => sum + this.count(item), chunk?.spans ?? 0), settled: false };
    this.inflight = flight;
    this.current = this.send(this.target, batch, flight, chunk)
      .catch(() => this.settle(flight, 'failed'))
      .finally(() => {
        this.current = null;
        this.inflight = null;
        if (this.shared.closed) return;
        if (this.queued() >= this.shared.opts.maxBatch) this.kick();
        else if (this.queued() > 0 && this.timer === null) {
          this.timer = setTimeout(() => this.kick(), this.delayMs);
          this.timer.unref();
        }
      });
  }

  private batch(items: T[]): Batch {
    const { config, scope } = this.shared;
    const base = { resource: config.resource, scope, spans: [], logs: [], metrics: [] };
    if (this.signal === 'traces') return { ...base, spans: items as unknown as SpanData[] };
    if (this.signal === 'logs') return { ...base, logs: items as unknown as LogData[] };
    return { ...base, metrics: (items as unknown as (readonly MetricData[])[]).flat() };
  }

  private settle(flight: InFlight, how: 'sent' | 'failed' | 'dropped', rejected = 0): void {
    if (flight.settled) return;
    flight.settled = true;
    const { stats } = this.shared;
    if (how === 'sent') {
      stats.sent[this.counter] += flight.n - Math.min(rejected, flight.n);
      stats.failed[this.counter] += Math.min(rejected, flight.n);
    } else stats[how][this.counter] += flight.n;
  }

  private async send(target: SignalTarget, batch: Batch, flight: InFlight, chunk: Chunk | null): Promise<void> {
    const { opts, abort, stats } = this.shared;
    const json = target.protocol === 'http/json';
    const gzipped = target.compression === 'gzip';
    let body = json ? encodeJson(this.signal, batch) : encodeProto(this.signal, batch, chunk?.bytes, this.scratch);
    // Only this request's bytes are in `body` (a buffer of their size, or the scratch itself): the next request may write over them.
    if (!json && body.length <= opts.reuseMax && body.length > (this.scratch?.length ?? 0)) this.scratch = body;
    if (chunk !== null) this.arena?.recycle(chunk.store);
    if (body.length > MAX_REQUEST_BYTES) return this.settle(flight, 'failed');
    const headers: Record<string, string> = { ...target.headers, 'content-type': json ? 'application/json' : 'application/x-protobuf' };
    if (gzipped) {
      body = await gzip(body, GZIP);
      headers['content-encoding'] = 'gzip';
    }
    for (let attempt = 1; ; attempt++) {
      if (abort.signal.aborted) return this.settle(flight, 'dropped');
      const result = await post(target.url, headers, body, target.timeoutMs, abort.signal, this.agent ?? undefined);
      if (abort.signal.aborted) return this.settle(flight, 'dropped');
      let wait: number | undefined;
      if (result.kind === 'answered' && result.status >= 200 && result.status < 300) {
        // An answer over the cap is, by the OTLP spec, a non-retryable error.
        if (result.body === null) {
          stats.errors += 1;
          return this.settle(flight, 'failed');
        }
        const rejected = rejectedCount(result.body, json);
        if (rejected > 0) stats.errors += 1;
        return this.settle(flight, 'sent', rejected);
      }
      stats.errors += 1;
      if (result.kind === 'answered') {
        if (![429, 502, 503, 504].includes(result.status)) return this.settle(flight, 'failed');
        wait = retryAfterMs(result.retryAfter);
      }
      if (attempt >= opts.maxAttempts) return this.settle(flight, 'failed');
      await sleep(wait ?? backoff(opts, attempt), abort.signal);
    }
  }

  /** Sends everything queued, a batch at a time, until empty or aborted. */
  async flush(abort: AbortSignal): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.soon !== null) clearImmediate(this.soon);
    this.timer = null;
    this.soon = null;
    while (!abort.aborted && (this.current !== null || (this.queued() > 0 && this.target !== null))) {
      if (this.current === null) this.kick();
      await this.current;
    }
  }

  /** At the deadline: what was not delivered is dropped, counted now so the stats shutdown returns are final. */
  abandon(): void {
    if (this.inflight !== null) this.settle(this.inflight, 'dropped');
    const left = this.ring.take(this.ring.length);
    for (const item of left) this.shared.stats.dropped[this.counter] += this.count(item);
    this.shared.stats.dropped[this.counter] += this.arena?.clear() ?? 0;
  }
}

function points(snapshot: readonly MetricData[]): number {
  return snapshot.reduce((sum, m) => sum + m.points.length, 0);
}

/** Exponential, with half of each step jittered so that many mcpguards do not retry in step. */
function backoff(opts: DeliveryOptions, attempt: number): number {
  const step = Math.min(opts.maxBackoffMs, opts.backoffMs * 2 ** (attempt - 1));
  return step / 2 + opts.random() * (step / 2);
}

function sleep(ms: number, abort: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (abort.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      abort.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    abort.addEventListener('abort', done, { once: true });
  });
}

/**
 * Flushes every lane at once and returns by the deadline: the deadline's
 * timer is the one ref'd handle, so a process with nothing else to do still
 * waits for the flush (and no longer).
 */
async function flushAll(lanes: ReadonlyArray<Pick<Lane<unknown>, 'flush' | 'abandon'>>, deadlineMs: number, abort: AbortController): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, deadlineMs));
  });
  const flushed = Promise.all(lanes.map((lane) => lane.flush(abort.signal).catch(() => undefined)));
  await Promise.race([flushed, deadline]);
  clearTimeout(timer);
  abort.abort();
  for (const lane of lanes) lane.abandon();
}

function copy(stats: DeliveryStats): DeliveryStats {
  return { sent: { ...stats.sent }, dropped: { ...stats.dropped }, failed: { ...stats.failed }, errors: stats.errors };
}
