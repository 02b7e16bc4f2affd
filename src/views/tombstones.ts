/**
 * Tombstones: what `prune` leaves for each session log it removes, so that
 * `verify` can tell a pruned session from one deleted by hand.
 *
 * They live in `pruned.log` in the record directory: a side chain
 * (side-chain.ts), hashed with SHA-256, or HMAC-SHA256 with the audit key when
 * one is configured, so that without the key nobody can forge a tombstone for
 * a log they deleted.
 *
 * Records:
 * - `pruned`: one removed log: session id, file name, records, size, its seal's
 *   hash (or, for a crashed log, the SHA-256 of its last line), when it was
 *   created and ended, when, why and by what it was pruned. Written BEFORE the
 *   file is unlinked: a prune interrupted between the two leaves a tombstone
 *   for a file that is still there (verify says so), never a file gone without one.
 * - `prune_undone`: the unlink after a tombstone failed; the log was not removed.
 * - `prune_run`: one prune's end: what it listed, and a digest of the logs it
 *   kept (created before `listed_at`), which verify compares with the
 *   directory to find logs deleted since without a tombstone.
 *
 * One prune at a time per directory: `pruned.lock` (O_EXCL) names its holder;
 * a lock whose holder is gone (records/live.ts) is taken over.
 */
import { closeSync, constants, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { LogRecord } from '../records/chain.js';
import { liveness, ownStartIdentity } from '../records/live.js';
import { describe } from '../records/location.js';
import { parseRecord } from '../records/read.js';
import { SideChain, readSideChain, verifySideChain, type SideChainKind, type SideChainVerdict } from '../records/side-chain.js';

export const TOMBSTONE_FILE = 'pruned.log';
export const TOMBSTONE_LOG_ID = 'pruned';
const LOCK_FILE = 'pruned.lock';

/** The chain's identity and wording (side-chain.ts builds and verifies it). */
export const TOMBSTONES: SideChainKind = { logId: TOMBSTONE_LOG_ID, noun: 'tombstones', writer: 'a prune' };

/**
 * Open (or start) `dir`'s tombstone chain for appending with `key` (the
 * audit key, or none). Throws with the reason when the chain was written with
 * another key (or none), or ends in a torn line.
 */
export function openTombstones(dir: string, key: Buffer | undefined): SideChain {
  return SideChain.open(join(dir, TOMBSTONE_FILE), TOMBSTONES, key);
}

/** Verify a tombstone chain's bytes (see side-chain.ts verifySideChain). */
export function verifyTombstoneBytes(bytes: Buffer, key: Buffer | undefined): SideChainVerdict {
  return verifySideChain(bytes, TOMBSTONES, key);
}

/** What the tombstone chain of a directory says, once verified (see verify.ts). */
export interface TombstoneIndex {
  /** Removed logs by file name, and the record that says so (the latest; an undone one is dropped). */
  pruned: Map<string, LogRecord>;
  /** The last prune_run record, and the file names tombstoned after it. */
  lastRun: LogRecord | null;
  prunedAfterRun: LogRecord[];
}

/** Index the records of a tombstone chain (its bytes; the chain is verified separately). */
export function indexTombstones(bytes: Buffer): TombstoneIndex {
  const pruned = new Map<string, LogRecord>();
  let lastRun: LogRecord | null = null;
  let after: LogRecord[] = [];
  for (const line of bytes.toString('utf8').split('\n')) {
    const r = line === '' ? null : parseRecord(Buffer.from(line));
    if (r === null || typeof r.type !== 'string') continue;
    if (r.type === 'pruned' && typeof r.file === 'string') {
      pruned.set(r.file, r);
      after.push(r);
    } else if (r.type === 'prune_undone' && typeof r.file === 'string') {
      pruned.delete(r.file);
      after = after.filter((a) => a.file !== r.file);
    } else if (r.type === 'prune_run') {
      lastRun = r;
      after = [];
    }
  }
  return { pruned, lastRun, prunedAfterRun: after };
}

/** Read a directory's tombstone chain; null when there is none. */
export function readTombstoneFile(dir: string): Buffer | null {
  return readSideChain(join(dir, TOMBSTONE_FILE));
}

/**
 * Take the directory's prune lock. Returns a release function, or the reason
 * it is held (another prune running). A lock left by a prune that is gone
 * (killed, crashed) is taken over.
 */
export function takePruneLock(dir: string): (() => void) | string {
  const path = join(dir, LOCK_FILE);
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return `cannot create ${path}: ${describe(error)}`;
      let holder: LogRecord | null = null;
      try {
        holder = parseRecord(readFileSync(path));
      } catch {
        /* gone meanwhile: try again */
      }
      // An empty lock may be one being written this moment: young, it counts as held.
      if (holder === null ? youngerThan(path, 10_000) : liveness(holder) !== 'crashed') {
        return `another prune holds ${path} (mcpguard pid ${String(holder?.mcpguard_pid ?? '?')})`;
      }
      try {
        unlinkSync(path);
      } catch {
        /* someone else took it over: the next open says so */
      }
      continue;
    }
    writeSync(fd, JSON.stringify({ mcpguard_pid: process.pid, mcpguard_start: ownStartIdentity() }));
    closeSync(fd);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      try {
        unlinkSync(path);
      } catch {
        /* already gone */
      }
    };
  }
  return `cannot take ${path}: it keeps coming back`;
}

function youngerThan(path: string, ms: number): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs < ms;
  } catch {
    return false;
  }
}
