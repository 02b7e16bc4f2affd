/**
 * What people decided about pinned tool definitions, kept where an operator
 * can find it afterwards: `<record dir>/pins/decisions.log`, a side chain
 * (records/side-chain.ts: append-only, each record hashed and chained, with
 * the audit key when one is configured), checked by `mcpguard verify` and
 * listed by `mcpguard pins log`.
 *
 * A decision is recorded BEFORE it takes effect: a pins command killed
 * between the two leaves a decision whose pin file did not change (the pin
 * file then still holds the change, and `pins diff` shows it), never a pin
 * file changed without a record. An effect that fails is followed by a
 * `pin_decision_undone` record.
 *
 * Records:
 * - `pin_accepted`: a held change accepted (pin id, server, command, tool or
 *   null for the server's instructions, the change's kind, the definition's
 *   SHA-256 before and after), by which user.
 * - `pins_forgotten`: a server's pins removed (how many tools, how many held
 *   changes), by which user.
 * - `pin_decision_undone`: the decision with its `decision_id` did not take
 *   effect, and why.
 * Every record of one decision carries the same `decision_id`.
 */
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import type { LogRecord } from '../records/chain.js';
import { processMasker } from '../mask/mask.js';
import { SideChain, readSideChain, verifySideChain, type SideChainKind, type SideChainVerdict } from '../records/side-chain.js';

export const DECISIONS_FILE = 'decisions.log';
export const DECISIONS: SideChainKind = { logId: 'pin_decisions', noun: 'pin decisions', writer: 'mcpguard pins' };

/** Who is deciding: the login name, else the uid. */
function who(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

/**
 * Record `decisions` in `pinsDir`'s chain (made 0700 by the caller), then run
 * `effect`; if the effect throws, record that it was undone and rethrow.
 */
export function decide(pinsDir: string, key: Buffer | undefined, decisions: LogRecord[], effect: () => void): void {
  const chain = SideChain.open(join(pinsDir, DECISIONS_FILE), DECISIONS, key);
  try {
    // One id for the records of one decision, so that an undone record names them all.
    const by = { decision_id: randomBytes(6).toString('hex'), user: who(), mcpguard_pid: process.pid };
    // Names, commands and tools come from a server and a command line: kept masked, as the session records keep them.
    chain.append(...decisions.map((d) => processMasker().value({ ...d, ...by })));
    try {
      effect();
    } catch (error) {
      chain.append({ type: 'pin_decision_undone', pin_id: decisions[0]?.pin_id ?? null, reason: (error as Error).message, ...by });
      throw error;
    }
  } finally {
    chain.close();
  }
}

/** The chain's bytes, null when no decision was ever recorded. */
export function readDecisions(pinsDir: string): Buffer | null {
  return readSideChain(join(pinsDir, DECISIONS_FILE));
}

/** Verify the chain's bytes (see side-chain.ts). */
export function verifyDecisions(bytes: Buffer, key: Buffer | undefined): SideChainVerdict {
  return verifySideChain(bytes, DECISIONS, key);
}

/** The decision records of the chain, oldest first (undone ones marked), header left out. */
export function decisionRecords(bytes: Buffer): LogRecord[] {
  const records: LogRecord[] = [];
  for (const line of bytes.toString('utf8').split('\n')) {
    if (line === '') continue;
    let r: LogRecord;
    try { r = JSON.parse(line) as LogRecord; } catch { continue; }
    if (r === null || typeof r !== 'object' || Array.isArray(r)) continue;
    if (r.type === 'pin_decision_undone') {
      for (const d of records) if (d.decision_id === r.decision_id) d.undone = typeof r.reason === 'string' ? r.reason : 'undone';
      continue;
    }
    if (r.type === 'pin_accepted' || r.type === 'pins_forgotten') records.push(r);
  }
  return records;
}
