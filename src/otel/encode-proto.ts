/**
 * OTLP/protobuf: a batch as ExportTraceServiceRequest, ExportLogsServiceRequest
 * or ExportMetricsServiceRequest, with the field numbers of
 * opentelemetry-proto's .proto files (collector/*\/v1, trace, logs, metrics,
 * common, resource). A writer of a few wire types is all OTLP needs, so
 * mcpguard carries no protobuf library. Strings are written as UTF-8 by
 * Buffer, which turns a lone surrogate (a hostile server's half of a pair)
 * into U+FFFD: the bytes are always valid UTF-8, as proto3 requires.
 */
import type { Attributes, AttributeValue, Batch, HistogramPoint, LogData, MetricData, SpanData, SumPoint } from './model.js';

export type Signal = 'traces' | 'logs' | 'metrics';

const VARINT = 0;
const I64 = 1;
const LEN = 2;

/** Aggregation temporality: mcpguard's points are cumulative from the session's start. */
const CUMULATIVE = 2;

const MAX_U64 = 2n ** 64n - 1n;

/**
 * The largest buffer kept to be written over (Writer's `reuse`): a usual
 * batch is some 400 KB; one of spans with their content can be ten times
 * that, and is not worth holding for the rest of the session.
 */
export const REUSE_MAX = 4 * 1024 * 1024;

/**
 * A growable buffer with nested length-delimited messages: `begin` reserves
 * one byte for the length, `end` fills it in and, for a body of 128 bytes or
 * more, moves the body up to make room for a longer varint (one copy per
 * level, only for the messages that need it).
 */
export class Writer {
  buf: Buffer;
  /** The same memory as `buf`: DataView's 64-bit setters take a BigInt as is (Buffer's allocate two more per call). */
  private view: DataView;
  pos = 0;
  private readonly open: number[] = [];
  /** Told when end() moves a message's body up by `extra` bytes (span-template.ts keeps its holes' places by it). */
  moved: ((start: number, extra: number) => void) | null = null;

  /**
   * `size`: the first buffer's bytes (a batch that knows its usual size grows no copies).
   * `reuse`: a buffer nothing else reads any more, written over when it is big enough:
   * a fresh buffer of a batch's size (some 400 KB) costs a page fault per 4 KB on first touch,
   * about ten times the copy itself.
   */
  constructor(size = 4096, reuse: Buffer | null = null) {
    this.buf = reuse !== null && reuse.length >= size ? reuse : Buffer.allocUnsafe(Math.max(64, size));
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
  }

  /** Back to `pos`, with no message open: what was written after it is discarded. */
  reset(pos: number): void {
    this.pos = pos;
    this.open.length = 0;
  }

