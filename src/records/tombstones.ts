/**
 * Tombstones: what `prune` leaves for each session log it removes, so that
 * `verify` can tell a pruned session from one deleted by hand.
 *
 * They live in `pruned.log` in the record directory: an append-only chain
 * built from chain.ts's rules (a header, then records each carrying `seq` and
 * `prev` = H(previous line)), hashed with SHA-256, or HMAC-SHA256 with the
 * audit key when one is configured, so that without the key nobody can forge
 * a tombstone for a log they deleted. The chain is never sealed (it grows with
 * every prune), so every record also carries its own `hash` =
 * H(canonical(record without hash)), as a seal does: the last record, which no
 * later one vouches for, cannot be edited either. `verifyTombstoneBytes`
 * checks it all.
 * The name does not end in `.jsonl`: it is no session log, and the views and
 * verify list only those.
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
import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { canonical } from './canonical.js';
import { RECORD_VERSION, ZERO_HASH, chainAlg, keyId, lineHash, recordHash, type ChainAlg, type LogRecord } from './chain.js';
import { liveness, ownStartIdentity } from './live.js';
import { describe } from './location.js';
import { parseRecord, readLogEdges, splitLines } from './read.js';

export const TOMBSTONE_FILE = 'pruned.log';
export const TOMBSTONE_LOG_ID = 'pruned';
const LOCK_FILE = 'pruned.lock';

/** The tombstone chain of one directory, open for appending. */
export class TombstoneChain {
  private constructor(private readonly fd: number, private seq: number, private prev: string, private readonly key: Buffer | undefined) {}

