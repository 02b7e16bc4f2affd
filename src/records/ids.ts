/**
 * Identifiers and the frame fingerprint. Session ids live in session-id.ts,
 * which the start-up path loads without the crypto module.
 */
import { createHash, randomFillSync } from 'node:crypto';

export { isSessionId, newSessionId } from './session-id.js';

const CALL_ID_HEX = 12;
const POOL_IDS = 512;
/**
 * Random hex digits for call ids, made 512 ids at a time: one call into the
 * CSPRNG (and one hex encoding) per call costs more than the rest of the id.
 */
const idPool = Buffer.alloc((CALL_ID_HEX / 2) * POOL_IDS);
let idHex = '';
let idAt = 0;

/** A new call id: `c_` and 12 random hex digits. */
export function newCallId(): string {
  if (idAt === idHex.length) {
    randomFillSync(idPool);
    idHex = idPool.toString('hex');
    idAt = 0;
  }
  const id = `c_${idHex.slice(idAt, idAt + CALL_ID_HEX)}`;
  idAt += CALL_ID_HEX;
  return id;
}

/**
 * Identify a frame without revealing it: the first 16 hex digits of its SHA-256
 * and its length. A rejected frame may hold secrets, so records keep only this.
 */
export function fingerprint(bytes: Buffer): { sha256_16: string; bytes: number } {
  return { sha256_16: createHash('sha256').update(bytes).digest('hex').slice(0, 16), bytes: bytes.length };
}
