/**
 * Spans encoded as they end: the protobuf lane's queue (exporter.ts). The
 * span builder writes a call's span field by field (call-span.ts
 * writeCallSpan) straight into the bytes of the batch being filled, so a call
 * makes no span object, attribute arrays, events or BigInt times; the queue
 * holds bytes. A full batch (maxBatch spans) is sealed as one chunk; over the
 * queue's bound the oldest chunk is dropped whole and its spans counted, as
 * the object ring drops its oldest span. Each chunk's body is the repeated
 * `spans` field of ScopeSpans, copied as it is into the export request.
 */
import type { EncodedSpans } from './api.js';
import { keyValue, keyValueKeyed, REUSE_MAX, stringField, Writer } from './encode-proto.js';
import type { AttrRun, OwnKey } from './interned.js';
import type { AttributeValue, SpanKind, StatusCode } from './model.js';
import { ATTR, ATTRS, EVENT, fits, OWN, Recorder, SpanLog, type Template, writeFrom } from './span-template.js';

/** A sealed batch of encoded spans. */
export interface Chunk {
  bytes: Buffer;
  spans: number;
  /** The buffer `bytes` is the start of: given back (recycle) once the chunk is copied into its request. */
  store: Buffer;
}

/** Templates kept: a session's spans come in a few shapes (a method, a tool, a final state, the gate's steps). */
export const TEMPLATES = 8;

export class SpanArena implements EncodedSpans {
  private w: Writer | null = null;
  /** Spans complete in `w`. */
  private n = 0;
  private readonly sealed: Chunk[] = [];
  private sealedSpans = 0;
  /** A span is being written (begin called, end not yet). */
  private writing = false;
  /** What the span being written was told; written at its end. */
  private readonly log = new SpanLog();
  private readonly recorder = new Recorder();
  /** Spans kept as templates (span-template.ts), the one used last, and the one a new template replaces. */
  private readonly templates: Template[] = [];
  private lastTemplate = 0;
  private nextTemplate = 0;
  /** Spans written from a template so far. */
  templated = 0;
  /** The last chunk's size: the next one starts at it, so a batch grows no copies. */
  private lastBytes = 4096;
  /** A chunk's buffer given back after its request was made: the next chunk is written over it (no fresh pages). */
  private spare: Buffer | null = null;
  /** The last trace id and parent span id written, and their encoded fields. */
  private traceText = '';
  private traceField: Uint8Array = new Uint8Array(0);
  private parentText = '';
  private parentField: Uint8Array = new Uint8Array(0);
  /** The last span name and its field; event names (a few constants) and theirs. */
  private nameText = '';
  private nameField: Uint8Array = new Uint8Array(0);
  private readonly eventNames: string[] = [];
  private readonly eventFields: Uint8Array[] = [];

  /**
   * @param perChunk spans per sealed chunk (the batch size, at most the bound)
   * @param bound spans held at most before the oldest chunk is dropped
   * @param written told after each span with the spans dropped to make room (0 mostly)
   * @param maxTemplates spans kept as templates (0: none; every span written field by field)
   */
  constructor(
    private readonly perChunk: number,
    private readonly bound: number,
    private readonly written: (dropped: number) => void,
    private readonly maxTemplates = TEMPLATES,
  ) {}

  /** Spans held, sealed or not. */
  get length(): number {
    return this.sealedSpans + this.n;
  }