  /**
   * Open (or start) `dir`'s tombstone chain for appending with `key` (the
   * audit key, or none). Throws with the reason when the chain was written
   * with another key (or none), or ends in a torn line.
   */
  static open(dir: string, key: Buffer | undefined): TombstoneChain {
    const path = join(dir, TOMBSTONE_FILE);
    const fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    try {
      if (!fstatSync(fd).isFile()) throw new Error(`${path}: not a regular file`);
      if (fstatSync(fd).size === 0) {
        const chain = new TombstoneChain(fd, 0, ZERO_HASH, key);
        chain.write([{ type: 'header', log_id: TOMBSTONE_LOG_ID, alg: chainAlg(key), key_id: key === undefined ? null : keyId(key), created_at: new Date().toISOString(), version: RECORD_VERSION, writer_pid: process.pid }]);
        return chain;
      }
      const edges = readLogEdges(path, 1, 1);
      if (edges.torn) throw new Error(`${path} ends in an incomplete line (a prune was killed mid-write); run mcpguard verify, and move the file aside to start a new chain`);
      const header = parseRecord(edges.head[0] ?? Buffer.alloc(0));
      const lastLine = edges.tail.at(-1);
      const last = lastLine === undefined ? null : parseRecord(lastLine);
      if (header?.type !== 'header' || header.log_id !== TOMBSTONE_LOG_ID || last === null || typeof last.seq !== 'number') {
        throw new Error(`${path} is not a tombstone chain; move it aside`);
      }
      const problem = keyProblem(header, key);
      if (problem !== null) throw new Error(`${path}: ${problem}`);
      return new TombstoneChain(fd, last.seq + 1, lineHash(Buffer.concat([lastLine!, Buffer.from('\n')]), key), key);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  /** Append records (each: its `type` and body) in one write. */
  append(...records: LogRecord[]): void {
    this.write(records.map((r) => ({ ...r, ts: new Date().toISOString() })));
  }

  close(): void {
    try { closeSync(this.fd); } catch { /* gone either way */ }
  }

  private write(records: LogRecord[]): void {
    let text = '';
    for (const r of records) {
      const unhashed = { ...r, seq: this.seq, prev: this.prev };
      const line = `${canonical({ ...unhashed, hash: recordHash(unhashed, this.key) })}\n`;
      this.seq += 1;
      this.prev = lineHash(line, this.key);
      text += line;
    }
    const written = writeSync(this.fd, text);
    if (written !== Buffer.byteLength(text)) throw new Error(`short write to ${TOMBSTONE_FILE}: ${written} of ${Buffer.byteLength(text)} bytes`);
  }
}

/** Why `key` cannot extend a chain with this header; null when it can. */
function keyProblem(header: LogRecord, key: Buffer | undefined): string | null {
  const alg = header.alg as ChainAlg;
  if (alg === 'hmac-sha256') {
    if (key === undefined) return `the tombstones are signed with an audit key (key_id ${String(header.key_id)}): give it with --audit-key-file`;
    if (header.key_id !== keyId(key)) return `the tombstones are signed with key_id ${String(header.key_id)}, the given key is ${keyId(key)}`;
    return null;
  }
  if (alg !== 'sha256') return `unknown hash algorithm ${JSON.stringify(header.alg)}`;
  return key === undefined ? null : 'the tombstones are a plain SHA-256 chain but an audit key was given: pruning with the key would mix the two (move the file aside to start a signed chain)';
}

/** How a tombstone chain verifies: `ok`, or what is wrong and on which 1-based line. */
export interface TombstoneVerdict {
  status: 'ok' | 'torn' | 'tampered' | 'key' | 'version';
  records: number;
  line: number | null;
  reason: string | null;
  alg: ChainAlg | null;
}

/**
 * Verify a tombstone chain's bytes: each line a canonical record, record 0 its
 * header, `seq` its position, `prev` the hash of the line before, `hash` its
 * own hash (HMAC with `key`). A cut last line is `torn` (a prune killed in
 * its write); anything else that does not hold is `tampered` (or `key`).
 */
export function verifyTombstoneBytes(bytes: Buffer, key: Buffer | undefined): TombstoneVerdict {
  const { lines, tail } = splitLines(bytes);
  let prev = ZERO_HASH;
  let alg: ChainAlg | null = null;
  const bad = (status: TombstoneVerdict['status'], i: number, reason: string): TombstoneVerdict => ({ status, records: i, line: i + 1, reason, alg });
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const record = parseRecord(line);
    if (record === null) return bad('tampered', i, 'not a JSON object');
    let text: string;
    try { text = canonical(record); } catch { text = ''; }
    if (!Buffer.from(text).equals(line)) return bad('tampered', i, 'not in canonical form: the line was edited');
    if (i === 0) {
      if (record.type !== 'header' || record.log_id !== TOMBSTONE_LOG_ID) return bad('tampered', 0, 'record 0 is not the header of a tombstone chain');
      if (record.version !== RECORD_VERSION) return bad('version', 0, `a version ${JSON.stringify(record.version)} chain: this mcpguard verifies version ${RECORD_VERSION}`);
      alg = record.alg === 'sha256' || record.alg === 'hmac-sha256' ? record.alg : null;
      const problem = keyProblem(record, key);
      if (alg === null || problem !== null) return bad(alg === null ? 'tampered' : 'key', 0, problem ?? 'unknown hash algorithm');
    } else if (record.type === 'header') {
      return bad('tampered', i, 'a second header');
    }
    if (record.seq !== i) return bad('tampered', i, `expected seq ${i}, found ${String(record.seq)}: a record is missing, repeated or moved`);
    if (record.prev !== prev) return bad('tampered', i, `prev is not the hash of line ${i}: that line was altered or replaced`);
    const { hash, ...unhashed } = record;
    if (hash !== recordHash(unhashed, key)) return bad('tampered', i, 'the record\'s hash does not match the record: it was altered');
    prev = lineHash(Buffer.concat([line, Buffer.from('\n')]), key);
  }
  if (tail !== null) return bad('torn', lines.length, 'last line is incomplete: a prune was killed in the middle of writing it');
  if (lines.length === 0) return { status: 'tampered', records: 0, line: null, reason: 'empty: no header', alg };
  return { status: 'ok', records: lines.length, line: null, reason: null, alg };
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
    if (r.type === 'pruned' && typeof r.file === 'string') { pruned.set(r.file, r); after.push(r); }
    else if (r.type === 'prune_undone' && typeof r.file === 'string') { pruned.delete(r.file); after = after.filter((a) => a.file !== r.file); }
    else if (r.type === 'prune_run') { lastRun = r; after = []; }
  }
  return { pruned, lastRun, prunedAfterRun: after };
}

/** Read a directory's tombstone chain; null when there is none. */
export function readTombstoneFile(dir: string): Buffer | null {
  try {
    return readFileSync(join(dir, TOMBSTONE_FILE));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
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
      try { holder = parseRecord(readFileSync(path)); } catch { /* gone meanwhile: try again */ }
      // An empty lock may be one being written this moment: young, it counts as held.
      if (holder === null ? youngerThan(path, 10_000) : liveness(holder) !== 'crashed') {
        return `another prune holds ${path} (mcpguard pid ${String(holder?.mcpguard_pid ?? '?')})`;
      }
      try { unlinkSync(path); } catch { /* someone else took it over: the next open says so */ }
      continue;
    }
    writeSync(fd, JSON.stringify({ mcpguard_pid: process.pid, mcpguard_start: ownStartIdentity() }));
    closeSync(fd);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      try { unlinkSync(path); } catch { /* already gone */ }
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
