/**
 * The session's audit log, as an observer: every call's attempt is appended
 * before its frame is forwarded (write-ahead; with --fsync it is on disk
 * first), then its one final record, and a dispatch record in between for a
 * call that runs longer than DISPATCH_WAIT_MS (with --fsync, for every
 * dispatched call); rejected frames are
 * recorded apart from calls, by reason and fingerprint, never by content; the
 * session record and the seal come last. One event = one line, never split
 * across writes; lines that need not be write-ahead share the next write (a
 * quick call's final record goes out with the next call's attempt, or within
 * DISPATCH_WAIT_MS).
 *
 * A record that cannot be written vetoes the dispatch of the call it
 * describes: a call that happened must never be missing from the log.
 *
 * Records outlive the session and get copied around: every string in them
 * that came from either side (the command line, ids, method and tool names,
 * reasons and details, a call's stderr text, the stderr tail) is masked like the child's stderr
 * (mask.ts). A `--api-key sk-…` argument is kept as `--api-key sk-[REDACTED]`.
 */
import type { Call } from '../mcp/call.js';
import { processMasker, type Masker } from '../mask/mask.js';
import type { Rejection, SessionObserver } from '../relay/observer.js';
import { RawId, type RequestId } from '../wire/request-id.js';
import { RecordShape, isoAt } from '../records/chain.js';
import { ownStartIdentity } from '../records/live.js';
import { SessionLog, fingerprint, type RecordStoreOptions } from '../records/store.js';
import type { ServerInfo } from '../mcp/server-info.js';
import { basename } from 'node:path';

/**
 * Longest wait of a record that is not write-ahead for a write to carry it.
 * A dispatch record waits this long for its call's final record (a quick
 * call's final record makes it unneeded: it carries the same facts; a slow
 * call's dispatch is written on its own by then); a final record or a
 * rejection, chained at the end of its turn, waits this long for the next
 * call's attempt to take it along in the same write(2).
 */
export const DISPATCH_WAIT_MS = 20;

// The records every call writes, in the order of the values passed for them (the times as ms, written as ISO 8601).
const ATTEMPT = new RecordShape('call_attempt', ['call_id', 'request_id', 'method', 'tool', 'started_at', 'decision'], ['started_at']);
const DISPATCHED = new RecordShape('call_dispatched', ['call_id', 'dispatched_at', 'generation'], ['dispatched_at']);
const END = new RecordShape(
  'call_end',
  [
    'call_id',
    'session_id',
    'request_id',
    'method',
    'tool',
    'state',
    'detail',
    'cancel_requested',
    'stderr_bytes_seen',
    'stderr_bytes_retained',
    'stderr_truncated',
    'stderr_shared_window',
    'stderr',
    'exit_status',
    'stream_end',
    'started_at',
    'dispatched_at',
    'ended_at',
    'protocol_version',
    'traceparent',
    'chain',
    'continues',
    'linked_by',
    'request_state_sha256',
    'flags',
    'decision',
    // The server generation the call was dispatched to (--restart; 1 without it; null: it never reached a server).
    'generation',
    // Where the call's stderr ends in the session's stream (null: none); its bytes are [stderr_stream_end - stderr_bytes_seen, stderr_stream_end).
    'stderr_stream_end',
  ],
  ['started_at', 'dispatched_at', 'ended_at'],
);

/** A quick call's two record shapes, for what measures them (bench/record-lines.js builds its own from their type, fields and times). */
export const CALL_SHAPES: { readonly attempt: RecordShape; readonly end: RecordShape } = { attempt: ATTEMPT, end: END };

export class AuditLog implements SessionObserver {
  readonly log: SessionLog;
  /** Set once a write failed; no later record is attempted. */
  failure: Error | null = null;
  /**
   * Records that came after the seal and were not written. A probe session is
   * sealed before its child is shut down (see probe.ts); what happens after
   * that (a line the child writes on its way out) has no place in a sealed log.
   */
  droppedAfterSeal = 0;

  constructor(
    options: RecordStoreOptions,
    sessionId: string,
    private readonly onFailure: (error: Error) => void,
    private readonly masker: Masker = processMasker(),
  ) {
    this.log = SessionLog.create(options, sessionId);
  }

  get sessionId(): string {
    return this.log.sessionId;
  }

  sessionStarted(info: { command: string; args: readonly string[]; cwd: string; options: Record<string, unknown> }): void {
    this.givenName = typeof info.options.name === 'string' ? info.options.name : null;
    this.command = info.command;
    this.append(
      'session_start',
      this.masker.value({
        ...(this.givenName === null ? {} : { name: this.givenName }),
        command: info.command,
        args: [...info.args],
        cwd: info.cwd,
        mcpguard_pid: process.pid,
        // Which process that pid is: `running` vs `crashed` is decided by it (records/live.ts), never by a missing seal.
        mcpguard_start: ownStartIdentity(),
        started_at: new Date().toISOString(),
        options: info.options,
      }),
    );
  }

