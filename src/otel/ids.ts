/**
 * Trace and span ids, derived from the ids mcpguard already keeps: a session's
 * trace and root span from its session id, a call's span from the session id
 * and the call id. Both of those carry random bits (records/ids.ts), so the
 * derived ids are as unpredictable as random ones to anyone who does not hold
 * the records, and the live export and a backfill from the records (`mcpguard
 * export otlp`) name the same span the same way: exporting twice replaces,
 * never duplicates. The session's two ids are one SHA-256 each, made once; a
 * call's is SipHash-2-4 under a key made once per session (callSpanId), so a
 * call costs no hash object and no digest string.
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

let callKeyOf = '';
/** The session's SipHash key, four little-endian 32-bit words: the first 16 bytes of one SHA-256 per session. */
const callKey = new Uint32Array(4);
/** The 16 hex digits of the last call span id (one string made per id, from these codes). */
const hexCodes = new Array<number>(16).fill(48);
const HEX = '0123456789abcdef';

/**
 * A call's SERVER span: SipHash-2-4 of the call id, keyed by the session
 * (`sha256('mcpguard-otel\0call\0' + sessionId)`, its first 16 bytes, made
 * once per session). A keyed PRF rather than a hash per call: the same
 * session and call ids give the same span id live and in a backfill, anyone
 * without the session id cannot predict it, and a call costs no hash object
 * and no digest string, only the id's own 16 digits.
 */
export function callSpanId(sessionId: string, callId: string): string {
  if (sessionId !== callKeyOf) {
    const digest = crypto.createHash('sha256').update(`mcpguard-otel\u0000call\u0000${sessionId}`).digest();
    for (let i = 0; i < 4; i++) callKey[i] = digest.readUInt32LE(4 * i);
    callKeyOf = sessionId;
  }
  sipHash24(callKey, callId);
  let zero = true;
  for (let i = 0; i < 8; i++) {
    const b = i < 4 ? (OUT[1]! >>> (8 * i)) & 0xff : (OUT[0]! >>> (8 * (i - 4))) & 0xff;
    if (b !== 0) zero = false;
    hexCodes[2 * i] = HEX.charCodeAt(b >>> 4);
    hexCodes[2 * i + 1] = HEX.charCodeAt(b & 15);
  }
  // An all-zero id is invalid in W3C and OTLP; one in 2^64, but never sent.
  if (zero) hexCodes[15] = 49;
  return String.fromCharCode.apply(null, hexCodes);
}

/**
 * SipHash-2-4's 64-bit output as hex, its bytes in little-endian order as the
 * reference vectors print them (for tests). The key is 16 bytes.
 */
export function sipHash24Hex(key: Uint8Array, message: string): string {
  const k = new Uint32Array(4);
  for (let i = 0; i < 4; i++) k[i] = (key[4 * i]! | (key[4 * i + 1]! << 8) | (key[4 * i + 2]! << 16) | (key[4 * i + 3]! << 24)) >>> 0;
  sipHash24(k, message);
  const out = Buffer.alloc(8);
  out.writeUInt32LE(OUT[1]!, 0);
  out.writeUInt32LE(OUT[0]!, 4);
  return out.toString('hex');
}

// SipHash-2-4 (Aumasson and Bernstein) on 32-bit halves, its state in a typed array: v0..v3 as (hi, lo) pairs at
// 0..7. Numbers of 32 bits kept in module variables would be boxed on every write (a few KB per hash); here a hash
// allocates nothing.
const V = new Uint32Array(8);
/** The last hash: its high and low 32 bits. */
const OUT = new Uint32Array(2);

