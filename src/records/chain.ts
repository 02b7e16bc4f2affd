/**
 * The hash chain's rules, shared by the writer (store.ts) and the verifier
 * (verify.ts) so the two cannot drift apart.
 *
 * Every record carries `seq` (0, 1, 2, ...), `prev` (the previous record's
 * `hash`, or ZERO_HASH for the header) and `hash` = H(canonical(record without
 * `hash`)). H is SHA-256, or HMAC-SHA256 when an audit key is given: without the
 * key, whoever can edit the file cannot recompute the chain.
 */
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
  const bytes = canonical(unhashed);
  const h = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  return h.update(bytes).digest('hex');
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
  const h = key === undefined ? createHash('sha256') : createHmac('sha256', key);
  const hash = h.update(`{${parts.join(',')}}`).digest('hex');
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
