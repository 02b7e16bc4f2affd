/**
 * The hash chain's rules, shared by the writer (store.ts) and the verifier
 * (verify.ts) so the two cannot drift apart.
 *
 * Every record carries `seq` (0, 1, 2, ...) and `prev`: ZERO_HASH for the
 * header, else H(the previous line's bytes, its newline included). The seal,
 * the last record, also carries `hash` = H(canonical(seal without `hash`)),
 * so a sealed log is covered to its last byte. H is SHA-256, or HMAC-SHA256
 * when an audit key is given: without the key, whoever can edit the file
 * cannot recompute the chain.
 *
 * Why `prev` hashes the line and no record but the seal hashes itself: a
 * record's line can then be written before anything is hashed. A call's
 * write-ahead attempt is on the request path; its hash is computed when the
 * next record is chained, after the request has been forwarded.
 */
import * as crypto from 'node:crypto';
import { createHash, createHmac } from 'node:crypto';
import { canonical } from './canonical.js';
import { LineBuffer } from './line-buffer.js';

/** `prev` of record 0. */
export const ZERO_HASH = '0'.repeat(64);

/** Format version written in the header and required by the verifier. */
export const RECORD_VERSION = 2;

export type ChainAlg = 'sha256' | 'hmac-sha256';

/** Fields the chain owns (`hash`: the seal's own hash); an event body may not set them. */
export const CHAIN_FIELDS: readonly string[] = ['seq', 'prev', 'hash', 'ts', 'type'];

/** A parsed record: a JSON object, typed loosely because bodies are free-form. */
export type LogRecord = Record<string, unknown>;

/** The key's public name: the first 16 hex digits of sha256(key). */
export function keyId(key: Buffer): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 16);
}

/** The algorithm a chain written with (or without) this key uses. */
export function chainAlg(key: Buffer | undefined): ChainAlg {
  return key === undefined ? 'sha256' : 'hmac-sha256';
}

/** The seal's `hash`: H(canonical(seal)) for the seal record without `hash`. */
export function recordHash(unhashed: LogRecord, key: Buffer | undefined): string {
  return digest(canonical(unhashed), key, 'hex');
}

/** The next record's `prev`: H(a line's text or bytes, its newline included). */
export function lineHash(line: string | NodeJS.ArrayBufferView, key: Buffer | undefined): string {
  return digest(line, key, 'hex');
}

/**
 * `lineHash`'s digest as its 32 bytes in a latin1 ('binary') string (`prevHex` turns it
 * into `prev`'s text): half the size of the hex string, and a line buffer
 * writes the hex digits from it without either string being made.
 */
export function lineDigest(line: string | NodeJS.ArrayBufferView, key: Buffer | undefined): string {
  return digest(line, key, 'binary');
}

/** The hex text of a digest that is either already hex (64 characters) or raw bytes as latin1 (32, from `lineDigest`). */
export function prevHex(prev: string): string {
  return prev.length === RAW_DIGEST_CHARS ? Buffer.from(prev, 'latin1').toString('hex') : prev;
}

/** A SHA-256 digest's length as latin1 text (its hex is twice as long). */
export const RAW_DIGEST_CHARS = 32;

// One call into the crypto binding instead of three, where Node has it (20.12+).
const oneShot: ((alg: string, data: string | NodeJS.ArrayBufferView, encoding: 'hex' | 'binary') => string) | undefined = (
  crypto as { hash?: typeof crypto.hash }
).hash;

/** SHA-256 (HMAC-SHA256 with a key) of some text (of its UTF-8 bytes) or bytes, as hex or as latin1 (one character a byte). */
function digest(data: string | NodeJS.ArrayBufferView, key: Buffer | undefined, encoding: 'hex' | 'binary'): string {
  if (key !== undefined) return createHmac('sha256', key).update(data).digest(encoding);
  return oneShot === undefined ? createHash('sha256').update(data).digest(encoding) : oneShot('sha256', data, encoding);
}

/** The seal's line, newline included: canonical({...seal, hash}) with `hash` = recordHash(seal). */
export function sealLine(unhashed: LogRecord, key: Buffer | undefined): string {
  return `${canonical({ ...unhashed, hash: recordHash(unhashed, key) })}\n`;
}

/** Values arrays a shape keeps for reuse (deferred records of pipelined calls can hold more at once; those are made anew). */
const SPARE_VALUES = 16;

/** A member's bytes kept for the next line of its shape (its part and value) when they are no longer than this. */
const KEPT_BYTES = 64;
/** No value kept for a member: `===` to no value a record can hold. */
const NOT_KEPT: unique symbol = Symbol('not kept');

