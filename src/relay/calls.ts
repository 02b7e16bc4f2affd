/**
 * The call table: every client request that reached mcpguard, from arrival to
 * its one final state, and the child's own requests awaiting a client answer.
 * Pure state; the session does the IO.
 */
import type { RequestId } from '../wire/jsonrpc.js';
import { newCallId } from '../records/ids.js';
import type { Decision } from '../gate/gate.js';

/** A call's final state, named from what mcpguard observed (never guessed). */
export type CallState =
  | 'completed' // the child answered with a result
  | 'error' // the child answered with a JSON-RPC error
  | 'tool_error' // the child answered a tools/call with a result flagged isError: true (the tool ran and failed)
  | 'rejected' // mcpguard refused the frame; nothing reached the child
  | 'cancelled_before_dispatch' // cancelled while still queued inside mcpguard
  | 'cancelled_after_dispatch' // cancelled (by the client or by mcpguard's shutdown) after the child got it
  | 'timed_out_after_dispatch' // --call-timeout expired after the child got it
  | 'unknown_after_dispatch' // the child exited with the call in flight: the action may have happened
  | 'input_required' // the child answered that it needs input first (2026-07-28); the client's retry is a new call
  | 'stream_ended' // a subscriptions/listen stream ended (by the server, the client, or the session's end)
  | 'denied'; // the gate refused it before dispatch: a policy rule, a person's answer, an expired or impossible approval

export interface Call {
  /** mcpguard's own id for the call (stable across records). */
  callId: string;
  requestId: RequestId | null;
  idKey: string | null;
  method: string | null;
  /** `params.name` of a tools/call. */
  tool: string | null;
  /** What a multi-round call is about (method and tool, prompt or resource), for linking its legs; else null. */
  target: string | null;
  /** The protocol version the call ran under (negotiated, or claimed in its `_meta`). */
  protocolVersion: string | null;
  /** W3C traceparent from the request's `_meta`, if any. */
  traceparent: string | null;
  /** For a retry after `input_required`: the call id of the leg before, and how the link was made. */
  continues: string | null;
  linkedBy: 'request_state' | 'same_target' | null;
  /** The call id of the first leg of a multi-round call (set on every leg); else null. */
  chain: string | null;
  /** Hash of the `requestState` an `input_required` answer carried. */
  requestStateHash: string | null;
  /** A tools/list that asked for a later page (a cursor): the tools it returns add to the pages before. */
  cursor: boolean;
  /** The gate is deciding it: received, not yet dispatched, answered or withdrawn. (A flag, not a Set of calls: no table to grow and shrink per call.) */
  gated: boolean;
  /** What the gate decided, and who decided it (null: the gate did not look at it). */
  decision: Decision | null;
  /** Era rules this call's answer broke without being refused (e.g. a result without resultType). */
  flags: string[] | null;
  startedAt: number;
  dispatchedAt: number | null;
  /** The server generation the call was handed to (--restart; 1 without it); null while it has reached no server. */
  generation: number | null;
  /** Set once, when the call ends. */
  state: CallState | null;
  endedAt: number | null;
  /** Why it ended, in words, for records and error answers. */
  detail: string | null;
  /** The client asked to cancel it (notifications/cancelled). */
  cancelRequested: boolean;
  /** Deadline timer, if --call-timeout is set. */
  timer: NodeJS.Timeout | null;
  /** The child's exit, when it was observed with the call in flight; else null. */
  exitStatus: { code: number | null; signal: string | null } | null;
  /** How the child's streams ended, for calls cut off by the child's end; else null (streams still open). */
  streamEnd: { stdout: string; stderr: string } | null;
  /** Stderr accounting for the call's window and its retained text (marked as excerpt.ts marks it; null: none seen), filled in when it ends. */
  stderr: { seen: number; retained: number; truncated: boolean; shared: boolean; text: string | null } | null;
}

export function newCall(requestId: RequestId | null, idKey: string | null, method: string | null, tool: string | null): Call {
  return {
    callId: newCallId(),
    requestId,
    idKey,
    method,
    tool,
    target: null,
    protocolVersion: null,
    traceparent: null,
    continues: null,
    linkedBy: null,
    chain: null,
    requestStateHash: null,
    flags: null,
    cursor: false,
    gated: false,
    decision: null,
    startedAt: Date.now(),
    dispatchedAt: null,
    generation: null,
    state: null,
    endedAt: null,
    detail: null,
    cancelRequested: false,
    timer: null,
    exitStatus: null,
    streamEnd: null,
    stderr: null,
  };
}

/**
 * An ended call under a key no request id has (every id key starts with `s`
 * or `n`): it keeps the in-flight table from ever becoming empty, because V8
 * gives a Map a fresh table each time its last entry is deleted, about 150
 * bytes per call on a one-at-a-time session. Its state is set, so it is
 * never pending.
 */
const KEEP_KEY = '';

/**
 * Most client requests open at once: waiting for the server's answer, held
 * by the gate, or ended with their id reserved (a few hundred bytes each, so
 * a few MB at most). A server that never answers would otherwise grow the
 * table for as long as the client keeps asking.
 */
export const MAX_OPEN_CALLS = 4096;
/** Most of the server's requests waiting for the client's answer (a client that never answers would grow the table the same way). */
export const MAX_SERVER_REQUESTS = 4096;

export class CallTable {
  /** Client requests the child has not answered, by id key (ended calls with a reserved id included, and one ended placeholder). */
  readonly inFlight = new Map<string, Call>([[KEEP_KEY, { ...newCall(null, null, null, null), state: 'completed' }]]);
  /** The child's requests to the client not yet answered, by id key. */
  readonly childRequests = new Map<string, { id: RequestId; method: string }>();

  /**
   * End a call exactly once; returns false if it had already ended. With
   * `reserveId` the id stays taken after the call ended (timed out, cancelled
   * after dispatch): the child may still answer it, and that late answer must
   * be dropped, not paired with a new request that reused the id.
   */
  finish(call: Call, state: CallState, detail: string | null = null, reserveId = false): boolean {
    if (call.state !== null) return false;
    call.state = state;
    call.detail = detail;
    call.endedAt = Date.now();
    if (call.timer !== null) clearTimeout(call.timer);
    call.timer = null;
    if (!reserveId && call.idKey !== null && this.inFlight.get(call.idKey) === call) this.inFlight.delete(call.idKey);
    return true;
  }

  /**
   * Whether `n` more client requests fit within MAX_OPEN_CALLS. Ids reserved
   * by ended calls (kept only to drop a late answer) give way, oldest first;
   * calls still waiting never do.
   */
  roomFor(n: number): boolean {
    // The placeholder entry does not count.
    if (this.inFlight.size - 1 + n <= MAX_OPEN_CALLS) return true;
    for (const [key, call] of this.inFlight) {
      if (call.state === null || key === KEEP_KEY) continue;
      this.inFlight.delete(key);
      if (this.inFlight.size - 1 + n <= MAX_OPEN_CALLS) return true;
    }
    return false;
  }

  /** Calls still waiting for the child, oldest first. */
  *pending(): IterableIterator<Call> {
    for (const call of this.inFlight.values()) if (call.state === null) yield call;
  }

  /** Ids of calls in flight, oldest first. */
  inFlightCallIds(): string[] {
    const ids: string[] = [];
    for (const call of this.pending()) ids.push(call.callId);
    return ids;
  }
}