  childSpawned(pid: number): void {
    this.append('child_started', { pid, pgid: pid });
  }

  /** A generation of the server started (--restart). */
  generationStarted(info: { generation: number; pid: number; startedAt: number }): void {
    this.append('generation_start', { generation: info.generation, pid: info.pid, pgid: info.pid, started_at: isoAt(info.startedAt) });
  }

  /** A generation ended (--restart): its exit, its stderr, and what came next. The tail is masked by the caller's tap. */
  generationEnded(info: Record<string, unknown>): void {
    this.append('generation_end', this.masker.value(info) as Record<string, unknown>);
  }

  /** A new generation took over: what the client was told and what was lost (--restart). */
  restarted(info: Record<string, unknown>): void {
    this.append('restart', this.masker.value(info) as Record<string, unknown>);
  }

  // A call's records fill a values array the shape lends and takes back once the record is chained (no array per record).

  callStarted(call: Call): boolean {
    const m = this.masker;
    const v = ATTEMPT.values();
    v[0] = call.callId;
    v[1] = maskId(m, call.requestId);
    v[2] = maskText(m, call.method);
    v[3] = maskText(m, call.tool);
    v[4] = call.startedAt;
    v[5] = maskedDecision(m, call);
    return this.shaped(ATTEMPT, v, 'now');
  }

  /**
   * Queued, not written: a call still running DISPATCH_WAIT_MS later gets it
   * written on its own; a call that ends first never gets it, because its
   * final record carries the same facts (dispatched_at, generation) and the
   * two would have reached the file in the same write anyway.
   */
  callDispatched(call: Call): void {
    const v = DISPATCHED.values();
    v[0] = call.callId;
    v[1] = call.dispatchedAt;
    v[2] = call.generation;
    this.shaped(DISPATCHED, v, 'later');
  }

  callEnded(call: Call): void {
    const stderr = call.stderr;
    const m = this.masker;
    const v = END.values();
    v[0] = call.callId;
    v[1] = this.sessionId;
    v[2] = maskId(m, call.requestId);
    v[3] = maskText(m, call.method);
    v[4] = maskText(m, call.tool);
    v[5] = call.state;
    v[6] = maskText(m, call.detail);
    v[7] = call.cancelRequested;
    v[8] = stderr?.seen ?? 0;
    v[9] = stderr?.retained ?? 0;
    v[10] = stderr?.truncated ?? false;
    v[11] = stderr?.shared ?? false;
    v[12] = maskText(m, stderr?.text ?? null);
    v[13] = call.exitStatus;
    v[14] = call.streamEnd;
    v[15] = call.startedAt;
    v[16] = call.dispatchedAt;
    v[17] = call.endedAt;
    v[18] = maskText(m, call.protocolVersion);
    v[19] = maskText(m, call.traceparent);
    v[20] = call.chain;
    v[21] = call.continues;
    v[22] = call.linkedBy;
    v[23] = call.requestStateHash;
    v[24] = call.flags;
    v[25] = maskedDecision(m, call);
    v[26] = call.generation;
    v[27] = stderr?.end ?? null;
    if (call.dispatchedAt !== null) this.log.withdrawQueued(DISPATCHED, call.callId);
    this.shaped(END, v, 'turn');
  }

  rejected(rejection: Rejection): void {
    this.defer('reject', {
      direction: rejection.direction,
      line: rejection.line,
      code: rejection.code,
      reason: this.masker.text(rejection.reason),
      fingerprint: rejection.frame === null ? { sha256_16: null, bytes: rejection.bytes } : fingerprint(rejection.frame),
      ...(rejection.rule === undefined ? {} : { rule: rejection.rule, action: rejection.action ?? 'refused' }),
    });
  }

  /** The server named itself: a server_info record (the first name only), and the name the session goes by. */
  serverInfo(info: ServerInfo): void {
    if (this.serverName !== null) return;
    this.serverName = this.masker.text(info.name);
    this.defer('server_info', { name: this.serverName, version: maskText(this.masker, info.version), from: info.from });
  }

  /** The session's name: --name, else the server's serverInfo.name, else the command's basename. */
  get sessionName(): { name: string; source: 'option' | 'server' | 'command' } {
    if (this.givenName !== null) return { name: this.masker.text(this.givenName), source: 'option' };
    if (this.serverName !== null) return { name: this.serverName, source: 'server' };
    return { name: this.masker.text(basename(this.command)), source: 'command' };
  }

