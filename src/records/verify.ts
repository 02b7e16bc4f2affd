/**
 * Offline verification of session logs.
 *
 * A file verifies when every line is a record in canonical form, record 0 is a
 * header, each record's `seq` is its position, its `prev` is the hash of the
 * previous line (its newline included), the last record is a seal counting
 * all records whose `hash` is H(canonical(seal without hash)), and nothing
 * follows the seal. No other record has a `hash`. Requiring the canonical
 * bytes (not just an equal parsed value) means no byte of a line can change
 * without being noticed: a changed line breaks the next record's `prev`, a
 * changed seal its own `hash`.
 *
 * Outcomes other than `ok`, from "crash" to "attack":
 * - `unsealed`: every record verifies but there is no seal (the session is
 *   still running, mcpguard crashed, or the tail was cut on a line boundary).
 *   Nothing vouches for the last record of such a file: no record follows it;
 * - `torn`: as unsealed, and the last line is incomplete (no `\n`), which is
 *   what a kill in the middle of the one write of a record leaves. Only the
 *   very last line can be torn; anything after a seal is tampering;
 * - `key`: the chain is HMAC and no key (or another key) was given, or a key
 *   was given and the chain is plain SHA-256 (a rewritten or downgraded log);
 * - `version`: the header names another format version (version 1, from
 *   development builds, hashed each record into itself);
 * - `tampered`: anything else; `line` is the first line that does not verify.
 * Without a key, whoever can write the file can rewrite the whole chain; only
 * an HMAC chain checked with its key proves the records were not rewritten.
 * Deleting a whole session file cannot be detected from the files left.
 */
import { basename } from 'node:path';
import { canonical } from './canonical.js';
import { RECORD_VERSION, ZERO_HASH, keyId, lineHash, recordHash, type ChainAlg, type LogRecord } from './chain.js';
import { describe } from './location.js';
import { listLogFiles, parseRecord, readLogFile, splitLines } from './read.js';

/** How a file fared; see the module comment for what each status means. */
export type VerifyStatus = 'ok' | 'unsealed' | 'torn' | 'tampered' | 'key' | 'version' | 'unreadable';

/** The verdict on one file. */
export interface VerifyResult {
  file: string;
  status: VerifyStatus;
  /** Records that verified, header included. */
  records: number;
  /** 1-based line of the first record that does not verify (record seq = line - 1); null if none. */
  line: number | null;
  reason: string | null;
  log_id: string | null;
  alg: ChainAlg | null;
}

type Verdict = Omit<VerifyResult, 'file'>;

class Bad extends Error {
  constructor(readonly status: VerifyStatus, readonly line: number, reason: string) {
    super(reason);
  }
}

/** Verify one log's bytes. `logId`, when given, must match the header's `log_id` (the file name). */
export function verifyBytes(bytes: Buffer, key?: Buffer, logId?: string): Verdict {
  const { lines, tail } = splitLines(bytes);
  const state = { prev: ZERO_HASH, alg: null as ChainAlg | null, logId: null as string | null, sealed: false };
  const verdict = (status: VerifyStatus, records: number, line: number | null, reason: string | null): Verdict =>
    ({ status, records, line, reason, log_id: state.logId, alg: state.alg });
  try {
    lines.forEach((line, i) => {
      if (state.sealed) throw new Bad('tampered', i + 1, 'data after the seal record');
      checkRecord(line, i, state, key, logId);
    });
    if (tail !== null) {
      const at = lines.length + 1;
      if (state.sealed) throw new Bad('tampered', at, 'data after the seal record');
      if (tail[0] !== 0x7b) throw new Bad('tampered', at, 'garbage after the last record (not the start of a record)');
      // A complete record that lost only its newline must still verify to count as torn.
      if (parseRecord(tail) !== null) checkRecord(tail, lines.length, state, key, logId);
      return verdict('torn', lines.length, at, 'last line is incomplete: the writer was killed (or ran out of space) in the middle of a record');
    }
  } catch (error) {
    if (!(error instanceof Bad)) throw error;
    return verdict(error.status, error.line - 1, error.line, error.message);
  }
  if (lines.length === 0) return verdict('unsealed', 0, null, 'empty file: no header (crash before the first record, or truncated)');
  if (!state.sealed) return verdict('unsealed', lines.length, null, 'ended without seal: crash or truncation (no record follows the last one to vouch for it)');
  return verdict('ok', lines.length, null, null);
}

