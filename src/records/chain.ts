/**
 * The hash chain's rules, shared by the writer (store.ts) and the verifier
 * (verify.ts) so the two cannot drift apart.
 *
 * Every record carries `seq` (0, 1, 2, ...), `prev` (the previous record's
 * `hash`, or ZERO_HASH for the header) and `hash` = H(canonical(record without
 * `hash`)). H is SHA-256, or HMAC-SHA256 when an audit key is given: without the
 * key, whoever can edit the file cannot recompute the chain.
 */
import * as crypto from 'node:crypto';
import { createHash, createHmac } from 'node:crypto';
import { canonical } from './canonical.js';

/** `prev` of record 0. */
export const ZERO_HASH = '0'.repeat(64);

/** Format version written in the header and required by the verifier. */
export const RECORD_VERSION = 1;

export type ChainAlg = 'sha256' | 'hmac-sha256';

/** Fields the chain owns; an event body may not set them. */
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

/** H(canonical(record)) for a record that does not yet hold `hash`. */
export function recordHash(unhashed: LogRecord, key: Buffer | undefined): string {
  return digest(canonical(unhashed), key);
}

// One call into the crypto binding instead of three, where Node has it (20.12+).
const oneShot: ((alg: string, data: string, encoding: 'hex') => string) | undefined = (crypto as { hash?: typeof crypto.hash }).hash;

/** The hex SHA-256 (HMAC-SHA256 with a key) of a record's canonical text. */
function digest(text: string, key: Buffer | undefined): string {
  if (key !== undefined) return createHmac('sha256', key).update(text).digest('hex');
  return oneShot === undefined ? createHash('sha256').update(text).digest('hex') : oneShot('sha256', text, 'hex');
}

/**
 * Hash a record and produce its line in one pass: the top-level members are
 * serialised once, hashed without `hash`, then joined again with `hash` in its
 * sorted place. The result is byte-identical to canonical({...record, hash}),
 * which is what the verifier recomputes (the record tests check both agree).
 */
export function chainLine(unhashed: LogRecord, key: Buffer | undefined): { hash: string; line: string } {
  const keys = Object.keys(unhashed).filter((k) => unhashed[k] !== undefined).sort();
  const parts = keys.map((k) => `${JSON.stringify(k)}:${memberText(unhashed[k])}`);
  const hash = digest(`{${parts.join(',')}}`, key);
  let at = 0;
  while (at < keys.length && keys[at]! < 'hash') at++;
  parts.splice(at, 0, `"hash":"${hash}"`);
  return { hash, line: `{${parts.join(',')}}` };
}

/** A member value's canonical text: plain values directly, anything nested through canonical(). */
function memberText(value: unknown): string {
  if (typeof value === 'string' || typeof value === 'boolean' || value === null) return JSON.stringify(value);
  if (typeof value === 'number' && Number.isFinite(value)) return JSON.stringify(value);
  return canonical(value);
}

/** Where a member of a shaped record comes from: an index into its values, or a chain field. */
const SEQ = -1;
const PREV = -2;
const TS = -3;
const TYPE = -4;

/**
 * A record type whose members are fixed ahead (a call's attempt, dispatch and
 * end: the records every call writes). The sorted member order, each key's
 * text and the place of `hash` are worked out once, so chaining a record of
 * the type is a few string joins and one hash, with no object copied or
 * sorted. Its lines are byte-identical to chainLine's for the same record
 * (the record tests check both agree), so the verifier needs no shapes.
 */
export class RecordShape {
  /** Members in canonical order, `hash` left out: the key's text and where its value comes from. */
  private readonly members: { prefix: string; from: number }[];
  /** How many members sort before `hash`. */
  private readonly beforeHash: number;
  private readonly typeText: string;

  constructor(readonly type: string, readonly fields: readonly string[]) {
    for (const field of fields) {
      if (CHAIN_FIELDS.includes(field)) throw new TypeError(`record body may not set '${field}' (type '${type}')`);
    }
    if (new Set(fields).size !== fields.length) throw new TypeError(`record shape '${type}' names a field twice`);
    // A Map: field names come from outside, and `chain['__proto__']` would read the prototype.
    const chain = new Map([['seq', SEQ], ['prev', PREV], ['ts', TS], ['type', TYPE]]);
    const keys = [...fields, ...chain.keys()].sort();
    this.members = keys.map((k) => ({ prefix: `${JSON.stringify(k)}:`, from: chain.get(k) ?? fields.indexOf(k) }));
    this.beforeHash = keys.filter((k) => k < 'hash').length;
    this.typeText = JSON.stringify(type);
  }

  /**
   * Chain one record of this shape: `values` in the order of `fields`
   * (undefined leaves a member out, as in chainLine), then the chain fields:
   * `prev` a hex digest, `ts` an ISO 8601 time (from `isoAt`).
   */
  line(values: readonly unknown[], seq: number, prev: string, ts: string, key: Buffer | undefined): { hash: string; line: string } {
    let before = '';
    let after = '';
    for (let i = 0; i < this.members.length; i++) {
      const { prefix, from } = this.members[i]!;
      let text: string;
      if (from >= 0) {
        const value = values[from];
        if (value === undefined) continue;
        text = memberText(value);
      } else {
        // `prev` is a hex digest and `ts` an ISO time: neither has a character JSON would escape.
        text = from === SEQ ? String(seq) : from === TYPE ? this.typeText : `"${from === PREV ? prev : ts}"`;
      }
      if (i < this.beforeHash) before = before === '' ? prefix + text : `${before},${prefix}${text}`;
      else after = after === '' ? prefix + text : `${after},${prefix}${text}`;
    }
    const hash = digest(before === '' ? `{${after}}` : `{${before},${after}}`, key);
    return { hash, line: before === '' ? `{"hash":"${hash}",${after}}` : `{${before},"hash":"${hash}",${after}}` };
  }
}

let lastMs = Number.NaN;
let lastIso = '';
/** The ISO 8601 text of a time in ms, remembered for the last ms asked (a busy relay asks many times per ms). */
export function isoAt(ms: number): string {
  if (ms !== lastMs) {
    lastIso = new Date(ms).toISOString();
    lastMs = ms;
  }
  return lastIso;
}