  private givenName: string | null = null;
  private serverName: string | null = null;
  private command = '';

  /**
   * A record of the gate's own (pins: a tool pinned, changed, accepted;
   * hidden characters written out). Not write-ahead: it describes what
   * passed, like a rejection; its strings come from the server, so masked.
   */
  gateRecord(type: string, body: Record<string, unknown>): void {
    this.defer(type, this.masker.value(body));
  }

  /** The session record, then the seal. Once sealed, nothing more is written. */
  sessionEnded(record: Record<string, unknown>): void {
    const named = this.sessionName;
    const naming = { name: named.name, name_source: named.source, ...(this.serverName === null ? {} : { server_name: this.serverName }) };
    if (!this.append('session_end', { ...naming, ...this.masker.value(record), ended_at: new Date().toISOString() })) return;
    try {
      this.log.seal();
    } catch (error) {
      this.fail(error as Error);
    }
  }

  /**
   * A call's record: written at once (`now`, write-ahead), chained at the end
   * of this event-loop turn (`turn`, like `defer`) or queued (`later`), and
   * then written with the next write but no later than DISPATCH_WAIT_MS from
   * then.
   */
  private shaped(shape: RecordShape, values: unknown[], when: 'now' | 'turn' | 'later'): boolean {
    if (this.closed()) return false;
    try {
      this.log.appendShaped(shape, values, when !== 'now');
    } catch (error) {
      this.fail(error as Error);
      return false;
    }
    if (when === 'turn') this.scheduleFlush();
    else if (when === 'later') this.scheduleLateFlush();
    return true;
  }

  private append(type: string, body: Record<string, unknown>): boolean {
    if (this.closed()) return false;
    try {
      this.log.append(type, body);
      return true;
    } catch (error) {
      this.fail(error as Error);
      return false;
    }
  }

  /**
   * Records that need not precede anything (a call's end, a rejection) wait
   * in the log's queue until the current turn of the event loop is over (by
   * then the answer that ended a call has been written), and are then chained
   * together, with any dispatch records waiting, but not written: the next
   * call's attempt takes them along in its own write, or the late flush writes
   * them DISPATCH_WAIT_MS later at the latest. So the request path pays for
   * one record (the attempt) and one write per call, a call that follows
   * within DISPATCH_WAIT_MS costs no write of its own for the records of the
   * one before, and the queue never grows into a long stall. Only a crash
   * within DISPATCH_WAIT_MS of them can lose them, never an attempt; the
   * session's end writes everything.
   */
  private defer(type: string, body: Record<string, unknown>): void {
    if (this.closed()) return;
    try {
      this.log.defer(type, body);
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flushDeferred).unref();
  }

  private scheduleLateFlush(): void {
    if (this.lateFlushScheduled) return;
    this.lateFlushScheduled = true;
    setTimeout(this.lateFlush, DISPATCH_WAIT_MS).unref();
  }

  private readonly flushDeferred = (): void => {
    this.flushScheduled = false;
    if (this.failure !== null) return;
    try {
      // Chained now (hashing off the request path), written by the next attempt or by the late flush.
      if (this.log.stage()) this.scheduleLateFlush();
    } catch (error) {
      this.fail(error as Error);
    }
  };

  private readonly lateFlush = (): void => {
    this.lateFlushScheduled = false;
    this.flushNow();
  };

  private flushNow(): void {
    if (this.failure !== null) return;
    try {
      this.log.flush();
    } catch (error) {
      this.fail(error as Error);
    }
  }

  private flushScheduled = false;
  private lateFlushScheduled = false;

  /** No more records: a write failed, or the log is sealed (then the record is counted as dropped). */
  private closed(): boolean {
    if (this.failure !== null) return true;
    if (!this.log.sealed) return false;
    this.droppedAfterSeal++;
    return true;
  }

  private fail(error: Error): void {
    this.failure ??= error;
    this.onFailure(error);
  }
}

/** The gate's decision as records keep it (its reason quotes rules and answers: masked). */
function maskedDecision(masker: Masker, call: Call): unknown {
  const d = call.decision;
  return d === null ? null : { ...d, reason: maskText(masker, d.reason) };
}

function maskText(masker: Masker, text: string | null): string | null {
  return text === null ? null : masker.text(text);
}

/** A request id as records keep it: a string masked; a RawId (escaped string, big integer) by its value. */
function maskId(masker: Masker, id: RequestId | null): string | number | null {
  const value = id instanceof RawId ? id.value : id;
  return typeof value === 'string' ? masker.text(value) : value;
}
