/**
 * A span written field by field (model.ts SpanWriter) made into a SpanData:
 * what call-span.ts callSpan returns, for OTLP/JSON, the backfill and tests
 * (the live protobuf path writes bytes instead, arena.ts).
 */
import { Collector, type AttrRun, type OwnKey } from './interned.js';
import { SpanHead, type AttributeValue, type SpanData, type SpanEvent, type SpanKind, type SpanWriter, type StatusCode } from './model.js';

/** The span's and the guardrail event's attributes are collected here (interned.ts Collector): one exact array each. */
const SPAN_PAIRS = new Collector<readonly [string, AttributeValue]>();
const EVENT_PAIRS = new Collector<readonly [string, AttributeValue]>();
const EVENTS = new Collector<SpanEvent>();
/** A span without events shares this (callers only read it). */
const NO_EVENTS: readonly SpanEvent[] = Object.freeze([]);
/** The status of every span that did not fail, shared (encoders only read it). */
const UNSET: SpanData['status'] = Object.freeze({ code: 0 });

const ns = (ms: number): bigint => BigInt(Math.round(ms)) * 1_000_000n;

/**
 * A span as a SpanData: its attributes and events collected in arrays kept
 * between spans (interned.ts Collector) and copied out at their exact length.
 * Its collectors are shared by every instance: one span is written at a time
 * (each in one go, taken before the next begins).
 */
export class ObjectSpan implements SpanWriter {
  private readonly head = new SpanHead();
  private status: SpanData['status'] = UNSET;
  private events = 0;
  private eventOpen = false;
  private eventName = '';
  private eventMs = 0;

  begin(
    traceId: string,
    spanId: string,
    parentSpanId: string,
    traceState: string | undefined,
    name: string,
    kind: SpanKind,
    startMs: number,
    endMs: number,
  ): void {
    this.head.set(traceId, spanId, parentSpanId, traceState, name, kind, startMs, endMs);
    SPAN_PAIRS.start();
    EVENTS.start();
    this.events = 0;
    this.eventOpen = false;
  }

  attr(kv: readonly [string, AttributeValue]): void {
    (this.eventOpen ? EVENT_PAIRS : SPAN_PAIRS).add(kv);
  }

  attrs(run: AttrRun): void {
    const to = this.eventOpen ? EVENT_PAIRS : SPAN_PAIRS;
    for (const kv of run.pairs) to.add(kv);
  }

  own(key: OwnKey, value: AttributeValue): void {
    (this.eventOpen ? EVENT_PAIRS : SPAN_PAIRS).add([key.text, value]);
  }

  event(name: string, timeMs: number): void {
    this.closeEvent();
    this.events += 1;
    this.eventOpen = true;
    this.eventName = name;
    this.eventMs = timeMs;
    EVENT_PAIRS.start();
  }

  end(code: StatusCode, message: string | undefined): void {
    this.closeEvent();
    this.status = code === 0 && message === undefined ? UNSET : message === undefined ? { code } : { code, message };
  }

  /** The span written since begin(). */
  take(): SpanData {
    const h = this.head;
    return {
      traceId: h.traceId,
      spanId: h.spanId,
      parentSpanId: h.parentSpanId,
      ...(h.traceState === undefined ? {} : { traceState: h.traceState }),
      name: h.name,
      kind: h.kind,
      startNs: ns(h.startMs),
      endNs: ns(h.endMs),
      attributes: SPAN_PAIRS.take(),
      events: this.events === 0 ? NO_EVENTS : EVENTS.take(),
      status: this.status,
    };
  }

  private closeEvent(): void {
    if (!this.eventOpen) return;
    EVENTS.add({ name: this.eventName, timeNs: ns(this.eventMs), attributes: EVENT_PAIRS.take() });
    this.eventOpen = false;
  }
}
