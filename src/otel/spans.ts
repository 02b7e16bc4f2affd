/**
 * The span builder: a session observer that turns each call's final state
 * into a SERVER span (call-span.ts), its stderr into log records, and keeps
 * the session's metrics; at the session's end, the session's root span. It
 * hands everything to an `Exporter` (api.ts), which never blocks. With
 * OTLP/protobuf (the default) a call's span is written straight into the
 * batch's bytes (arena.ts), with OTLP/JSON it is one span object; either way
 * after the call's answer went out (observers run when the call ends).
 */
import type { Call } from '../mcp/call.js';
import type { Masker } from '../mask/mask.js';
import type { Rejection, SessionObserver } from '../relay/observer.js';
import { RawId } from '../wire/request-id.js';
import type { Exporter, OtlpConfig } from './api.js';
import { callLogs, callSpan, errorType, parentOf, tailLogs, writeCallSpan, type CallFacts, type SessionFacts } from './call-span.js';
import { sessionSpanId, sessionTraceId } from './ids.js';
import { LaterCalls } from './later.js';
import { SessionMetrics } from './metrics.js';
import { SpanKind, type Attributes, type AttributeValue, type LogData, type SpanData } from './model.js';

/** How often the cumulative metrics are handed to the exporter (OTEL_METRIC_EXPORT_INTERVAL's default). */
export const METRICS_INTERVAL_MS = 60_000;

/** Calls whose spans (and logs and metrics) are written together (later.ts), and the longest one waits, ms. */
export const LATER_SPANS = 32;
export const LATER_MS = 200;

/** What the session's root span says when the session ends. */
export interface SessionEnd {
  endedAt: number;
  endReason: string;
  protocolVersion: string | null;
  /** The child's exit status (mcpguard's), null when there was no child. */
  status: number | null;
  /** Stderr outside any call, as the session record keeps it (masked, within its budget, labelled). */
  stderrTail: string;
  stderrSeen: number;
  stderrRetained: number;
  restarts: number | null;
}

export interface BuilderOptions {
  session: SessionFacts;
  startedAt: number;
  exporter: Exporter;
  sampler: OtlpConfig['sampler'];
  masker: Masker;
  /** Interval of the periodic metrics; 0: only at the end. */
  metricsIntervalMs?: number;
  /** Calls written together (LATER_SPANS), when spans are encoded as written; 0: each as its call ends. */
  laterSpans?: number;
}

const ns = (ms: number): bigint => BigInt(Math.round(ms)) * 1_000_000n;

export class SpanBuilder implements SessionObserver {
  readonly metrics: SessionMetrics;
  private readonly exporter: Exporter;
  private readonly facts: SessionFacts;
  private readonly rootSampled: boolean;
  private stderrKept = 0;
  /** The facts of the call being ended (factsOf writes into it), and its operation attributes made from them only for a new series. */
  private readonly scratch = {} as CallFacts;
  /** The facts `ended` is reading (the scratch, or a row later.ts read back), for the operation attributes of a new series. */
  private current: CallFacts = this.scratch;
  private readonly opAttributes = (): Attributes => operationAttributes(this.current, this.o.masker);
  private lastOp: { method: string | null; tool: string | null; version: string | null; error: string | null; key: string } = {
    method: null,
    tool: null,
    version: null,
    error: null,
    key: '',
  };
  private readonly timer: NodeJS.Timeout | null;
  /** Calls whose span, logs and metrics are written with the next batch (encoded spans only); null: each as its call ends. */
  private readonly later: LaterCalls | null;

  constructor(private readonly o: BuilderOptions) {
    this.exporter = o.exporter;
    this.facts = o.session;
    this.metrics = new SessionMetrics(ns(o.startedAt));
    this.rootSampled = sample(o.sampler, sessionTraceId(o.session.sessionId), null);
    const every = o.metricsIntervalMs ?? METRICS_INTERVAL_MS;
    const later = o.laterSpans ?? LATER_SPANS;
    this.later = later > 0 ? new LaterCalls(later, LATER_MS, (f) => this.ended(f)) : null;
    this.timer =
      every > 0
        ? setInterval(() => {
            this.flushSpans();
            this.exporter.metrics(this.metrics.snapshot(ns(Date.now())));
          }, every)
        : null;
    this.timer?.unref();
  }

  callEnded(call: Call): void {
    // Spans that go as objects (OTLP/JSON) are not kept waiting; nor is a call that does not fit a row (later.ts). Without a traces endpoint no span is made at all.
    if (this.later !== null && (this.exporter.tracing === false || (this.exporter.spanWriter?.() ?? null) !== null) && this.later.add(call)) return;
    this.ended(factsOf(call, this.scratch));
  }

