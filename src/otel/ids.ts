/**
 * Trace and span ids, derived from the ids mcpguard already keeps: a session's
 * trace and root span from its session id, a call's span from the session id
 * and the call id. Both of those carry random bits (records/ids.ts), so the
 * derived ids are as unpredictable as random ones to anyone who does not hold
 * the records, and the live export and a backfill from the records (`mcpguard
 * export otlp`) name the same span the same way: exporting twice replaces,
 * never duplicates.
 */
import * as crypto from 'node:crypto';

const ZERO = /^0+$/;

type OneShot = (algorithm: string, data: string, encoding: 'hex') => string;
/** crypto.hash (Node ≥ 20.12): one call, no Hash object per id (a call's span id cost ~0.5 KB of heap through createHash). */
const oneShot = (crypto as unknown as { hash?: OneShot }).hash;
const sha256Hex: (data: string) => string =
  typeof oneShot === 'function' ? (data) => oneShot('sha256', data, 'hex') : (data) => crypto.createHash('sha256').update(data).digest('hex');

function derived(kind: string, parts: readonly string[], hexDigits: number): string {
  // One hash of one string: a call's id costs one hash (about 1 µs), not one per part.
  const hex = sha256Hex(`mcpguard-otel\u0000${kind}\u0000${parts.join('\u0000')}`).slice(0, hexDigits);
  // An all-zero id is invalid in W3C and OTLP; one in 2^64 hashes, but never sent.
  return ZERO.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}

// A process runs one session (a backfill, one at a time): its two ids are made once, not per call.
let lastSession = '';
let lastIds = { trace: '', span: '' };

function sessionIds(sessionId: string): { trace: string; span: string } {
  if (sessionId !== lastSession) {
    lastIds = { trace: derived('trace', [sessionId], 32), span: derived('session', [sessionId], 16) };
    lastSession = sessionId;
  }
  return lastIds;
}

/** The trace a session's own spans belong to (calls without the client's trace context). */
export function sessionTraceId(sessionId: string): string {
  return sessionIds(sessionId).trace;
}

/** The session's root span. */
export function sessionSpanId(sessionId: string): string {
  return sessionIds(sessionId).span;
}

let callPrefixOf = '';
let callPrefix = '';

/** A call's SERVER span: `derived('call', [sessionId, callId], 16)`, with the session's part of the input made once. */
export function callSpanId(sessionId: string, callId: string): string {
  if (sessionId !== callPrefixOf) {
    callPrefix = `mcpguard-otel\u0000call\u0000${sessionId}\u0000`;
    callPrefixOf = sessionId;
  }
  const hex = sha256Hex(callPrefix + callId).slice(0, 16);
  return ZERO.test(hex) ? `${hex.slice(0, -1)}1` : hex;
}
