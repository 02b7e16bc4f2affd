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
 * - `pin_file`: a pin file written (its SHA-256) or removed (null), by a
 *   session or a pins command. The pin file is tied to the chain by it: a
 *   file whose bytes are not those of its last `pin_file` record (edited by
 *   hand, re-pinned by someone who is not mcpguard, restored, deleted) is
 *   refused at load (guard.ts) and reported by `mcpguard verify`.
 * Every record of one decision carries the same `decision_id`.
 *
 * Appends are made under a lock file (`decisions.lock`, O_EXCL, holding the
 * writer's pid): sessions that pin at the same moment must not both extend
 * the chain from the same last record.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
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
  // One id for the records of one decision, so that an undone record names them all.
  const by = { decision_id: randomBytes(6).toString('hex'), user: who(), mcpguard_pid: process.pid };
  // Names, commands and tools come from a server and a command line: kept masked, as the session records keep them.
  append(
    pinsDir,
    key,
    decisions.map((d) => processMasker().value({ ...d, ...by })),
  );
  try {
    effect();
  } catch (error) {
    append(pinsDir, key, [{ type: 'pin_decision_undone', pin_id: decisions[0]?.pin_id ?? null, reason: (error as Error).message, ...by }]);
    throw error;
  }
}

/** Record that the pin file of `pinId` now has bytes hashing to `sha256` (null: it was removed); `by`: a session or a pins command. */
export function recordPinFile(pinsDir: string, key: Buffer | undefined, pinId: string, sha256: string | null, by: string): void {
  append(pinsDir, key, [{ type: 'pin_file', pin_id: pinId, file_sha256: sha256, by, user: who(), mcpguard_pid: process.pid }]);
}

/** The SHA-256 of a pin file's bytes, as `pin_file` records it. */
export function fileHash(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Why the pin file of `pinId` (its bytes, null: there is none) cannot be
 * trusted, or null when it is the one last recorded (or there is neither a
 * file nor a record). `bytes` of the chain: null when there is none.
 */
export function pinFileProblem(chain: Buffer | null, key: Buffer | undefined, pinId: string, file: Buffer | null): string | null {
  if (chain !== null) {
    const verdict = verifyDecisions(chain, key);
    if (verdict.status !== 'ok')
      return `the chain of pin decisions does not verify (${verdict.status}${verdict.line === null ? '' : ` at line ${verdict.line}`}: ${verdict.reason})`;
  }
  const recorded = chain === null ? undefined : lastPinFiles(chain).get(pinId);
  if (file === null)
    return recorded === undefined || recorded === null ? null : 'the pin file is gone, and no recorded decision removed it: it was deleted outside mcpguard';
  if (recorded === undefined)
    return 'the pin file was never recorded in the chain of pin decisions (pins/decisions.log): it was written outside mcpguard, or by an mcpguard that did not record its pin files';
  if (recorded === null) return 'the pin file was recorded as removed, and is there again: it was restored or written outside mcpguard';
  const now = fileHash(file);
  return now === recorded
    ? null
    : `the pin file does not match its last recorded write (recorded ${recorded.slice(0, 16)}, the file is ${now.slice(0, 16)}): it was edited outside mcpguard`;
}

/** The last recorded `pin_file` hash of each pin id (null: removed). */
export function lastPinFiles(bytes: Buffer): Map<string, string | null> {
  const last = new Map<string, string | null>();
  for (const line of bytes.toString('utf8').split('\n')) {
    if (!line.includes('"type":"pin_file"')) continue;
    let r: LogRecord;
    try {
      r = JSON.parse(line) as LogRecord;
    } catch {
      continue;
    }
    if (r?.type === 'pin_file' && typeof r.pin_id === 'string') last.set(r.pin_id, typeof r.file_sha256 === 'string' ? r.file_sha256 : null);
  }
  return last;
}

/** Append `records` to `pinsDir`'s chain, under its lock. */
function append(pinsDir: string, key: Buffer | undefined, records: LogRecord[]): void {
  locked(pinsDir, () => {
    const chain = SideChain.open(join(pinsDir, DECISIONS_FILE), DECISIONS, key);
    try {
      chain.append(...records);
    } finally {
      chain.close();
    }
  });
}

const LOCK_FILE = 'decisions.lock';
/** How long a writer waits for another's lock (each append takes microseconds; a live holder this long is stuck). */
const LOCK_WAIT_MS = 5000;

function locked(pinsDir: string, work: () => void): void {
  const path = join(pinsDir, LOCK_FILE);
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      try {
        writeSync(fd, String(process.pid));
      } finally {
        closeSync(fd);
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (staleLock(path)) {
        try {
          unlinkSync(path);
        } catch {
          /* another writer took it away first */
        }
        continue;
      }
      if (Date.now() > deadline) throw new Error(`${path} has been held by another mcpguard for ${LOCK_WAIT_MS} ms; if none runs, remove it`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    }
  }
  try {
    work();
  } finally {
    try {
      unlinkSync(path);
    } catch {
      /* already gone */
    }
  }
}

/** A lock whose writer is gone (a pid that does not run), or that holds no pid and is older than the wait. */
function staleLock(path: string): boolean {
  try {
    const pid = Number(readFileSync(path, 'utf8'));
    if (!Number.isInteger(pid) || pid <= 0) return Date.now() - statSync(path).mtimeMs > LOCK_WAIT_MS;
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH' || (error as NodeJS.ErrnoException).code === 'ENOENT';
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
    try {
      r = JSON.parse(line) as LogRecord;
    } catch {
      continue;
    }
    if (r === null || typeof r !== 'object' || Array.isArray(r)) continue;
    if (r.type === 'pin_decision_undone') {
      for (const d of records) if (d.decision_id === r.decision_id) d.undone = typeof r.reason === 'string' ? r.reason : 'undone';
      continue;
    }
    if (r.type === 'pin_accepted' || r.type === 'pins_forgotten') records.push(r);
  }
  return records;
}