/** Where a member of a shaped record comes from: an index into its values, or a chain field. */
const SEQ = -1;
const PREV = -2;
const TS = -3;
const TYPE = -4;

/**
 * A record type whose members are fixed ahead (a call's attempt, dispatch and
 * end: the records every call writes). The sorted member order and the bytes
 * between the values are worked out once, into a template; each line writes
 * those parts and its values straight into a LineBuffer: no object is copied
 * or sorted, and no string is built for the line. Its lines are byte-identical
 * to canonical() of the same record (the record tests check both agree), so
 * the verifier needs no shapes.
 */
export class RecordShape {
  /** Where each member's value comes from, in canonical order: an index into `values`, or a chain field. */
  private readonly from: number[];
  /**
   * The bytes before member 0's value, between values 0 and 1, ..., and after
   * the last value (the newline included).
   */
  private readonly parts: Buffer[];

  /** Per member in canonical order: its value is a time in ms (or null), written as an ISO 8601 string. */
  private readonly time: boolean[];

  /**
   * Per member in canonical order: the last primitive value written there
   * (NOT_KEPT if none), and in `lastBytes` the bytes its part and value came
   * to. Most of a call's members repeat from one call to the next
   * (the session id, the method, the state, the nulls, the ms of its times),
   * so such a member costs one copy of bytes this shape wrote before, not a
   * part and a value spelled again. A primitive's bytes depend only on the
   * value (`===`: 0 and -0 are both `0`) and the member, so they are the same.
   * Only bytes up to KEPT_BYTES are kept: what a shape holds on to between
   * calls is a few short strings, never a call's stderr text.
   */
  private readonly lastValue: unknown[];
  private readonly lastBytes: Buffer[];

  /**
   * Values arrays made by `values()` and given back by the log once their
   * record was chained: a call's records reuse them instead of
   * allocating a values array each (an end record's is 27 slots). Only
   * arrays made here are kept (a caller's own array is never reused behind
   * its back), and at most a few, emptied.
   */
  private readonly spare: unknown[][] = [];
  private readonly made = new WeakSet<unknown[]>();

  /** `times`: fields whose values are times in ms (Date.now()) or null, written as toISOString() spells them. */
  constructor(
    readonly type: string,
    readonly fields: readonly string[],
    readonly times: readonly string[] = [],
  ) {
    for (const field of fields) {
      if (CHAIN_FIELDS.includes(field)) throw new TypeError(`record body may not set '${field}' (type '${type}')`);
    }
    if (new Set(fields).size !== fields.length) throw new TypeError(`record shape '${type}' names a field twice`);
    // A Map: field names come from outside, and `chain['__proto__']` would read the prototype.
    const chain = new Map([
      ['seq', SEQ],
      ['prev', PREV],
      ['ts', TS],
      ['type', TYPE],
    ]);
    const keys = [...fields, ...chain.keys()].sort();
    this.from = keys.map((k) => chain.get(k) ?? fields.indexOf(k));
    this.time = keys.map((k) => !chain.has(k) && times.includes(k));
    // `prev` (a hex digest) and `ts` (an ISO time) have no character JSON would escape: their quotes are part of the template;
    // `type` is fixed, so its JSON text is too.
    const texts = ['{'];
    keys.forEach((k, i) => {
      const from = this.from[i]!;
      const quoted = from === PREV || from === TS;
      texts[texts.length - 1] += `${i === 0 ? '' : ','}${JSON.stringify(k)}:${quoted ? '"' : ''}${from === TYPE ? JSON.stringify(type) : ''}`;
      texts.push(quoted ? '"' : '');
    });
    texts[texts.length - 1] += '}\n';
    this.parts = texts.map((text) => Buffer.from(text, 'utf8'));
    this.lastValue = keys.map(() => NOT_KEPT);
    this.lastBytes = keys.map(() => Buffer.alloc(0));
  }

  /** An array for one record's values, in the order of `fields`: fill every slot, then hand it to SessionLog.appendShaped. */
  values(): unknown[] {
    const spare = this.spare.pop();
    if (spare !== undefined) return spare;
    const made = new Array<unknown>(this.fields.length).fill(null);
    this.made.add(made);
    return made;
  }

  /** A values array whose record is chained (its line is in the buffer): kept for `values()` if it was made there. */
  recycle(values: readonly unknown[]): void {
    if (this.spare.length >= SPARE_VALUES || !this.made.has(values as unknown[])) return;
    // Emptied: a spare array must not keep a call's stderr text or decision alive.
    (values as unknown[]).fill(null);
    this.spare.push(values as unknown[]);
  }

