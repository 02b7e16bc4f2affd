/**
 * The session's audit log, as an observer: every call's attempt is appended
 * before its frame is forwarded (write-ahead; with --fsync it is on disk
 * first), then its dispatch and its one final record; rejected frames are
 * recorded apart from calls, by reason and fingerprint, never by content; the
 * session record and the seal come last. One event = one line, never split
 * across writes; lines that need not be write-ahead share the next write.
 *
 * A record that cannot be written vetoes the dispatch of the call it
 * describes: a call that happened must never be missing from the log.
 */
import type { Call } from './calls.js';
import type { Rejection, SessionObserver } from './observer.js';
import { SessionLog, fingerprint, type RecordStoreOptions } from './records/store.js';

/** Longest time a deferred record waits for a write of its own. */
export const DEFER_MS = 20;

export class AuditLog implements SessionObserver {
  readonly log: SessionLog;
  /** Set once a write failed; no later record is attempted. */
  failure: Error | null = null;

  constructor(options: RecordStoreOptions, private readonly onFailure: (error: Error) => void) {
    this.log = SessionLog.create(options);
  }

  get sessionId(): string {
    return this.log.sessionId;
  }

  sessionStarted(info: { command: string; args: readonly string[]; cwd: string; options: Record<string, unknown> }): void {
    this.append('session_start', {
      command: info.command,
      args: [...info.args],
      cwd: info.cwd,
      mcpguard_pid: process.pid,
      started_at: new Date().toISOString(),
      options: info.options,
    });
  }

  childSpawned(pid: number): void {
    this.append('child_started', { pid, pgid: pid });
  }

  callStarted(call: Call): boolean {
    return this.append('call_attempt', {
      call_id: call.callId,
      request_id: call.requestId,
      method: call.method,
      tool: call.tool,
      started_at: iso(call.startedAt),
    });
  }

  callDispatched(call: Call): void {
    this.defer('call_dispatched', { call_id: call.callId, dispatched_at: iso(call.dispatchedAt) });
  }

  callEnded(call: Call): void {
    this.defer('call_end', {
      call_id: call.callId,
      session_id: this.sessionId,
      request_id: call.requestId,
      method: call.method,
      tool: call.tool,
      state: call.state,
      detail: call.detail,
      cancel_requested: call.cancelRequested,
      stderr_bytes_seen: call.stderr?.seen ?? 0,
      stderr_bytes_retained: call.stderr?.retained ?? 0,
      stderr_truncated: call.stderr?.truncated ?? false,
      stderr_shared_window: call.stderr?.shared ?? false,
      exit_status: call.exitStatus,
      stream_end: call.streamEnd,
      started_at: iso(call.startedAt),
      dispatched_at: iso(call.dispatchedAt),
      ended_at: iso(call.endedAt),
    });
  }

  rejected(rejection: Rejection): void {
    this.defer('reject', {
      direction: rejection.direction,
      line: rejection.line,
      code: rejection.code,
      reason: rejection.reason,
      fingerprint: rejection.frame === null ? { sha256_16: null, bytes: rejection.bytes } : fingerprint(rejection.frame),
    });
  }

  /** The session record, then the seal. */
  sessionEnded(record: Record<string, unknown>): void {
    this.append('session_end', { ...record, ended_at: new Date().toISOString() });
    if (this.failure !== null) return;
    try {
      this.log.seal();
    } catch (error) {
      this.fail(error as Error);
    }
  }

  private append(type: string, body: Record<string, unknown>): boolean {
    if (this.failure !== null) return false;
    try {
      this.log.append(type, body);
      return true;
    } catch (error) {
      this.fail(error as Error);
      return false;
    }
  }

  /**
   * Records that need not precede anything (dispatch, a call's end, a
   * rejection) are chained now and written with the next write-ahead record,
   * or at the latest DEFER_MS later, so a busy relay pays one write per call.
   * Only a crash inside that window can lose them (never an attempt), and the
   * session's end writes everything.
   */
  private defer(type: string, body: Record<string, unknown>): void {
    if (this.failure !== null) return;
    try {
      this.log.defer(type, body);
    } catch (error) {
      this.fail(error as Error);
      return;
    }
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setTimeout(() => {
      this.flushScheduled = false;
      if (this.failure !== null) return;
      try {
        this.log.flush();
      } catch (error) {
        this.fail(error as Error);
      }
    }, DEFER_MS).unref();
  }

  private flushScheduled = false;

  private fail(error: Error): void {
    this.failure ??= error;
    this.onFailure(error);
  }
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
