/**
 * SessionLog: one session's append-only, hash-chained record file.
 *
 * One file per session (`<session_id>.jsonl`), so any number of mcpguard
 * processes can share a record directory without interleaving or sharing a
 * chain. Each record is one canonical JSON line, never split across writes, on
 * an O_APPEND descriptor: a reader sees whole records, and only a crash in the
 * middle of a write can leave a torn last line, which verify reports as torn.
 *
 * `append` writes at once. `defer` queues a record whose bytes need not be on
 * disk before anything else happens (a dispatch, a call's end, a rejection);
 * `stage` chains the queue without writing it (the audit log stages when its
 * event-loop turn is over), and the next write takes the staged lines along:
 * the next attempt's, or `flush` (the audit log's bound on the wait). So
 * those records cost no hashing on the request path, and no write(2) of
 * their own while calls keep coming.
 * A record written at once with `appendShaped` (a call's write-ahead attempt)
 * is chained ahead of records still queued, after records staged: the file's
 * order is the order records were chained, and every record's `ts` says when
 * its event happened.
 * Its line is written before it is hashed: the hash that the next record's
 * `prev` needs is computed when that record is chained (after the attempt's
 * request has been forwarded), and `flush` leaves it computed, so the next
 * attempt finds it ready.
 * With `fsync`, nothing is queued.
 *
 * A failed write throws and poisons the log: after a short or failed write the
 * file's tail is unknown, so chaining further records onto it would be a lie.
 */
