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
 * - `live`: intact and unsealed, and the mcpguard writing it is alive (its pid
 *   with the recorded process start time, records/live.ts): a running
 *   session, counted as intact.
 * Without a key, whoever can write the file can rewrite the whole chain; only
 * an HMAC chain checked with its key proves the records were not rewritten.
 * A whole session file that is gone is `pruned` when the directory's
 * tombstone chain (tombstones.ts) says so, and `missing` when the last prune
 * kept it and no tombstone says it went; one created after the last prune and
 * deleted by hand cannot be detected from the files left.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { canonical } from '../records/canonical.js';
import { RECORD_VERSION, ZERO_HASH, keyId, lineHash, recordHash, type ChainAlg, type LogRecord } from '../records/chain.js';
import { describe } from '../records/location.js';
import { liveness } from '../records/live.js';
import { keptSet } from './prune.js';
import { LineReader, listLogFiles, parseRecord, readLogEdges } from '../records/read.js';
import { DECISIONS, DECISIONS_FILE, lastPinFiles, pinFileProblem, readDecisions, verifyDecisions } from '../pins/decisions.js';
import { TOMBSTONE_FILE, TOMBSTONE_LOG_ID, indexTombstones, readTombstoneFile, verifyTombstoneBytes } from './tombstones.js';

/** How a file fared; see the module comment for what each status means. */
export type VerifyStatus = 'ok' | 'live' | 'pruned' | 'unsealed' | 'torn' | 'tampered' | 'key' | 'version' | 'unreadable' | 'missing';

/** Statuses that are no fault: an intact sealed log, a running session's intact log, a pruned log with its tombstone. */
export function isIntact(status: VerifyStatus): boolean {
  return status === 'ok' || status === 'live' || status === 'pruned';
}

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
  constructor(
    readonly status: VerifyStatus,
    readonly line: number,
    reason: string,
  ) {
    super(reason);
  }
}

/**
 * Verify a log given line by line (each line is used before the next is
 * asked for, so a reader may reuse its buffer), then the bytes after the last
 * newline. Also hands back the first two records, for the liveness check.
 */
function verifyLines(
  lines: Iterable<Buffer>,
  rest: () => Buffer | null,
  key: Buffer | undefined,
  logId: string | undefined,
): { verdict: Verdict; first: Array<LogRecord | null> } {
  const state = { prev: ZERO_HASH, alg: null as ChainAlg | null, logId: null as string | null, sealed: false };
  const verdict = (status: VerifyStatus, records: number, line: number | null, reason: string | null): Verdict => ({
    status,
    records,
    line,
    reason,
    log_id: state.logId,
    alg: state.alg,
  });
  const first: Array<LogRecord | null> = [];
  let count = 0;
  try {
    for (const line of lines) {
      if (state.sealed) throw new Bad('tampered', count + 1, 'data after the seal record');
      if (count < 2) first.push(parseRecord(line));
      checkRecord(line, count, state, key, logId);
      count++;
    }
    const tail = rest();
    if (tail !== null) {
      const at = count + 1;
      if (state.sealed) throw new Bad('tampered', at, 'data after the seal record');
      if (tail[0] !== 0x7b) throw new Bad('tampered', at, 'garbage after the last record (not the start of a record)');
      // A complete record that lost only its newline must still verify to count as torn.
      if (parseRecord(tail) !== null) checkRecord(tail, count, state, key, logId);
      return { verdict: verdict('torn', count, at, 'last line is incomplete: the writer was killed (or ran out of space) in the middle of a record'), first };
    }
  } catch (error) {
    if (!(error instanceof Bad)) throw error;
    return { verdict: verdict(error.status, error.line - 1, error.line, error.message), first };
  }
  if (count === 0) return { verdict: verdict('unsealed', 0, null, 'empty file: no header (crash before the first record, or truncated)'), first };
  if (!state.sealed)
    return { verdict: verdict('unsealed', count, null, 'ended without seal: crash or truncation (no record follows the last one to vouch for it)'), first };
  return { verdict: verdict('ok', count, null, null), first };
}