function sipRound(): void {
  let v0h = V[0]!;
  let v0l = V[1]!;
  let v1h = V[2]!;
  let v1l = V[3]!;
  let v2h = V[4]!;
  let v2l = V[5]!;
  let v3h = V[6]!;
  let v3l = V[7]!;
  let lo: number;
  let t: number;
  // v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32)
  lo = (v0l + v1l) >>> 0;
  v0h = (v0h + v1h + (lo < v0l ? 1 : 0)) >>> 0;
  v0l = lo;
  t = ((v1h << 13) | (v1l >>> 19)) >>> 0;
  v1l = ((v1l << 13) | (v1h >>> 19)) >>> 0;
  v1h = (t ^ v0h) >>> 0;
  v1l = (v1l ^ v0l) >>> 0;
  t = v0h;
  v0h = v0l;
  v0l = t;
  // v2 += v3; v3 = rotl(v3, 16); v3 ^= v2
  lo = (v2l + v3l) >>> 0;
  v2h = (v2h + v3h + (lo < v2l ? 1 : 0)) >>> 0;
  v2l = lo;
  t = ((v3h << 16) | (v3l >>> 16)) >>> 0;
  v3l = ((v3l << 16) | (v3h >>> 16)) >>> 0;
  v3h = (t ^ v2h) >>> 0;
  v3l = (v3l ^ v2l) >>> 0;
  // v0 += v3; v3 = rotl(v3, 21); v3 ^= v0
  lo = (v0l + v3l) >>> 0;
  v0h = (v0h + v3h + (lo < v0l ? 1 : 0)) >>> 0;
  v0l = lo;
  t = ((v3h << 21) | (v3l >>> 11)) >>> 0;
  v3l = ((v3l << 21) | (v3h >>> 11)) >>> 0;
  v3h = (t ^ v0h) >>> 0;
  v3l = (v3l ^ v0l) >>> 0;
  // v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32)
  lo = (v2l + v1l) >>> 0;
  v2h = (v2h + v1h + (lo < v2l ? 1 : 0)) >>> 0;
  v2l = lo;
  t = ((v1h << 17) | (v1l >>> 15)) >>> 0;
  v1l = ((v1l << 17) | (v1h >>> 15)) >>> 0;
  v1h = (t ^ v2h) >>> 0;
  v1l = (v1l ^ v2l) >>> 0;
  V[0] = v0h;
  V[1] = v0l;
  V[2] = v1h;
  V[3] = v1l;
  V[4] = v2l;
  V[5] = v2h;
  V[6] = v3h;
  V[7] = v3l;
}

function compress(mh: number, ml: number): void {
  V[6] = V[6]! ^ mh;
  V[7] = V[7]! ^ ml;
  sipRound();
  sipRound();
  V[0] = V[0]! ^ mh;
  V[1] = V[1]! ^ ml;
}

// The message being hashed (module state, not a closure per hash).
let msgText = '';
let msgBytes: Buffer | null = null;

function at(i: number): number {
  return msgBytes === null ? msgText.charCodeAt(i) : msgBytes[i]!;
}

/** The message is the string's UTF-8 bytes (ASCII, as call ids are, read without a copy). */
function sipHash24(k: Uint32Array, message: string): void {
  msgText = message;
  msgBytes = null;
  for (let i = 0; i < message.length; i++)
    if (message.charCodeAt(i) >= 0x80) {
      msgBytes = Buffer.from(message, 'utf8');
      break;
    }
  const n = msgBytes === null ? message.length : msgBytes.length;
  const k0l = k[0]!;
  const k0h = k[1]!;
  const k1l = k[2]!;
  const k1h = k[3]!;
  V[0] = k0h ^ 0x736f6d65;
  V[1] = k0l ^ 0x70736575;
  V[2] = k1h ^ 0x646f7261;
  V[3] = k1l ^ 0x6e646f6d;
  V[4] = k0h ^ 0x6c796765;
  V[5] = k0l ^ 0x6e657261;
  V[6] = k1h ^ 0x74656462;
  V[7] = k1l ^ 0x79746573;
  const whole = n - (n % 8);
  for (let i = 0; i < whole; i += 8) {
    const ml = (at(i) | (at(i + 1) << 8) | (at(i + 2) << 16) | (at(i + 3) << 24)) >>> 0;
    const mh = (at(i + 4) | (at(i + 5) << 8) | (at(i + 6) << 16) | (at(i + 7) << 24)) >>> 0;
    compress(mh, ml);
  }
  // The last block: the remaining bytes, and the length's low byte in the top byte.
  let ml = 0;
  let mh = ((n & 0xff) << 24) >>> 0;
  for (let i = whole; i < n; i++) {
    const shift = 8 * (i - whole);
    if (shift < 32) ml = (ml | (at(i) << shift)) >>> 0;
    else mh = (mh | (at(i) << (shift - 32))) >>> 0;
  }
  compress(mh, ml);
  V[5] = V[5]! ^ 0xff;
  sipRound();
  sipRound();
  sipRound();
  sipRound();
  OUT[0] = V[0]! ^ V[2]! ^ V[4]! ^ V[6]!;
  OUT[1] = V[1]! ^ V[3]! ^ V[5]! ^ V[7]!;
}