  /** Writes what calls still waiting have to say: spans, logs and metrics (the session's end and each metrics snapshot do this first). */
  flushSpans(): void {
    this.later?.flush();
  }

  /** A call's span, its stderr as logs, and its part of the metrics. */
  private ended(f: CallFacts): void {
    const span = this.writeSpan(f);
    this.current = f;
    for (const log of callLogs(f, span, this.facts.sessionId)) this.exporter.log(log);
    if (f.method !== null) {
      const error = errorType(f);
      // A key of the raw fields (no JSON per call); \u0001 stands for none (a tool named exactly that would share a series with none: a merged count, nothing more).
      const tool = f.method === 'tools/call' ? f.tool : null;
      const last = this.lastOp;
      // Calls in a row mostly share their series: the last key is reused rather than made again (no string per call).
      if (last.method !== f.method || last.tool !== tool || last.version !== f.protocolVersion || last.error !== error)
        this.lastOp = {
          method: f.method,
          tool,
          version: f.protocolVersion,
          error,
          key: `op\u0000${f.method}\u0000${tool ?? '\u0001'}\u0000${f.protocolVersion ?? '\u0001'}\u0000${error ?? '\u0001'}`,
        };
      this.metrics.operation.record(Math.max(0, f.endedAt - f.startedAt) / 1000, this.opAttributes, this.lastOp.key);
    }
    if ((f.state === 'denied' || f.state === 'rejected') && f.decision !== null) {
      const at: [string, AttributeValue][] = [['mcpguard.refused.by', f.decision.by]];
      if (f.decision.by === 'policy' && f.decision.rule !== null) at.push(['gen_ai.guardrail.security.policy.rule.id', String(f.decision.rule + 1)]);
      this.metrics.refusals.add(1, at);
    }
    this.stderrKept += f.stderr?.retained ?? 0;
  }

  rejected(r: Rejection): void {
    if (r.action === 'forwarded') return;
    const at: [string, AttributeValue][] = [['mcpguard.direction', r.direction]];
    if (r.rule !== undefined) at.push(['mcpguard.era.rule', r.rule]);
    this.metrics.rejectedFrames.add(1, at);
  }

  /** A restart of the server (--restart). */
  restarted(): void {
    this.metrics.restarts.add(1);
  }

  /** One of mcpguard's own diagnostic lines (already masked), as a WARN log record on the session's span. */
  diagnostic(text: string): void {
    this.exporter.log(this.sessionLog(Date.now(), 13, 'WARN', text, [['mcpguard.source', 'mcpguard']]));
  }

  /** The session ended: its stderr tail, its root span and the last metrics, handed over (the caller then shuts the exporter down). */
  end(e: SessionEnd): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.flushSpans();
    for (const log of tailLogs(this.facts.sessionId, e.endedAt, e.stderrTail)) this.exporter.log(log);
    const span = sessionSpan(this.facts.sessionId, this.o.startedAt, e);
    if (this.rootSampled && this.exporter.tracing !== false) this.exporter.span(span);
    const duration: [string, AttributeValue][] = [['network.transport', 'pipe']];
    if (e.protocolVersion !== null) duration.push(['mcp.protocol.version', this.o.masker.text(e.protocolVersion)]);
    if (span.status.code === 2) duration.push(['error.type', e.endReason]);
    this.metrics.session.record(Math.max(0, e.endedAt - this.o.startedAt) / 1000, duration);
    this.metrics.stderrSeen.set(e.stderrSeen);
    this.metrics.stderrKept.set(this.stderrKept + e.stderrRetained);
    this.exporter.metrics(this.metrics.snapshot(ns(e.endedAt)));
  }

  /**
   * The call's span into the exporter: encoded straight into its queue when it
   * takes bytes (no SpanData: the cost per call is the bytes), else as a
   * SpanData; the SpanData, when one was made, for the call's stderr logs.
   */
  private writeSpan(f: CallFacts): SpanData | null {
    if (this.exporter.tracing === false) return null;
    const out = this.exporter.spanWriter?.() ?? null;
    if (out === null) {
      const span = callSpan(f, this.facts, this.o.masker);
      if (span !== null && this.sampled(f)) this.exporter.span(span);
      return span;
    }
    if (f.method === null || !this.sampled(f)) return null;
    try {
      writeCallSpan(f, this.facts, this.o.masker, out);
    } catch {
      // A span that cannot be written is lost alone; the batch around it stays whole.
      out.abort();
    }
    return null;
  }

  private sampled(f: CallFacts): boolean {
    if (f.traceparent === null) return this.rootSampled;
    const parent = parentOf(this.facts.sessionId, f.traceparent);
    return parent.sampled === null ? this.rootSampled : sample(this.o.sampler, parent.traceId, parent.sampled);
  }

  private sessionLog(atMs: number, severityNumber: number, severityText: string, body: string, extra: Attributes): LogData {
    const id = this.facts.sessionId;
    return {
      timeNs: ns(atMs),
      severityNumber,
      severityText,
      body,
      attributes: [['mcp.session.id', id], ...extra],
      traceId: sessionTraceId(id),
      spanId: sessionSpanId(id),
    };
  }
}

