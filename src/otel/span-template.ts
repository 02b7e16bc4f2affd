/**
 * Spans written from a template. Call after call, a session's spans differ
 * only in their ids, times, durations and request id: the rest (names, the
 * runs of shared pairs, the guardrail events' pairs, every tag and length) is
 * the same bytes. The arena (arena.ts) keeps what the span writer is told as a
 * log (SpanLog); at the span's end it looks for a template the log fits and,
 * if one does, copies its bytes and writes the span's own values over their
 * holes. Otherwise it writes the span the usual way and keeps it as a
 * template, its holes found as it is written.
 *
 * The bytes are the same either way, by construction: a log fits a template
 * only when every call to the writer is the same as the template's but for
 * the values in holes (the same run, pair or key object, the same event name,
 * the same status), and a value goes into a hole only when it is written in
 * the same number of bytes as the template's (an ASCII string of the same
 * length, an integer of as many varint bytes, a double). Hex ids and times are
 * written by the Writer's own helpers.
 */
import type { Writer } from './encode-proto.js';
import { SpanHead, type AttributeValue, type SpanKind, type StatusCode } from './model.js';

/** What the writer was told after begin(), one entry a call. */
export const ATTR = 0;
export const ATTRS = 1;
export const OWN = 2;
export const EVENT = 3;

/** A span as its writer was told it: begin()'s arguments, the calls after it, and end()'s. Reused span after span. */
export class SpanLog extends SpanHead {
  code = 0 as StatusCode;
  message: string | undefined = undefined;
  /** Calls after begin(). */
  n = 0;
  readonly type: number[] = [];
  /** ATTR: the pair; ATTRS: the run; OWN: the key; EVENT: the name. */
  readonly ref: unknown[] = [];
  /** OWN: the value; EVENT: the time (ms). */
  readonly value: AttributeValue[] = [];

  push(type: number, ref: unknown, value: AttributeValue): void {
    const i = this.n++;
    this.type[i] = type;
    this.ref[i] = ref;
    this.value[i] = value;
  }
}

/** How an OWN value is written, and so what may go into its hole. */
const STRING = 0;
const INT = 1;
const DOUBLE = 2;
/** A boolean: its byte is the template's own, so the value must be the same. */
const SAME = 3;

export interface Template {
  bytes: Buffer;
  name: string;
  kind: SpanKind;
  code: StatusCode;
  message: string | undefined;
  n: number;
  type: number[];
  ref: unknown[];
  /** Per call: how an OWN value is written (STRING, INT, DOUBLE, SAME); the boolean for SAME. */
  how: number[];
  same: AttributeValue[];
  /** Per call: where its value's bytes begin in `bytes`, and how many there are (OWN, EVENT); -1 for none. */
  at: number[];
  len: number[];
  traceAt: number;
  traceLen: number;
  spanAt: number;
  spanLen: number;
  /** -1: the span has no parent. */
  parentAt: number;
  parentLen: number;
  startAt: number;
  endAt: number;
}

/**
 * How anyValue writes `value` and in how many bytes, as one number (no array
 * per value): `how + 4 × bytes`; -1 when it cannot go into a hole (a string
 * that is not ASCII, an array).
 */
function sizeOf(value: AttributeValue): number {
  if (typeof value === 'string') {
    for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) >= 0x80) return -1;
    return STRING + 4 * value.length;
  }
  if (typeof value === 'number') return Number.isSafeInteger(value) ? INT + 4 * varintLen(value) : DOUBLE + 4 * 8;
  if (typeof value === 'boolean') return SAME;
  return -1;
}

/** An int64's varint bytes (a negative one: ten, its two's complement). */
function varintLen(n: number): number {
  if (n < 0) return 10;
  let len = 1;
  for (let v = n; v > 0x7f; v = Math.floor(v / 128)) len += 1;
  return len;
}

/**
 * Records the holes of a span the arena writes the usual way: `mark()` before
 * a value is written, with its place once written; Writer.moved keeps the
 * places right when a message's body moves up for a longer length.
 */
export class Recorder {
  /** Holes' places in the writer: begin()'s five (trace, span, parent, start, end), then one per call. */
  private readonly at: number[] = [];
  private readonly len: number[] = [];
  private ok = true;
  private w: Writer | null = null;
  private readonly shift = (start: number, extra: number): void => {
    const at = this.at;
    for (let i = 0; i < at.length; i++) if (at[i]! > start) at[i] = at[i]! + extra;
  };

  start(w: Writer, log: SpanLog): void {
    this.w = w;
    this.ok = log.traceState === undefined || log.traceState === '';
    this.at.length = 5 + log.n;
    this.len.length = 5 + log.n;
    this.at.fill(-1);
    this.len.fill(0);
    w.moved = this.shift;
  }

