/**
 * A directory's own append-only chain, beside its session logs: what
 * `prune` leaves for each log it removes (tombstones.ts, `pruned.log`), and
 * the decisions people make about pinned tool definitions (pins/decisions.ts,
 * `pins/decisions.log`).
 *
 * Built from chain.ts's rules: a header, then records each carrying `seq`
 * and `prev` = H(previous line), hashed with SHA-256, or HMAC-SHA256 with the
 * audit key when one is configured, so that without the key nobody can forge
 * a record. Such a chain is never sealed (it grows with every use), so every
 * record also carries its own `hash` = H(canonical(record without hash)), as a
 * seal does: the last record, which no later one vouches for, cannot be
 * edited either. `verifySideChain` checks it all. The file names do not end
 * in `.jsonl`: they are no session logs, and the views list only those.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import { canonical } from './canonical.js';
import { RECORD_VERSION, ZERO_HASH, chainAlg, keyId, lineHash, recordHash, type ChainAlg, type LogRecord } from './chain.js';
import { parseRecord, readLogEdges, splitLines } from './read.js';

/** What a chain holds and who writes it, for its error messages. */
export interface SideChainKind {
  /** The header's log_id. */
  logId: string;
  /** What its records are, plural: 'tombstones', 'pin decisions'. */
  noun: string;
  /** What writes it, for a torn last line: 'a prune', 'mcpguard pins'. */
  writer: string;
}

/** One side chain, open for appending. */
export class SideChain {
  private constructor(
    private readonly path: string,
    private readonly fd: number,
    private seq: number,
    private prev: string,
    private readonly key: Buffer | undefined,
  ) {}

  /**
   * Open (or start) the chain at `path` for appending with `key` (the audit
   * key, or none). Throws with the reason when it was written with another
   * key (or none), is some other file, or ends in a torn line.
   */
  static open(path: string, kind: SideChainKind, key: Buffer | undefined): SideChain {
    const fd = openSync(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW, 0o600);
    try {
      if (!fstatSync(fd).isFile()) throw new Error(`${path}: not a regular file`);
      if (fstatSync(fd).size === 0) {
        const chain = new SideChain(path, fd, 0, ZERO_HASH, key);
        chain.write([
          {
            type: 'header',
            log_id: kind.logId,
            alg: chainAlg(key),
            key_id: key === undefined ? null : keyId(key),
            created_at: new Date().toISOString(),
            version: RECORD_VERSION,
            writer_pid: process.pid,
          },
        ]);
        return chain;
      }
      const edges = readLogEdges(path, 1, 1);
      if (edges.torn)
        throw new Error(
          `${path} ends in an incomplete line (${kind.writer} was killed mid-write); run mcpguard verify, and move the file aside to start a new chain`,
        );
      const header = parseRecord(edges.head[0] ?? Buffer.alloc(0));
      const lastLine = edges.tail.at(-1);
      const last = lastLine === undefined ? null : parseRecord(lastLine);
      if (header?.type !== 'header' || header.log_id !== kind.logId || last === null || typeof last.seq !== 'number') {
        throw new Error(`${path} is not a chain of ${kind.noun}; move it aside`);
      }
      const problem = keyProblem(header, key, kind);
      if (problem !== null) throw new Error(`${path}: ${problem}`);
      return new SideChain(path, fd, last.seq + 1, lineHash(Buffer.concat([lastLine!, Buffer.from('\n')]), key), key);
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
    try {
      closeSync(this.fd);
    } catch {
      /* gone either way */
    }
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
    if (written !== Buffer.byteLength(text)) throw new Error(`short write to ${this.path}: ${written} of ${Buffer.byteLength(text)} bytes`);
  }
}

/** Why `key` cannot extend a chain with this header; null when it can. */
function keyProblem(header: LogRecord, key: Buffer | undefined, kind: SideChainKind): string | null {
  const alg = header.alg as ChainAlg;
  if (alg === 'hmac-sha256') {
    if (key === undefined) return `the ${kind.noun} are signed with an audit key (key_id ${String(header.key_id)}): give it with --audit-key-file`;
    if (header.key_id !== keyId(key)) return `the ${kind.noun} are signed with key_id ${String(header.key_id)}, the given key is ${keyId(key)}`;
    return null;
  }
  if (alg !== 'sha256') return `unknown hash algorithm ${JSON.stringify(header.alg)}`;
  return key === undefined
    ? null
    : `the ${kind.noun} are a plain SHA-256 chain but an audit key was given: writing with the key would mix the two (move the file aside to start a signed chain)`;
}

/** How a side chain verifies: `ok`, or what is wrong and on which 1-based line. */
export interface SideChainVerdict {
  status: 'ok' | 'torn' | 'tampered' | 'key' | 'version';
  records: number;
  line: number | null;
  reason: string | null;
  alg: ChainAlg | null;
}

/**
 * Verify a side chain's bytes: each line a canonical record, record 0 its
 * header, `seq` its position, `prev` the hash of the line before, `hash` its
 * own hash (HMAC with `key`). A cut last line is `torn` (its writer killed in
 * its write); anything else that does not hold is `tampered` (or `key`).
 */
export function verifySideChain(bytes: Buffer, kind: SideChainKind, key: Buffer | undefined): SideChainVerdict {
  const { lines, tail } = splitLines(bytes);
  let prev = ZERO_HASH;
  let alg: ChainAlg | null = null;
  const bad = (status: SideChainVerdict['status'], i: number, reason: string): SideChainVerdict => ({ status, records: i, line: i + 1, reason, alg });
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const record = parseRecord(line);
    if (record === null) return bad('tampered', i, 'not a JSON object');
    let text: string;
    try {
      text = canonical(record);
    } catch {
      text = '';
    }
    if (!Buffer.from(text).equals(line)) return bad('tampered', i, 'not in canonical form: the line was edited');
    if (i === 0) {
      if (record.type !== 'header' || record.log_id !== kind.logId) return bad('tampered', 0, `record 0 is not the header of a chain of ${kind.noun}`);
      if (record.version !== RECORD_VERSION)
        return bad('version', 0, `a version ${JSON.stringify(record.version)} chain: this mcpguard verifies version ${RECORD_VERSION}`);
      alg = record.alg === 'sha256' || record.alg === 'hmac-sha256' ? record.alg : null;
      const problem = keyProblem(record, key, kind);
      if (alg === null || problem !== null) return bad(alg === null ? 'tampered' : 'key', 0, problem ?? 'unknown hash algorithm');
    } else if (record.type === 'header') {
      return bad('tampered', i, 'a second header');
    }
    if (record.seq !== i) return bad('tampered', i, `expected seq ${i}, found ${String(record.seq)}: a record is missing, repeated or moved`);
    if (record.prev !== prev) return bad('tampered', i, `prev is not the hash of line ${i}: that line was altered or replaced`);
    const { hash, ...unhashed } = record;
    if (hash !== recordHash(unhashed, key)) return bad('tampered', i, "the record's hash does not match the record: it was altered");
    prev = lineHash(Buffer.concat([line, Buffer.from('\n')]), key);
  }
  if (tail !== null) return bad('torn', lines.length, `last line is incomplete: ${kind.writer} was killed in the middle of writing it`);
  if (lines.length === 0) return { status: 'tampered', records: 0, line: null, reason: 'empty: no header', alg };
  return { status: 'ok', records: lines.length, line: null, reason: null, alg };
}

/** A side chain's bytes, null when there is no such file (nothing was ever recorded). */
export function readSideChain(path: string): Buffer | null {
  try {
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