/** The session's root span: INTERNAL (the conventions define no span for a stdio session; the calls are its SERVER children). */
export function sessionSpan(sessionId: string, startedAt: number, e: SessionEnd): SpanData {
  const failed = e.status !== null && e.status !== 0;
  const at: [string, AttributeValue][] = [
    ['mcp.session.id', sessionId],
    ['network.transport', 'pipe'],
    ['mcpguard.session.end_reason', e.endReason],
    ['mcpguard.stderr.bytes_seen', e.stderrSeen],
  ];
  if (e.protocolVersion !== null) at.push(['mcp.protocol.version', e.protocolVersion]);
  if (e.status !== null) at.push(['mcpguard.session.status', e.status]);
  if (e.restarts !== null) at.push(['mcpguard.restarts', e.restarts]);
  if (failed) at.push(['error.type', e.endReason]);
  return {
    traceId: sessionTraceId(sessionId),
    spanId: sessionSpanId(sessionId),
    name: 'mcpguard session',
    kind: SpanKind.internal,
    startNs: ns(startedAt),
    endNs: ns(Math.max(startedAt, e.endedAt)),
    attributes: at,
    events: [],
    status: failed ? { code: 2, message: e.endReason } : { code: 0 },
  };
}

/**
 * A live call's facts for its span, written into `into` when given: the
 * builder reuses one object for every call (nothing keeps the facts past
 * callEnded), so a call costs no facts object.
 */
export function factsOf(call: Call, into?: CallFacts): CallFacts {
  const f = into ?? ({} as CallFacts);
  const id = call.requestId;
  f.callId = call.callId;
  f.requestId = id instanceof RawId ? id.value : id;
  f.method = call.method;
  f.tool = call.tool;
  f.target = call.target;
  f.state = call.state ?? 'unknown';
  f.startedAt = call.startedAt;
  f.dispatchedAt = call.dispatchedAt;
  f.endedAt = call.endedAt ?? Date.now();
  f.protocolVersion = call.protocolVersion;
  f.traceparent = call.traceparent;
  f.tracestate = call.tracestate ?? null;
  f.decision = call.decision;
  f.generation = call.generation;
  f.cancelRequested = call.cancelRequested;
  f.errorCode = call.errorCode ?? null;
  f.stderr = call.stderr;
  f.content = call.content;
  f.steps = call.steps;
  return f;
}

/** The attributes of mcp.server.operation.duration: the span's low-cardinality ones. */
function operationAttributes(f: CallFacts, masker: Masker): Attributes {
  const at: [string, AttributeValue][] = [
    ['mcp.method.name', masker.text(f.method!)],
    ['network.transport', 'pipe'],
  ];
  if (f.method === 'tools/call' && f.tool !== null) at.push(['gen_ai.tool.name', masker.text(f.tool)], ['gen_ai.operation.name', 'execute_tool']);
  if (f.protocolVersion !== null) at.push(['mcp.protocol.version', masker.text(f.protocolVersion)]);
  const error = errorType(f);
  if (error !== null) at.push(['error.type', error]);
  return at;
}

/**
 * The sampler's decision (OTEL_TRACES_SAMPLER): ratio by the trace id's last
 * 16 hex digits, as the SDKs do; a parent-based sampler follows the client's
 * sampled flag when the call came with one.
 */
export function sample(s: OtlpConfig['sampler'], traceId: string, parentSampled: boolean | null): boolean {
  if (parentSampled !== null && s.kind.startsWith('parentbased_')) return parentSampled;
  const root = s.kind.replace('parentbased_', '');
  if (root === 'always_on') return true;
  if (root === 'always_off') return false;
  if (s.ratio >= 1) return true;
  if (s.ratio <= 0) return false;
  const low = BigInt(`0x${traceId.slice(16)}`) & 0x7fffffffffffffffn;
  return low < BigInt(Math.floor(s.ratio * 2 ** 63));
}