function checkRecord(
  line: Buffer,
  seq: number,
  state: { prev: string; alg: ChainAlg | null; logId: string | null; sealed: boolean },
  key: Buffer | undefined,
  logId: string | undefined,
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
    throw new Bad(
      'tampered',
      at,
      seq === 0 ? "the header's prev is not the zero hash" : `prev is not the hash of line ${seq}: that line was altered or replaced`,
    );
  }
  const { hash, ...unhashed } = record;
  if (record.type === 'seal') {
    if (hash !== recordHash(unhashed, key)) throw new Bad('tampered', at, "the seal's hash does not match the seal: it was altered");
    if (record.records !== seq + 1) throw new Bad('tampered', at, `seal counts ${String(record.records)} records, the file holds ${seq + 1}`);
    state.sealed = true;
  } else if (hash !== undefined) {
    throw new Bad('tampered', at, 'a record other than the seal carries a hash');
  }
  state.prev = lineHash(Buffer.concat([line, NEWLINE]), key);
}

const NEWLINE = Buffer.from('\n');

function checkHeader(record: LogRecord, state: { alg: ChainAlg | null; logId: string | null }, key: Buffer | undefined, logId: string | undefined): void {
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

/**
 * Verify one session log file; its name must be `<log_id>.jsonl`. The file is
 * streamed (one chunk in memory, whatever its size).
 */
export function verifyFile(path: string, key?: Buffer): VerifyResult {
  const unreadable = (error: unknown): VerifyResult => ({
    file: path,
    status: 'unreadable',
    records: 0,
    line: null,
    reason: describe(error),
    log_id: null,
    alg: null,
  });
  let reader: LineReader;
  try {
    reader = new LineReader(path);
  } catch (error) {
    return unreadable(error);
  }
  let checked: ReturnType<typeof verifyLines>;
  try {
    const lines = (function* () {
      for (let line = reader.next(); line !== null; line = reader.next()) yield line;
    })();
    checked = verifyLines(lines, () => reader.rest, key, basename(path).replace(/\.jsonl$/, ''));
  } catch (error) {
    return unreadable(error); // a read that failed half-way (EIO)
  } finally {
    reader.close();
  }
  const { verdict, first } = checked;
  // An intact log without a seal is a running session's while the mcpguard that writes it lives (pid and start time).
  if (verdict.status === 'unsealed' || verdict.status === 'torn') {
    const header = first[0] ?? undefined;
    const start = first[1]?.type === 'session_start' ? first[1] : undefined;
    if (liveness(start, header) === 'running') {
      return {
        file: path,
        ...verdict,
        status: 'live',
        line: null,
        reason: `session running: its mcpguard (pid ${String(start?.mcpguard_pid)}) is alive; the log is sealed when the session ends`,
      };
    }
  }
  return { file: path, ...verdict };
}

/**
 * Verify every `*.jsonl` file in `dir`, in name order, then the tombstone
 * chain (`pruned.log`, when there is one): a row for the chain itself, a
 * `pruned` row for each log it says was pruned and is gone, and a `missing`
 * row when logs the last prune kept are gone without a tombstone; last, the
 * chain of decisions about pinned tools (`pins/decisions.log`), when there is
 * one. Throws if `dir` cannot be listed.
 */
export function verifyDir(dir: string, key?: Buffer): VerifyResult[] {
  const files = listLogFiles(dir);
  const results = files.map((file) => verifyFile(file, key));
  return [...results, ...verifyTombstones(dir, files, results, key), ...verifyPinDecisions(dir, key)];
}

/**
 * The chain of decisions about pinned tools (`pins/decisions.log`), when
 * there is one: one row; then a `tampered` row for each pin file that is not
 * the one its last `pin_file` record names (edited, written outside
 * mcpguard, deleted without a recorded forget), as a session would refuse it.
 */
function verifyPinDecisions(dir: string, key: Buffer | undefined): VerifyResult[] {
  const pinsDir = join(dir, 'pins');
  const file = join(pinsDir, DECISIONS_FILE);
  let bytes: Buffer | null;
  try {
    bytes = readDecisions(pinsDir);
  } catch (error) {
    return [{ file, status: 'unreadable', records: 0, line: null, reason: describe(error), log_id: null, alg: null }];
  }
  const chain: VerifyResult[] = bytes === null ? [] : [{ file, ...verifyDecisions(bytes, key), log_id: DECISIONS.logId }];
  // A chain that does not verify is its own row; the files are checked against what it says only when it does.
  if (chain[0] !== undefined && chain[0].status !== 'ok') return chain;
  let names: string[];
  try {
    names = readdirSync(pinsDir).filter((n) => /^[0-9a-f]{32}\.json$/.test(n));
  } catch {
    names = [];
  }
  const ids = new Set([
    ...names.map((n) => n.slice(0, -5)),
    ...(bytes === null ? [] : [...lastPinFiles(bytes)].filter(([, sha]) => sha !== null).map(([id]) => id)),
  ]);
  const files: VerifyResult[] = [];
  for (const id of [...ids].sort()) {
    let problem: string | null;
    try {
      problem = pinFileProblem(bytes, key, id, names.includes(`${id}.json`) ? readFileSync(join(pinsDir, `${id}.json`)) : null);
    } catch (error) {
      problem = describe(error);
    }
    if (problem !== null)
      files.push({ file: join(pinsDir, `${id}.json`), status: 'tampered', records: 0, line: null, reason: problem, log_id: 'pin_file', alg: null });
  }
  return [...chain, ...files];
}

/**
 * What can be told about logs that are gone. A tombstone in an intact chain
 * vouches for a pruned log (with the key, only a holder of the key can write
 * one). A log deleted by hand is found when the last prune run kept it: the
 * run recorded a digest of the logs it kept. A log created after the last
 * prune and deleted by hand, or deleted together with a cut-off tail of the
 * chain (without the key, the whole chain can be rewritten), cannot be told
 * from one that never existed.
 */
function verifyTombstones(dir: string, files: string[], results: VerifyResult[], key: Buffer | undefined): VerifyResult[] {
  let bytes: Buffer | null;
  const path = join(dir, TOMBSTONE_FILE);
  try {
    bytes = readTombstoneFile(dir);
  } catch (error) {
    return [{ file: path, status: 'unreadable', records: 0, line: null, reason: describe(error), log_id: null, alg: null }];
  }
  if (bytes === null) return [];
  const chain: VerifyResult = { file: path, ...verifyTombstoneBytes(bytes, key), log_id: TOMBSTONE_LOG_ID };
  if (chain.status !== 'ok' && chain.status !== 'torn') return [chain];
  const index = indexTombstones(bytes);
  const present = new Set(files.map((f) => basename(f)));
  const rows: VerifyResult[] = [chain];
  for (const [name, t] of index.pruned) {
    const when = `pruned ${String(t.ts)} by ${t.by === 'retain' ? "a session's --retain" : 'mcpguard prune'} (${t.reason === 'max-size' ? `over --max-size ${String((t.rule as LogRecord | null)?.max_size)}` : `ended more than ${String((t.rule as LogRecord | null)?.older_than)} before it`})`;
    if (present.has(name)) {
      const row = results.find((r) => basename(r.file) === name);
      if (row !== undefined && row.reason === null) row.reason = `${when}, but the file is here: an interrupted prune, or restored`;
      continue;
    }
    rows.push({
      file: join(dir, name),
      status: 'pruned',
      records: typeof t.records === 'number' ? t.records : 0,
      line: null,
      reason: `${when}; ${String(t.state)}, ${String(t.bytes)} bytes${typeof t.seal_hash === 'string' ? `, seal ${t.seal_hash.slice(0, 16)}` : ''}`,
      log_id: typeof t.session_id === 'string' ? t.session_id : null,
      alg: chain.alg,
    });
  }
  const run = index.lastRun;
  if (run !== null && typeof run.listed_at === 'string' && typeof run.kept === 'number') {
    const logs: Array<{ name: string; createdAt: string }> = [];
    for (const file of files) {
      try {
        const header = parseRecord(readLogEdges(file, 1, 0).head[0] ?? Buffer.alloc(0));
        logs.push({ name: basename(file), createdAt: typeof header?.created_at === 'string' ? header.created_at : '' });
      } catch {
        /* unreadable: prune skipped it too */
      }
    }
    for (const t of index.prunedAfterRun)
      if (!present.has(String(t.file))) logs.push({ name: String(t.file), createdAt: typeof t.created_at === 'string' ? t.created_at : '' });
    const now = keptSet(logs, run.listed_at);
    if (now.sha256 !== run.kept_sha256) {
      const gone = run.kept - now.count;
      rows.push({
        file: dir,
        status: 'missing',
        records: 0,
        line: null,
        log_id: null,
        alg: chain.alg,
        reason:
          gone > 0
            ? `${gone} log${gone === 1 ? '' : 's'} that the prune of ${String(run.ts)} kept ${gone === 1 ? 'is' : 'are'} gone without a tombstone: deleted by hand?`
            : `the logs created before the prune of ${String(run.ts)} are not the ${run.kept} it kept: logs were deleted and others added by hand`,
      });
    }
  }
  return rows;
}