  private room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
    this.view = new DataView(grown.buffer, grown.byteOffset, grown.length);
  }

  /** Bytes encoded once (a constant attribute's KeyValue), copied as they are. */
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
  }

  varint(n: number): void {
    this.room(10);
    while (n > 0x7f) {
      this.buf[this.pos++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
    this.buf[this.pos++] = n;
  }

  tag(field: number, wire: number): void {
    this.varint(field * 8 + wire);
  }

  uint(field: number, n: number): void {
    this.tag(field, VARINT);
    this.varint(n);
  }

  /** int64 as varint: a negative one is its 64-bit two's complement, ten bytes. */
  int64(field: number, n: number): void {
    this.tag(field, VARINT);
    if (n >= 0) return this.varint(n);
    let v = BigInt.asUintN(64, BigInt(n));
    this.room(10);
    while (v > 0x7fn) {
      this.buf[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    this.buf[this.pos++] = Number(v);
  }

  fixed64(field: number, n: bigint): void {
    this.tag(field, I64);
    this.room(8);
    this.view.setBigUint64(this.pos, n >= 0n && n <= MAX_U64 ? n : BigInt.asUintN(64, n), true);
    this.pos += 8;
  }

  /**
   * A time in fixed64 nanoseconds from milliseconds since the epoch (rounded
   * to whole ms, as the model's times are) and nanoseconds within the ms, in
   * two 32-bit halves: no BigInt. Not a finite time ≥ 0: written as 0.
   */
  fixed64Ms(field: number, ms: number, subNs = 0): void {
    this.tag(field, I64);
    this.room(8);
    this.msAt(this.pos, ms, subNs);
    this.pos += 8;
  }

  /** fixed64Ms's eight bytes at `at`, written over what is there (span-template.ts). */
  msAt(at: number, ms: number, subNs = 0): void {
    let lo = 0;
    let hi = 0;
    const m = Math.round(ms);
    if (m >= 0 && Number.isFinite(m)) {
      // m * 1e6 + subNs exceeds 2^53: split m at 2^16, so that every product and sum below is exact.
      const mHi = Math.floor(m / 65536);
      const a = mHi * 1_000_000;
      const aLo = a % 65536;
      const low = aLo * 65536 + (m - mHi * 65536) * 1_000_000 + subNs;
      lo = low % 4294967296;
      hi = ((a - aLo) / 65536 + (low - lo) / 4294967296) % 4294967296;
    }
    this.view.setUint32(at, lo, true);
    this.view.setUint32(at + 4, hi, true);
  }

  sfixed64(field: number, n: number): void {
    this.tag(field, I64);
    this.room(8);
    this.buf.writeBigInt64LE(BigInt(n), this.pos);
    this.pos += 8;
  }

  double(field: number, x: number): void {
    this.tag(field, I64);
    this.room(8);
    this.buf.writeDoubleLE(x, this.pos);
    this.pos += 8;
  }

  string(field: number, s: string): void {
    this.tag(field, LEN);
    const n = s.length;
    // Most strings are short ASCII (names, ids, keys): copied here, without a call into Buffer's UTF-8 writer.
    if (n < 128) {
      this.room(n + 1);
      const at = this.pos + 1;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        this.buf[at + i] = c;
      }
      if (i === n) {
        this.buf[this.pos] = n;
        this.pos = at + n;
        return;
      }
    }
    const bytes = Buffer.byteLength(s, 'utf8');
    this.varint(bytes);
    this.room(bytes);
    this.pos += this.buf.write(s, this.pos, bytes, 'utf8');
  }

  /** A trace or span id: hex in the model, raw bytes on the wire (a non-hex digit reads as 0). */
  hexBytes(field: number, hex: string): void {
    const n = hex.length >> 1;
    this.tag(field, LEN);
    this.varint(n);
    this.room(n);
    this.hexAt(this.pos, hex);
    this.pos += n;
  }

  /** hexBytes's bytes (its length and tag excepted) at `at`, written over what is there. */
  hexAt(at: number, hex: string): void {
    const n = hex.length >> 1;
    for (let i = 0; i < n; i++) this.buf[at + i] = ((NIBBLE[hex.charCodeAt(2 * i)] ?? 0) << 4) | (NIBBLE[hex.charCodeAt(2 * i + 1)] ?? 0);
  }

  /** Room for `n` raw bytes (a packed field's items); returns where to write them. */
  raw(n: number): number {
    this.room(n);
    this.pos += n;
    return this.pos - n;
  }

  begin(field: number): void {
    this.tag(field, LEN);
    this.room(1);
    this.open.push(this.pos);
    this.pos += 1;
  }

  end(): void {
    const start = this.open.pop()!;
    const len = this.pos - start - 1;
    if (len < 128) {
      this.buf[start] = len;
      return;
    }
    let extra = 0;
    for (let v = len; v >= 128; v = Math.floor(v / 128)) extra += 1;
    this.room(extra);
    this.buf.copyWithin(start + 1 + extra, start + 1, this.pos);
    this.moved?.(start, extra);
    const body = this.pos;
    this.pos = start;
    this.varint(len);
    this.pos = body + extra;
  }

  done(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** A hex digit's value by its code; any other code reads as 0 (past the table: undefined, taken as 0). */
const NIBBLE = new Uint8Array(128);
for (let c = 0; c < 10; c++) NIBBLE[48 + c] = c;
for (let c = 0; c < 6; c++) {
  NIBBLE[97 + c] = 10 + c;
  NIBBLE[65 + c] = 10 + c;
}

/**
 * One signal of a batch as the body of an OTLP/HTTP protobuf request.
 * `encoded`: spans encoded already (arena.ts), sent before the batch's own;
 * `into`: a buffer to write it in when it fits (see Writer).
 * The request's few outer lengths are known once its parts are: it is
 * written front to back into a buffer of its exact size, each part copied
 * once (a batch of 512 spans is some 400 KB; nested begin/end would move it
 * twice more).
 */
export function encodeProto(signal: Signal, batch: Batch, encoded?: Uint8Array, into: Buffer | null = null): Buffer {
  const own = new Writer(4096);
  if (signal === 'traces') for (const s of batch.spans) span(own, s);
  else if (signal === 'logs') for (const l of batch.logs) log(own, l);
  else for (const m of batch.metrics) metric(own, m);
  const items = own.done();
  const res = new Writer(256);
  attributes(res, 1, batch.resource);
  const resource = res.done();
  const sc = new Writer(128);
  sc.string(1, batch.scope.name);
  sc.string(2, batch.scope.version);
  const scope = sc.done();
  const scopeBody = field(scope.length) + (encoded?.length ?? 0) + items.length;
  const resourceBody = field(resource.length) + field(scopeBody);
  const w = new Writer(field(resourceBody), into);
  w.tag(1, LEN); // resource_spans / resource_logs / resource_metrics
  w.varint(resourceBody);
  w.tag(1, LEN); // resource
  w.varint(resource.length);
  w.bytes(resource);
  w.tag(2, LEN); // scope_spans / scope_logs / scope_metrics
  w.varint(scopeBody);
  w.tag(1, LEN); // scope
  w.varint(scope.length);
  w.bytes(scope);
  if (encoded !== undefined) w.bytes(encoded);
  w.bytes(items);
  return w.done();
}

/** The bytes of a length-delimited field of a field number under 16 whose body is `n` bytes: tag, length, body. */
function field(n: number): number {
  let size = 2;
  for (let v = n; v >= 128; v = Math.floor(v / 128)) size += 1;
  return size + n;
}

function attributes(w: Writer, field: number, attrs: Attributes): void {
  for (const kv of attrs) keyValue(w, field, kv);
}

/** One attribute as a KeyValue in `field`: its bytes made once when the pair is shared (preencode), else written here. */
export function keyValue(w: Writer, field: number, kv: readonly [string, AttributeValue]): void {
  const pre = ENCODED.get(kv);
  if (pre !== undefined) {
    w.tag(field, LEN);
    w.varint(pre.length);
    w.bytes(pre);
    return;
  }
  keyValueOf(w, field, kv[0], kv[1]);
}

/** A KeyValue in `field` from its key and value. */
export function keyValueOf(w: Writer, field: number, key: string, value: AttributeValue): void {
  w.begin(field); // KeyValue
  w.string(1, key);
  w.begin(2);
  anyValue(w, value);
  w.end();
  w.end();
}

/** keyValueOf with the key's field (KeyValue.key) encoded already (interned.ts OwnKey). */
export function keyValueKeyed(w: Writer, field: number, keyField: Uint8Array, value: AttributeValue): void {
  w.begin(field); // KeyValue
  w.bytes(keyField);
  w.begin(2);
  anyValue(w, value);
  w.end();
  w.end();
}

/** A string field's bytes (tag, length, UTF-8), to be copied with Writer.bytes. */
export function stringField(field: number, s: string): Uint8Array {
  const w = new Writer(s.length * 3 + 16);
  w.string(field, s);
  return Buffer.from(w.done());
}

/** KeyValue bodies of the constant attributes (model.ts `constant`), encoded on first use. */
const ENCODED = new WeakMap<object, Uint8Array>();

/** Encodes `kv` once and keeps its bytes while `kv` lives: for attributes the span builder shares between spans (never for one made per call). */
export function preencode(kv: readonly [string, AttributeValue]): void {
  if (ENCODED.has(kv)) return;
  const w = new Writer();
  w.string(1, kv[0]);
  w.begin(2);
  anyValue(w, kv[1]);
  w.end();
  ENCODED.set(kv, Buffer.from(w.done()));
}

/** AnyValue's oneof: always written, even an empty string or false (presence is the point of a oneof). */
function anyValue(w: Writer, value: AttributeValue): void {
  if (typeof value === 'string') w.string(1, value);
  else if (typeof value === 'boolean') w.uint(2, value ? 1 : 0);
  else if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) w.int64(3, value);
    else w.double(4, value);
  } else {
    w.begin(5); // ArrayValue
    for (const item of value) {
      w.begin(1);
      w.string(1, item);
      w.end();
    }
    w.end();
  }
}

function span(w: Writer, s: SpanData): void {
  w.begin(2);
  w.hexBytes(1, s.traceId);
  w.hexBytes(2, s.spanId);
  if (s.traceState !== undefined && s.traceState !== '') w.string(3, s.traceState);
  if (s.parentSpanId !== undefined && s.parentSpanId !== '') w.hexBytes(4, s.parentSpanId);
  w.string(5, s.name);
  w.uint(6, s.kind);
  w.fixed64(7, s.startNs);
  w.fixed64(8, s.endNs);
  attributes(w, 9, s.attributes);
  for (const e of s.events) {
    w.begin(11);
    w.fixed64(1, e.timeNs);
    w.string(2, e.name);
    attributes(w, 3, e.attributes);
    w.end();
  }
  w.begin(15); // status
  if (s.status.message !== undefined && s.status.message !== '') w.string(2, s.status.message);
  if (s.status.code !== 0) w.uint(3, s.status.code);
  w.end();
  w.end();
}

function log(w: Writer, l: LogData): void {
  w.begin(2);
  w.fixed64(1, l.timeNs);
  w.fixed64(11, l.timeNs); // observed: mcpguard records a line when it sees it
  w.uint(2, l.severityNumber);
  w.string(3, l.severityText);
  w.begin(5);
  w.string(1, l.body);
  w.end();
  attributes(w, 6, l.attributes);
  if (l.traceId !== undefined) w.hexBytes(9, l.traceId);
  if (l.spanId !== undefined) w.hexBytes(10, l.spanId);
  w.end();
}

function metric(w: Writer, m: MetricData): void {
  w.begin(2);
  w.string(1, m.name);
  w.string(2, m.description);
  w.string(3, m.unit);
  if (m.kind === 'sum') {
    w.begin(7);
    for (const p of m.points) sumPoint(w, p);
    w.uint(2, CUMULATIVE);
    if (m.monotonic) w.uint(3, 1);
    w.end();
  } else {
    w.begin(9);
    for (const p of m.points) histogramPoint(w, p);
    w.uint(2, CUMULATIVE);
    w.end();
  }
  w.end();
}

function sumPoint(w: Writer, p: SumPoint): void {
  w.begin(1);
  attributes(w, 7, p.attributes);
  w.fixed64(2, p.startNs);
  w.fixed64(3, p.timeNs);
  if (Number.isSafeInteger(p.value)) w.sfixed64(6, p.value);
  else w.double(4, p.value);
  w.end();
}

function histogramPoint(w: Writer, p: HistogramPoint): void {
  w.begin(1);
  attributes(w, 9, p.attributes);
  w.fixed64(2, p.startNs);
  w.fixed64(3, p.timeNs);
  w.fixed64(4, BigInt(p.count));
  w.double(5, p.sum);
  w.begin(6); // bucket_counts, packed fixed64
  // raw() first: it may grow the buffer, and `w.buf.write…(x, w.raw(8))` would read w.buf before the growth and write into the old one.
  for (const c of p.bucketCounts) {
    const at = w.raw(8);
    w.buf.writeBigUInt64LE(BigInt(c), at);
  }
  w.end();
  w.begin(7); // explicit_bounds, packed double
  for (const b of p.bounds) {
    const at = w.raw(8);
    w.buf.writeDoubleLE(b, at);
  }
  w.end();
  if (p.count > 0) {
    w.double(11, p.min);
    w.double(12, p.max);
  }
  w.end();
}