function checkRecord(
  line: Buffer, seq: number,
  state: { prev: string; alg: ChainAlg | null; logId: string | null; sealed: boolean },
  key: Buffer | undefined, logId: string | undefined,
): void {
  const at = seq + 1;
  const record = parseRecord(line);
  if (record === null) throw new Bad('tampered', at, 'not a JSON object');
  if (!isCanonical(record, line)) throw new Bad('tampered', at, 'not in canonical form: the line was edited');
  if (seq === 0) checkHeader(record, state, key, logId);
  else if (record.type === 'header') throw new Bad('tampered', at, 'a second header');
  if (record.seq !== seq) {
    const found = typeof record.seq === 'number' && record.seq < seq ? 'repeated or moved back' : 'missing or moved';
    throw new Bad('tampered', at, `expected seq ${seq}, found ${String(record.seq)}: a record is ${found}`);
  }
  if (record.prev !== state.prev) {
    throw new Bad('tampered', at, seq === 0 ? 'the header\'s prev is not the zero hash' : `prev is not the hash of line ${seq}: that line was altered or replaced`);
  }
  const { hash, ...unhashed } = record;
  if (record.type === 'seal') {
    if (hash !== recordHash(unhashed, key)) throw new Bad('tampered', at, 'the seal\'s hash does not match the seal: it was altered');
    if (record.records !== seq + 1) throw new Bad('tampered', at, `seal counts ${String(record.records)} records, the file holds ${seq + 1}`);
    state.sealed = true;
  } else if (hash !== undefined) {
    throw new Bad('tampered', at, 'a record other than the seal carries a hash');
  }
  state.prev = lineHash(Buffer.concat([line, NEWLINE]), key);
}

const NEWLINE = Buffer.from('\n');

function checkHeader(
  record: LogRecord, state: { alg: ChainAlg | null; logId: string | null },
  key: Buffer | undefined, logId: string | undefined,
): void {
  const { type, alg, key_id: id, log_id: recordLogId, version } = record;
  if (type !== 'header') throw new Bad('tampered', 1, 'record 0 is not a header');
  if (version !== RECORD_VERSION) {
    if (Number.isSafeInteger(version)) throw new Bad('version', 1, `a version ${String(version)} log: this mcpguard verifies version ${RECORD_VERSION} logs`);
    throw new Bad('tampered', 1, `header has no valid version (${JSON.stringify(version)})`);
  }
  if (alg !== 'sha256' && alg !== 'hmac-sha256') throw new Bad('tampered', 1, `unknown hash algorithm ${JSON.stringify(alg)}`);
  if (typeof recordLogId !== 'string') throw new Bad('tampered', 1, 'header has no log_id');
  state.alg = alg;
  state.logId = recordLogId;
  if (logId !== undefined && recordLogId !== logId) throw new Bad('tampered', 1, `header log_id '${recordLogId}' does not match the file name`);
  if (alg === 'sha256') {
    if (id !== null) throw new Bad('tampered', 1, 'plain sha256 header with a key_id');
    if (key !== undefined) throw new Bad('key', 1, 'plain sha256 chain, but a key was given: the HMAC protection is missing (rewritten or downgraded?)');
  } else if (key === undefined) {
    throw new Bad('key', 1, `HMAC chain (key_id ${String(id)}): verify it with --audit-key-file`);
  } else if (id !== keyId(key)) {
    throw new Bad('key', 1, `wrong key: the chain was written with key_id ${String(id)}, the given key is ${keyId(key)}`);
  }
}

function isCanonical(record: LogRecord, line: Buffer): boolean {
  try {
    return Buffer.from(canonical(record)).equals(line);
  } catch {
    return false; // e.g. 1e999 parses as Infinity, which has no canonical form
  }
}

/** Verify one session log file; its name must be `<log_id>.jsonl`. */
export function verifyFile(path: string, key?: Buffer): VerifyResult {
  let bytes: Buffer;
  try {
    bytes = readLogFile(path);
  } catch (error) {
    return { file: path, status: 'unreadable', records: 0, line: null, reason: describe(error), log_id: null, alg: null };
  }
  return { file: path, ...verifyBytes(bytes, key, basename(path).replace(/\.jsonl$/, '')) };
}

/** Verify every `*.jsonl` file in `dir`, in name order. Throws if `dir` cannot be listed. */
export function verifyDir(dir: string, key?: Buffer): VerifyResult[] {
  return listLogFiles(dir).map((file) => verifyFile(file, key));
}