  /**
   * The writer's calls are kept (SpanLog) and the span written at end():
   * from a template when one fits (span-template.ts), else the usual way.
   */
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
    this.log.set(traceId, spanId, parentSpanId, traceState, name, kind, startMs, endMs);
    this.log.n = 0;
    this.writing = true;
  }

  attr(kv: readonly [string, AttributeValue]): void {
    this.log.push(ATTR, kv, 0);
  }

  attrs(run: AttrRun): void {
    this.log.push(ATTRS, run, 0);
  }

  own(key: OwnKey, value: AttributeValue): void {
    this.log.push(OWN, key, value);
  }

  event(name: string, timeMs: number): void {
    this.log.push(EVENT, name, timeMs);
  }

  end(code: StatusCode, message: string | undefined): void {
    if (!this.writing) return;
    const log = this.log;
    log.code = code;
    log.message = message;
    if (this.w === null) {
      this.w = new Writer(this.lastBytes, this.spare);
      this.spare = null;
    }
    const w = this.w;
    const mark = w.pos;
    try {
      const t = this.templateFor(log);
      if (t !== null) {
        writeFrom(t, log, w);
        this.templated += 1;
      } else this.writeLogged(log, w);
    } catch (error) {
      // Nothing of this span stays; the spans before it do.
      w.reset(mark);
      w.moved = null;
      this.writing = false;
      throw error;
    }
    this.writing = false;
    this.n += 1;
    if (this.n >= this.perChunk) this.seal();
    let dropped = 0;
    while (this.sealedSpans + this.n > this.bound && this.sealed.length > 0) {
      const oldest = this.sealed.shift()!;
      this.sealedSpans -= oldest.spans;
      dropped += oldest.spans;
      this.recycle(oldest.store);
    }
    this.written(dropped);
  }

  /** A template `log` fits, the last one used first; null for none (or with templates off). */
  private templateFor(log: SpanLog): Template | null {
    const ts = this.templates;
    const n = ts.length;
    for (let i = 0; i < n; i++) {
      const t = ts[(this.lastTemplate + i) % n]!;
      if (fits(t, log)) {
        this.lastTemplate = (this.lastTemplate + i) % n;
        return t;
      }
    }
    return null;
  }

  /** The span the usual way, field by field, its holes recorded: it becomes a template (the oldest one goes past the limit). */
  private writeLogged(log: SpanLog, w: Writer): void {
    const mark = w.pos;
    const rec = this.maxTemplates > 0 ? this.recorder : null;
    rec?.start(w, log);
    w.begin(2); // ScopeSpans.spans
    // Calls without the client's trace context share the session's trace and parent: their fields are encoded once.
    if (log.traceId !== this.traceText) {
      this.traceText = log.traceId;
      this.traceField = fieldBytes(1, log.traceId);
    }
    w.bytes(this.traceField);
    rec?.hole(0, log.traceId.length >> 1);
    w.hexBytes(2, log.spanId);
    rec?.hole(1, log.spanId.length >> 1);
    if (log.traceState !== undefined && log.traceState !== '') w.string(3, log.traceState);
    if (log.parentSpanId !== '') {
      if (log.parentSpanId !== this.parentText) {
        this.parentText = log.parentSpanId;
        this.parentField = fieldBytes(4, log.parentSpanId);
      }
      w.bytes(this.parentField);
      rec?.hole(2, log.parentSpanId.length >> 1);
    }
    if (log.name !== this.nameText) {
      this.nameText = log.name;
      this.nameField = stringField(5, log.name);
    }
    w.bytes(this.nameField);
    w.uint(6, log.kind);
    w.fixed64Ms(7, log.startMs);
    rec?.hole(3, 8);
    w.fixed64Ms(8, log.endMs);
    rec?.hole(4, 8);
    let inEvent = false;
    for (let k = 0; k < log.n; k++) {
      const ref = log.ref[k];
      switch (log.type[k]) {
        case ATTR:
          keyValue(w, inEvent ? 3 : 9, ref as readonly [string, AttributeValue]);
          break;
        case ATTRS:
          w.bytes(inEvent ? (ref as AttrRun).event : (ref as AttrRun).span);
          break;
        case OWN:
          keyValueKeyed(w, inEvent ? 3 : 9, (ref as OwnKey).field, log.value[k]!);
          rec?.own(k, log.value[k]!);
          break;
        default:
          if (inEvent) w.end();
          w.begin(11);
          w.fixed64Ms(1, log.value[k] as number);
          rec?.hole(5 + k, 8);
          w.bytes(this.eventName(ref as string));
          inEvent = true;
      }
    }
    if (inEvent) w.end();
    w.begin(15);
    if (log.message !== undefined && log.message !== '') w.string(2, log.message);
    if (log.code !== 0) w.uint(3, log.code);
    w.end();
    w.end();
    const t = rec?.finish(log, mark) ?? null;
    if (t === null) return;
    if (this.templates.length < this.maxTemplates) this.templates.push(t);
    else {
      this.templates[this.nextTemplate] = t;
      this.nextTemplate = (this.nextTemplate + 1) % this.maxTemplates;
    }
    this.lastTemplate = this.templates.indexOf(t);
  }

  /** An event name's field (Event.name): the few names the builder uses are encoded once; others are not kept. */
  private eventName(name: string): Uint8Array {
    const names = this.eventNames;
    for (let i = 0; i < names.length; i++) if (names[i] === name) return this.eventFields[i]!;
    const field = stringField(2, name);
    if (names.length < 8) {
      names.push(name);
      this.eventFields.push(field);
    }
    return field;
  }

  /** The span being written is abandoned (its writer threw): nothing of it was written, and its log is forgotten. */
  abort(): void {
    this.writing = false;
    this.log.n = 0;
  }

  /** The oldest chunk, sealing the open one when none is sealed; null when empty. */
  take(): Chunk | null {
    if (this.sealed.length === 0) this.seal();
    const chunk = this.sealed.shift() ?? null;
    if (chunk !== null) this.sealedSpans -= chunk.spans;
    return chunk;
  }

  /** A taken chunk's buffer, no longer read: the next chunk may be written over it. */
  recycle(store: Buffer): void {
    if (store.length <= REUSE_MAX && store.length > (this.spare?.length ?? 0)) this.spare = store;
  }

  /** Empties the arena; returns how many spans it held. */
  clear(): number {
    const n = this.length;
    this.sealed.length = 0;
    this.sealedSpans = 0;
    this.w = null;
    this.n = 0;
    return n;
  }

  private seal(): void {
    if (this.w === null || this.n === 0) return;
    const bytes = this.w.done();
    this.sealed.push({ bytes, spans: this.n, store: this.w.buf });
    this.sealedSpans += this.n;
    this.lastBytes = bytes.length + 1024;
    this.w = null;
    this.n = 0;
  }
}

/** A hex id's field (tag, length, bytes) as the span writes it. */
function fieldBytes(field: number, hex: string): Uint8Array {
  const w = new Writer(64);
  w.hexBytes(field, hex);
  return Buffer.from(w.done());
}