import { closeSync, constants, fchmodSync, fsyncSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { resolve } from 'node:path';
import { EXIT_RECORD_FAILURE, GuardError } from '../base/errors.js';
import { canonical } from './canonical.js';
import { CHAIN_FIELDS, RECORD_VERSION, ZERO_HASH, chainAlg, isoAt, keyId, lineDigest, prevHex, sealLine, type LogRecord, type RecordShape } from './chain.js';
import { isSessionId, newSessionId } from './ids.js';
import { LineBuffer } from './line-buffer.js';
import { describe, ensureRecordDir } from './location.js';

export { fingerprint, newCallId, newSessionId } from './ids.js';

/** Where and how a session log is written. `key` turns the chain into HMAC-SHA256. */
export interface RecordStoreOptions {
  dir: string;
  fsync: boolean;
  key?: Buffer;
}

/** How far back from the newest queued record `withdrawQueued` looks (a call's dispatch record is queued a few records before its end). */
const WITHDRAW_REACH = 16;
const OPEN_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** An append-only, hash-chained log of one session. Not shared between processes. */
export class SessionLog {
  readonly sessionId: string;
  readonly path: string;
  private fd: number | null;
  private seq = 0;
  /**
   * `prev` for the next record, once the tail line is hashed: hex, or the
   * digest's bytes as latin1 (`lineDigest`; shaped lines write its hex
   * digits themselves, other records ask `prevHex`).
   */
  private prev = ZERO_HASH;
  /**
   * Chained lines, from `written` on not yet written, in order, built in one
   * reused buffer. Bytes before `written` are kept only for the last line
   * while it is not hashed yet (`tailStart` ≥ 0: its hash, the next `prev`).
   */
  private readonly lines = new LineBuffer();
  private written = 0;
  private tailStart = -1;
  private failure: string | null = null;
  /**
   * Deferred records not yet chained, in the order they were deferred: the
   * first `queuedCount` slots of three parallel arrays (a shape, its values
   * and time; or null, an event's fields and 0). Slots, not an object per
   * record: a call defers two records, and the arrays are kept from turn to turn.
   */
  private readonly queuedShape: (RecordShape | null)[] = [];
  private readonly queuedValues: (readonly unknown[] | LogRecord | null)[] = [];
  private readonly queuedTs: number[] = [];
  private queuedCount = 0;

  private constructor(
    sessionId: string,
    path: string,
    fd: number,
    private readonly opts: RecordStoreOptions,
  ) {
    this.sessionId = sessionId;
    this.path = path;
    this.fd = fd;
  }

  /**
   * Create `<sessionId>.jsonl` (mode 0600) where `ensureRecordDir(dir)` says
   * records go, and write its header. The file must not exist yet, not even as
   * a symlink (O_EXCL, O_NOFOLLOW). Throws GuardError (`ERR_RECORD_DIR`,
   * `ERR_RECORD_OPEN`, `ERR_RECORD_WRITE`).
   */
  static create(opts: RecordStoreOptions, sessionId: string = newSessionId()): SessionLog {
    if (!isSessionId(sessionId)) throw new GuardError('ERR_RECORD_OPEN', `invalid session id '${sessionId}'`);
    const dir = ensureRecordDir(opts.dir);
    const path = resolve(dir, `${sessionId}.jsonl`);
    let fd: number;
    try {
      fd = openSync(path, OPEN_FLAGS, 0o600);
    } catch (error) {
      throw new GuardError('ERR_RECORD_OPEN', `cannot create session log '${path}': ${describe(error)}`, EXIT_RECORD_FAILURE);
    }
    const log = new SessionLog(sessionId, path, fd, opts);
    try {
      fchmodSync(fd, 0o600); // the umask may have taken bits from the open mode
      if (opts.fsync) syncDirectory(dir); // so the new file's name survives a crash too
      log.write({
        type: 'header',
        log_id: sessionId,
        alg: chainAlg(opts.key),
        key_id: opts.key === undefined ? null : keyId(opts.key),
        created_at: new Date().toISOString(),
        version: RECORD_VERSION,
        writer_pid: process.pid,
      });
    } catch (error) {
      // A log without its header proves nothing; do not leave it behind.
      log.close();
      try {
        unlinkSync(path);
      } catch {
        /* already gone or unwritable: the error below says enough */
      }
      throw error instanceof GuardError
        ? error
        : new GuardError('ERR_RECORD_WRITE', `cannot write session log '${path}': ${describe(error)}`, EXIT_RECORD_FAILURE);
    }
    return log;
  }

  /** True once seal() has run. */
  get sealed(): boolean {
    return this.fd === null && this.failure === null;
  }

  /**
   * Append one event: `body` plus `type`, `seq`, `prev` and `ts`, as one
   * line in one write (and an fsync when asked). `body` may not set those
   * fields. Throws GuardError `ERR_RECORD_WRITE` on any write failure and
   * `ERR_RECORD_CLOSED` after seal() or an earlier failure.
   */
  append(type: string, body: Record<string, unknown>): void {
    this.write(event(type, body));
  }

  /**
   * Like `append`, but the record waits in a queue for the next `flush` (or
   * the next `append`, which chains the queue first, so its order holds).
   */
  defer(type: string, body: Record<string, unknown>): void {
    const fields = event(type, body);
    if (this.opts.fsync) return this.write(fields);
    this.ensureOpen();
    this.enqueue(null, fields, 0);
  }

  /**
   * `append` (or, with `deferred`, `defer`) for a record of a fixed shape:
   * `values` in the order of `shape.fields`. The line is the one `append`
   * would write for the same members, built without copying or sorting.
   * Written at once, it goes ahead of deferred records still queued.
   * `values` belongs to the log from here on: an array from `shape.values()`
   * goes back to the shape once the record is chained.
   */
  appendShaped(shape: RecordShape, values: readonly unknown[], deferred = false): void {
    this.ensureOpen();
    const ts = Date.now();
    if (deferred && !this.opts.fsync) {
      this.enqueue(shape, values, ts);
      return;
    }
    this.chainShaped(shape, values, ts);
    this.writePending();
  }

  /**
   * Chain every deferred record now, and hash the last, but write nothing:
   * their lines wait in the buffer for the next write, which is then one
   * write(2) for them and whatever comes next (a call's attempt, or `flush`).
   * True when lines are waiting to be written. The next attempt then neither
   * builds nor hashes them on the request path.
   */
  stage(): boolean {
    if (this.fd === null) return false;
    this.chainQueued();
    this.link();
    return this.written < this.lines.length;
  }

  /** Chain and write every deferred record now (one write). */
  flush(): void {
    if (this.fd === null) return;
    this.chainQueued();
    this.writePending();
    this.link();
  }

  /** Write the seal record (`records` = how many records the file holds, seal included) and close the file. */
  seal(): void {
    this.ensureOpen();
    this.chainQueued(); // so `records` counts them
    const seal = { type: 'seal', records: this.seq + 1, ts: new Date().toISOString(), seq: this.seq, prev: prevHex(this.link()) };
    this.chainText(sealLine(seal, this.opts.key));
    this.writePending();
    this.close();
  }

  /** Chain the queue, then `fields`, and write them all in one write. */
  private write(fields: LogRecord): void {
    this.ensureOpen();
    this.chainQueued();
    this.chainFields(fields);
    this.writePending();
  }

  private chainFields(fields: LogRecord): void {
    this.chainText(`${canonical({ ...fields, seq: this.seq, prev: prevHex(this.link()) })}\n`);
  }

  /**
   * Take back a shaped record still waiting in the queue: the newest one of
   * `shape` whose first value is `id`, among the last few queued. True if it
   * was found (it will not be written).
   */
  withdrawQueued(shape: RecordShape, id: unknown): boolean {
    const last = Math.max(0, this.queuedCount - WITHDRAW_REACH);
    for (let i = this.queuedCount - 1; i >= last; i--) {
      const values = this.queuedValues[i];
      if (this.queuedShape[i] !== shape || values === null || (values as readonly unknown[])[0] !== id) continue;
      this.queuedShape[i] = null;
      this.queuedValues[i] = null;
      shape.recycle(values as readonly unknown[]);
      return true;
    }
    return false;
  }

  private chainQueued(): void {
    const count = this.queuedCount;
    if (count === 0) return;
    // The arrays are kept (not replaced, not cut to length 0): fresh ones would be allocated and grown every turn.
    this.queuedCount = 0;
    for (let i = 0; i < count; i++) {
      const shape = this.queuedShape[i]!;
      const values = this.queuedValues[i] ?? null;
      this.queuedShape[i] = null;
      this.queuedValues[i] = null;
      if (values === null) continue; // withdrawn
      if (shape === null) this.chainFields(values as LogRecord);
      else this.chainShaped(shape, values as readonly unknown[], this.queuedTs[i]!);
    }
  }

  private enqueue(shape: RecordShape | null, values: readonly unknown[] | LogRecord, ts: number): void {
    const at = this.queuedCount++;
    if (at < this.queuedShape.length) {
      this.queuedShape[at] = shape;
      this.queuedValues[at] = values;
      this.queuedTs[at] = ts;
    } else {
      this.queuedShape.push(shape);
      this.queuedValues.push(values);
      this.queuedTs.push(ts);
    }
  }

  private ensureOpen(): void {
    if (this.fd === null) {
      throw new GuardError(
        'ERR_RECORD_CLOSED',
        `session log '${this.path}' is ${this.failure === null ? 'sealed' : `unusable after an earlier failure (${this.failure})`}`,
        EXIT_RECORD_FAILURE,
      );
    }
  }

  /** Chain a shaped record: its line goes into the buffer for the next write and is the new tail of the chain. */
  private chainShaped(shape: RecordShape, values: readonly unknown[], ts: number): void {
    const prev = this.link();
    const start = this.lines.length;
    shape.write(this.lines, values, this.seq, prev, ts);
    this.chained(start);
    shape.recycle(values);
  }

  /** Chain a line given as text (newline included). */
  private chainText(line: string): void {
    const start = this.lines.length;
    this.lines.utf8(line);
    this.chained(start);
  }

  /** The line from `start` to the buffer's end is chained: the new tail. */
  private chained(start: number): void {
    this.seq += 1;
    this.tailStart = start;
  }

  /** The next record's `prev`: the hash of the last chained line, computed once. */
  private link(): string {
    if (this.tailStart >= 0) {
      // The tail is always the last line in the buffer.
      this.prev = lineDigest(this.lines.view(this.tailStart, this.lines.length), this.opts.key);
      this.tailStart = -1;
      // Written and hashed: its bytes are needed no more.
      if (this.written === this.lines.length) this.forgetWritten();
    }
    return this.prev;
  }

  /** Write every chained line in one write (and fsync when asked). */
  private writePending(): void {
    const lines = this.lines;
    if (this.fd === null || this.written === lines.length) return;
    const offset = this.written;
    const length = lines.length - offset;
    try {
      const written = writeSync(this.fd, lines.bytes, offset, length);
      // Only a full disk or a file size limit makes a regular file take part of a write.
      if (written !== length) throw new Error(`short write: ${written} of ${length} bytes; the log now ends in a torn line`);
      if (this.opts.fsync) fsyncSync(this.fd);
    } catch (error) {
      this.failure = describe(error);
      this.close();
      throw new GuardError('ERR_RECORD_WRITE', `cannot write records up to ${this.seq - 1} to '${this.path}': ${this.failure}`, EXIT_RECORD_FAILURE);
    }
    this.written = lines.length;
    this.forgetWritten();
  }

  /** Drop the written lines from the buffer, but the tail while it is not hashed. */
  private forgetWritten(): void {
    if (this.tailStart < 0) {
      this.lines.keepFrom(this.lines.length);
      this.written = 0;
      return;
    }
    this.lines.keepFrom(this.tailStart);
    this.written -= this.tailStart;
    this.tailStart = 0;
  }

  private close(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    try {
      closeSync(fd);
    } catch {
      /* EBADF: the descriptor is gone either way */
    }
  }
}

/** An event's fields: its body, `type` and `ts`; the body may not set what the log owns. */
function event(type: string, body: Record<string, unknown>): LogRecord {
  if (type === 'header' || type === 'seal') throw new TypeError(`record type '${type}' is written by SessionLog itself`);
  for (const field of CHAIN_FIELDS) {
    if (Object.hasOwn(body, field)) throw new TypeError(`record body may not set '${field}' (type '${type}')`);
  }
  return { ...body, type, ts: isoAt(Date.now()) };
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
