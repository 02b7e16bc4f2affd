/**
 * Trace and span ids, derived from the ids mcpguard already keeps: a session's
 * trace and root span from its session id, a call's span from the session id
 * and the call id. Both of those carry random bits (records/ids.ts), so the
 * derived ids are as unpredictable as random ones to anyone who does not hold
 * the records, and the live export and a backfill from the records (`mcpguard
 * export otlp`) name the same span the same way: exporting twice replaces,
 * never duplicates.
 */
import { createHash } from 'node:crypto';

const ZERO = /^0+$/;

function derived(kind: string, parts: readonly string[], hexDigits: number): string {
  // One update of one string: a call's id costs one hash (about 1 µs), not one per part.
  const hex = createHash('sha256')
    .update(`mcpguard-otel\u0000${kind}\u0000${parts.join('\u0000')}`)
    .digest('hex')
    .slice(0, hexDigits);
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

/** A call's SERVER span. */
export function callSpanId(sessionId: string, callId: string): string {
  return derived('call', [sessionId, callId], 16);
}