  /** The value just written (its bytes end at the writer's place) is hole `i` (0–4: begin's; 5 + k: the k-th call's). */
  hole(i: number, len: number): void {
    this.at[i] = this.w!.pos - len;
    this.len[i] = len;
  }

  /** An OWN value for hole 5 + k, after it was written; one that cannot be a hole leaves no template. */
  own(k: number, value: AttributeValue): void {
    const size = sizeOf(value);
    if (size < 0) this.ok = false;
    else if (size % 4 !== SAME) this.hole(5 + k, Math.floor(size / 4));
  }

  /** The template of the span written from `mark` to the writer's place; null when it cannot be one. Stops recording. */
  finish(log: SpanLog, mark: number): Template | null {
    const w = this.w!;
    w.moved = null;
    this.w = null;
    if (!this.ok) return null;
    const at = this.at.map((p) => (p < 0 ? -1 : p - mark));
    const how: number[] = [];
    const same: AttributeValue[] = [];
    for (let k = 0; k < log.n; k++) {
      how[k] = log.type[k] === OWN ? sizeOf(log.value[k]!) % 4 : -1;
      same[k] = how[k] === SAME ? log.value[k]! : false;
    }
    return {
      bytes: Buffer.from(w.buf.subarray(mark, w.pos)),
      name: log.name,
      kind: log.kind,
      code: log.code,
      message: log.message,
      n: log.n,
      type: log.type.slice(0, log.n),
      ref: log.ref.slice(0, log.n),
      how,
      same,
      at: at.slice(5),
      len: this.len.slice(5),
      traceAt: at[0]!,
      traceLen: this.len[0]!,
      spanAt: at[1]!,
      spanLen: this.len[1]!,
      parentAt: at[2]!,
      parentLen: this.len[2]!,
      startAt: at[3]!,
      endAt: at[4]!,
    };
  }
}

/** Whether `log` is `t` but for the values in its holes. */
export function fits(t: Template, log: SpanLog): boolean {
  if (t.name !== log.name || t.kind !== log.kind || t.n !== log.n || t.code !== log.code || t.message !== log.message) return false;
  if ((log.traceState !== undefined && log.traceState !== '') || log.traceId.length !== 2 * t.traceLen || log.spanId.length !== 2 * t.spanLen) return false;
  if (log.parentSpanId === '' ? t.parentAt >= 0 : log.parentSpanId.length !== 2 * t.parentLen || t.parentAt < 0) return false;
  for (let k = 0; k < log.n; k++) {
    const type = log.type[k]!;
    if (type !== t.type[k] || log.ref[k] !== t.ref[k]) return false;
    if (type !== OWN) continue;
    const value = log.value[k]!;
    const how = t.how[k]!;
    if (how === SAME) {
      if (value !== t.same[k]) return false;
      continue;
    }
    if (sizeOf(value) !== how + 4 * t.len[k]!) return false;
  }
  return true;
}

/** Writes `t`'s bytes at the writer's place with `log`'s values in its holes (fits(t, log) was true). */
export function writeFrom(t: Template, log: SpanLog, w: Writer): void {
  const base = w.pos;
  w.bytes(t.bytes);
  const buf = w.buf;
  w.hexAt(base + t.traceAt, log.traceId);
  w.hexAt(base + t.spanAt, log.spanId);
  if (t.parentAt >= 0) w.hexAt(base + t.parentAt, log.parentSpanId);
  w.msAt(base + t.startAt, log.startMs);
  w.msAt(base + t.endAt, log.endMs);
  for (let k = 0; k < log.n; k++) {
    const at = t.at[k]!;
    if (at < 0) continue;
    const value = log.value[k]!;
    if (log.type[k] === EVENT) w.msAt(base + at, value as number);
    else if (typeof value === 'string') for (let i = 0; i < value.length; i++) buf[base + at + i] = value.charCodeAt(i);
    else if (t.how[k] === DOUBLE) buf.writeDoubleLE(value as number, base + at);
    else varintAt(buf, base + at, value as number);
  }
}

/** An int64 as varint at `at` (Writer.int64's bytes without its tag). */
function varintAt(buf: Buffer, at: number, n: number): void {
  if (n < 0) {
    let v = BigInt.asUintN(64, BigInt(n));
    for (let i = 0; i < 9; i++) {
      buf[at + i] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    buf[at + 9] = Number(v);
    return;
  }
  let p = at;
  while (n > 0x7f) {
    buf[p++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[p] = n;
}
