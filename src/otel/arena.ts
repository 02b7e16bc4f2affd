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
import { keyValue, keyValueKeyed, stringField, Writer } from './encode-proto.js';
import type { AttrRun, OwnKey } from './interned.js';
import type { AttributeValue, SpanKind, StatusCode } from './model.js';

/** A sealed batch of encoded spans. */
export interface Chunk {
  bytes: Buffer;
  spans: number;
  /** The buffer `bytes` is the start of: given back (recycle) once the chunk is copied into its request. */
  store: Buffer;
}

export class SpanArena implements EncodedSpans {
  private w: Writer | null = null;
  /** Spans complete in `w`. */
  private n = 0;
  private readonly sealed: Chunk[] = [];
  private sealedSpans = 0;
  /** Where the span being written began in `w` (abort goes back to it). */
  private mark = 0;
  private inEvent = false;
  /** A span is being written (begin called, end not yet). */
  private writing = false;
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
   */
  constructor(
    private readonly perChunk: number,
    private readonly bound: number,
    private readonly written: (dropped: number) => void,
  ) {}

  /** Spans held, sealed or not. */
  get length(): number {
    return this.sealedSpans + this.n;
  }

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
    if (this.w === null) {
      this.w = new Writer(this.lastBytes, this.spare);
      this.spare = null;
    }
    const w = this.w;
    this.mark = w.pos;
    this.inEvent = false;
    this.writing = true;
    w.begin(2); // ScopeSpans.spans
    // Calls without the client's trace context share the session's trace and parent: their fields are encoded once.
    if (traceId !== this.traceText) {
      this.traceText = traceId;
      this.traceField = fieldBytes(1, traceId);
    }
    w.bytes(this.traceField);
    w.hexBytes(2, spanId);
    if (traceState !== undefined && traceState !== '') w.string(3, traceState);
    if (parentSpanId !== '') {
      if (parentSpanId !== this.parentText) {
        this.parentText = parentSpanId;
        this.parentField = fieldBytes(4, parentSpanId);
      }
      w.bytes(this.parentField);
    }
    if (name !== this.nameText) {
      this.nameText = name;
      this.nameField = stringField(5, name);
    }
    w.bytes(this.nameField);
    w.uint(6, kind);
    w.fixed64Ms(7, startMs);
    w.fixed64Ms(8, endMs);
  }

  attr(kv: readonly [string, AttributeValue]): void {
    keyValue(this.w!, this.inEvent ? 3 : 9, kv);
  }

  attrs(run: AttrRun): void {
    this.w!.bytes(this.inEvent ? run.event : run.span);
  }

  own(key: OwnKey, value: AttributeValue): void {
    keyValueKeyed(this.w!, this.inEvent ? 3 : 9, key.field, value);
  }

  event(name: string, timeMs: number): void {
    const w = this.w!;
    if (this.inEvent) w.end();
    w.begin(11);
    w.fixed64Ms(1, timeMs);
    w.bytes(this.eventName(name));
    this.inEvent = true;
  }

  end(code: StatusCode, message: string | undefined): void {
    const w = this.w!;
    if (this.inEvent) w.end();
    this.inEvent = false;
    w.begin(15);
    if (message !== undefined && message !== '') w.string(2, message);
    if (code !== 0) w.uint(3, code);
    w.end();
    w.end();
    this.writing = false;
    this.n += 1;
    if (this.n >= this.perChunk) this.seal();
    let dropped = 0;
    while (this.sealedSpans + this.n > this.bound && this.sealed.length > 0) {
      const oldest = this.sealed.shift()!;
      this.sealedSpans -= oldest.spans;
      dropped += oldest.spans;
    }
    this.written(dropped);
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

  /** The span being written is abandoned (its writer threw): its bytes are discarded. */
  abort(): void {
    // A writer that threw before begin() wrote nothing: the spans before it stay.
    if (this.writing) this.w?.reset(this.mark);
    this.writing = false;
    this.inEvent = false;
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
    if (store.length > (this.spare?.length ?? 0)) this.spare = store;
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
