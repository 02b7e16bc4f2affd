/**
 * The session's metrics, cumulative from its start: the two MCP histograms of
 * the conventions (seconds, with their advised bucket boundaries) and
 * mcpguard's own counters. One series per distinct attribute set; the sets
 * are low-cardinality by construction (method, tool, error type, rule), and
 * bounded besides, so a client inventing method names cannot grow them.
 */
import type { Attributes, HistogramPoint, MetricData, SumPoint } from './model.js';

/** ExplicitBucketBoundaries advised for mcp.server.operation.duration and mcp.server.session.duration. */
export const DURATION_BUCKETS: readonly number[] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300];

/** Most series one metric keeps; later new attribute sets are counted under `mcpguard.overflow`. */
export const MAX_SERIES = 1000;

const OVERFLOW: Attributes = [['otel.metric.overflow', true]];

const keyOf = (attributes: Attributes): string => JSON.stringify(attributes);

class Series<T> {
  private readonly byKey = new Map<string, { attributes: Attributes; value: T }>();
  constructor(private readonly fresh: () => T) {}
  /** The series of these attributes; `key` identifies them when the caller has a cheaper one than their JSON, `make` builds them only for a new series. */
  get(attributes: Attributes | (() => Attributes), key?: string): T {
    const k = key ?? keyOf(attributes as Attributes);
    let entry = this.byKey.get(k);
    if (entry === undefined) {
      if (this.byKey.size >= MAX_SERIES) return this.get(OVERFLOW);
      entry = { attributes: typeof attributes === 'function' ? attributes() : attributes, value: this.fresh() };
      this.byKey.set(k, entry);
    }
    return entry.value;
  }
  entries(): IterableIterator<{ attributes: Attributes; value: T }> {
    return this.byKey.values();
  }
}

interface Hist {
  count: number;
  sum: number;
  min: number;
  max: number;
  buckets: number[];
}

const newHist = (): Hist => ({ count: 0, sum: 0, min: Infinity, max: -Infinity, buckets: new Array(DURATION_BUCKETS.length + 1).fill(0) });

/** A histogram in seconds with DURATION_BUCKETS. */
export class Histogram {
  private readonly series = new Series(newHist);
  constructor(
    readonly name: string,
    readonly description: string,
  ) {}

  /** One value; a `key` the caller makes (distinct per attribute set, never a JSON array) spares the series lookup a JSON.stringify. */
  record(seconds: number, attributes: Attributes | (() => Attributes), key?: string): void {
    const h = this.series.get(attributes, key);
    h.count++;
    h.sum += seconds;
    if (seconds < h.min) h.min = seconds;
    if (seconds > h.max) h.max = seconds;
    // Upper bounds are inclusive (OTLP explicit buckets).
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    h.buckets[i]!++;
  }

  data(startNs: bigint, timeNs: bigint): MetricData | null {
    const points: HistogramPoint[] = [];
    for (const { attributes, value: h } of this.series.entries()) {
      points.push({ attributes, startNs, timeNs, count: h.count, sum: h.sum, min: h.min, max: h.max, bounds: DURATION_BUCKETS, bucketCounts: [...h.buckets] });
    }
    return points.length === 0 ? null : { kind: 'histogram', name: this.name, unit: 's', description: this.description, points };
  }
}

/** A monotonic sum (a counter). */
export class Counter {
  private readonly series = new Series(() => ({ n: 0 }));
  constructor(
    readonly name: string,
    readonly unit: string,
    readonly description: string,
  ) {}

  add(n: number, attributes: Attributes = []): void {
    if (n > 0) this.series.get(attributes).n += n;
  }

  /** Set the total (for figures another part keeps, like stderr bytes): never lowers it. */
  set(total: number, attributes: Attributes = []): void {
    const s = this.series.get(attributes);
    if (total > s.n) s.n = total;
  }

  data(startNs: bigint, timeNs: bigint): MetricData | null {
    const points: SumPoint[] = [];
    for (const { attributes, value } of this.series.entries()) points.push({ attributes, startNs, timeNs, value: value.n });
    return points.length === 0 ? null : { kind: 'sum', name: this.name, unit: this.unit, description: this.description, monotonic: true, points };
  }
}

/** Every metric a session exports. */
export class SessionMetrics {
  readonly operation = new Histogram(
    'mcp.server.operation.duration',
    'The duration of an MCP request as mcpguard handled it, from its arrival to its final state',
  );
  readonly session = new Histogram('mcp.server.session.duration', 'The duration of the MCP session as mcpguard relayed it');
  readonly rejectedFrames = new Counter(
    'mcpguard.frames.rejected',
    '{frame}',
    'Lines mcpguard refused before any call existed (framing, JSON, JSON-RPC, era, shape)',
  );
  readonly refusals = new Counter('mcpguard.calls.refused', '{call}', 'Calls the gate refused, by the step and the policy rule that refused them');
  readonly restarts = new Counter('mcpguard.server.restarts', '{restart}', 'Restarts of the server (--restart)');
  readonly stderrSeen = new Counter('mcpguard.stderr.seen', 'By', "Bytes of the server's stderr seen");
  readonly stderrKept = new Counter('mcpguard.stderr.kept', 'By', "Bytes of the server's stderr kept in records (within the budgets)");

  constructor(readonly startNs: bigint) {}

  /** A cumulative snapshot of every metric with a point. */
  snapshot(timeNs: bigint): MetricData[] {
    const all = [this.operation, this.session, this.rejectedFrames, this.refusals, this.restarts, this.stderrSeen, this.stderrKept];
    return all.map((m) => m.data(this.startNs, timeNs)).filter((m): m is MetricData => m !== null);
  }
}