  /**
   * The line of one record of this shape, newline included: `values` in the
   * order of `fields` (undefined leaves a member out, as in canonical()), then
   * the chain fields: `prev` a hex digest (or the same digest as 32 latin1
   * characters, from `lineDigest`: written as hex), `ts` an ISO 8601 time
   * (from `isoAt`).
   */
  line(values: readonly unknown[], seq: number, prev: string, ts: string | number): string {
    const out = new LineBuffer();
    this.write(out, values, seq, prev, ts);
    return out.bytes.toString('utf8', 0, out.length);
  }

  /** `line()`, written into `out` (at its end); `ts` an ISO time or a time in ms. On a throw, `out` is left as it was. */
  write(out: LineBuffer, values: readonly unknown[], seq: number, prev: string, ts: string | number): void {
    const start = out.length;
    try {
      const from = this.from;
      const parts = this.parts;
      const lastValue = this.lastValue;
      for (let i = 0; i < from.length; i++) {
        const at = from[i]!;
        if (at >= 0) {
          const value = values[at];
          if (value === lastValue[i]) {
            out.raw(this.lastBytes[i]!);
            continue;
          }
          if (value === undefined) {
            out.length = start;
            return out.utf8(this.sparseLine(values, seq, prev, ts));
          }
          const memberStart = out.length;
          out.raw(parts[i]!);
          if (this.time[i] === true && typeof value === 'number') out.isoTime(value, true);
          else out.value(value);
          if (value === null || (typeof value !== 'object' && typeof value !== 'function')) this.keep(i, value, out, memberStart);
          continue;
        }
        if (at === TS && typeof ts === 'number' && ts === lastValue[i]) {
          out.raw(this.lastBytes[i]!);
          continue;
        }
        const memberStart = out.length;
        out.raw(parts[i]!);
        if (at === SEQ) out.number(seq);
        else if (at === PREV) {
          if (prev.length === RAW_DIGEST_CHARS) out.hexOf(prev);
          else out.ascii(prev);
        } else if (at === TS) {
          if (typeof ts === 'number') {
            out.isoTime(ts, false);
            this.keep(i, ts, out, memberStart);
          } else out.ascii(ts);
        }
      }
      out.raw(parts[from.length]!);
    } catch (error) {
      out.length = start;
      throw error;
    }
  }

  /** Member `i` just wrote `value` as bytes [start, out.length) of `out`: kept for the next line, if short. */
  private keep(i: number, value: unknown, out: LineBuffer, start: number): void {
    const n = out.length - start;
    if (n > KEPT_BYTES) {
      this.lastValue[i] = NOT_KEPT;
      return;
    }
    // A buffer of its own per member, made anew only when the length changes (a request id's digits, say): no allocation per line.
    let kept = this.lastBytes[i]!;
    if (kept.length !== n) {
      kept = Buffer.allocUnsafe(n);
      this.lastBytes[i] = kept;
    }
    const bytes = out.bytes;
    for (let k = 0; k < n; k++) kept[k] = bytes[start + k]!;
    this.lastValue[i] = value;
  }

  /** A record with members left out: rare, so it takes the general path. */
  private sparseLine(values: readonly unknown[], seq: number, prev: string, ts: string | number): string {
    const record: LogRecord = {};
    // defineProperty: a field named `__proto__` must become a member, not the prototype.
    this.fields.forEach((field, i) => {
      const value = this.times.includes(field) && typeof values[i] === 'number' ? isoAt(values[i] as number) : values[i];
      Object.defineProperty(record, field, { value, enumerable: true, writable: true, configurable: true });
    });
    return `${canonical(Object.assign(record, { type: this.type, ts: typeof ts === 'number' ? isoAt(ts) : ts, seq, prev: prevHex(prev) }))}\n`;
  }
}

// The last few times asked, by ms: a call's records ask for its start, dispatch and end times in turn.
const ISO_CACHE = 4;
const isoMs = new Float64Array(ISO_CACHE).fill(Number.NaN);
const isoText: string[] = new Array<string>(ISO_CACHE).fill('');
let isoNext = 0;
/** The ISO 8601 text of a time in ms, remembered for the last few ms asked (a busy relay asks many times per ms). */
export function isoAt(ms: number): string {
  for (let i = 0; i < ISO_CACHE; i++) if (isoMs[i] === ms) return isoText[i]!;
  const text = new Date(ms).toISOString();
  isoMs[isoNext] = ms;
  isoText[isoNext] = text;
  isoNext = (isoNext + 1) % ISO_CACHE;
  return text;
}
