/**
 * The call record: one client request that reached mcpguard, from arrival to
 * its one final state, and what decided it. Shared by every layer that
 * touches a call (mcp legs, gate, relay, stderr, session); the table that
 * holds the calls in flight is relay/calls.ts.
 */
import type { RequestId } from '../wire/jsonrpc.js';
import { newCallId } from '../records/ids.js';
import { MAX_HOLD_BYTES } from '../mask/redact.js';

/** The most of a tools/call's arguments or result the OpenTelemetry export shows (--otlp-content on), in bytes after masking. */
export const CONTENT_BYTES = 4096;

/**
 * A tools/call's arguments and result as the frames carried them, kept only
 * with --otlp-content on (the relay sets `content` when the call starts):
 * copies of at most CONTENT_BYTES plus the masker's look-ahead
 * (MAX_HOLD_BYTES, so that a secret that starts before the cut is still
 * masked whole), and each one's whole length.
 */
export interface CallContent {
  arguments: Buffer | null;
  argumentsBytes: number;
  result: Buffer | null;
  resultBytes: number;
}

/** A new, empty CallContent (the call's content is to be kept). */
export function keepContent(): CallContent {
  return { arguments: null, argumentsBytes: 0, result: null, resultBytes: 0 };
}

/** The bytes of `frame` from `start` to `end` that CallContent keeps: a copy, never a view (a view would keep the whole read chunk alive). */
export function contentBytes(frame: Buffer, start: number, end: number): Buffer {
  return Buffer.from(frame.subarray(start, Math.min(end, start + CONTENT_BYTES + MAX_HOLD_BYTES)));
}

/** What decided a call, for its records. */
export interface Decision {
  by: 'schema' | 'policy' | 'approval' | 'approve-cmd' | 'pins' | 'grant';
  rule: number | null;
  channel: 'elicitation' | 'input_required' | 'approve-cmd' | null;
  card: { sha256: string; bytes: number; shown_at: string; answered_at: string | null; answer: string | null } | null;
  reason: string | null;
  /** A card's answer: how far the approval reaches (`once`, `session-same-arguments`, `session-tool`; gate/grants.ts). */
  scope?: string;
  /** A call a session grant allowed without a card: the call whose card granted it, the grant's scope, channel and time. */
  grant?: { call_id: string; scope: string; channel: string | null; granted_at: string };
}

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

/** Every state `--state` accepts, in the order help lists them: the final states, and `open` / `no_final_record` for calls without a final record. */
export const CALL_STATES: readonly string[] = [
  'completed',
  'error',
  'tool_error',
  'rejected',
  'denied',
  'cancelled_before_dispatch',
  'cancelled_after_dispatch',
  'timed_out_after_dispatch',
  'unknown_after_dispatch',
  'input_required',
  'stream_ended',
  'open',
  'no_final_record',
];

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
  /** W3C tracestate from the request's `_meta`, if any (for the OpenTelemetry export; not recorded). */
  tracestate?: string | null;
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
  /** Era rules this call's answer broke without being refused (e.g. a result without resultType), and ERA_PROBE_DECLINED. */
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
  /** The JSON-RPC error code the server answered with (state `error`), for the OpenTelemetry span's error.type; else null. */
  errorCode?: number | null;
  /** The client asked to cancel it (notifications/cancelled). */
  cancelRequested: boolean;
  /** Deadline timer, if --call-timeout is set. */
  timer: NodeJS.Timeout | null;
  /** A policy rule's `timeout` for this call, replacing --call-timeout from dispatch on; null: none. */
  deadline: { ms: number; rule: number } | null;
  /** The child's exit, when it was observed with the call in flight; else null. */
  exitStatus: { code: number | null; signal: string | null } | null;
  /** How the child's streams ended, for calls cut off by the child's end; else null (streams still open). */
  streamEnd: { stdout: string; stderr: string } | null;
  /** Stderr accounting for the call's window and its retained text (marked as excerpt.ts marks it; null: none seen), filled in when it ends. */
  stderr: { seen: number; retained: number; truncated: boolean; shared: boolean; text: string | null; end?: number | null } | null;
  /** The arguments and result of a tools/call, with --otlp-content on only (absent otherwise). */
  content?: CallContent;
  /** How long the gate's schema and policy steps took, ms (performance.now); present only with the OpenTelemetry export on, which shows them. */
  steps?: { schemaMs: number | null; policyMs: number | null };
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
    deadline: null,
    exitStatus: null,
    streamEnd: null,
    stderr: null,
    // Set later only for some calls (an error's code, a tracestate, what the export keeps): present from the start, so
    // that every call has one shape and the code reading calls stays monomorphic (a field added later is a new shape).
    tracestate: null,
    errorCode: null,
    content: undefined,
    steps: undefined,
  };
}

/**
 * The flag on a `server/discover` answered "method not found": a legacy
 * server telling a probing client its era (Python `mcp` 2.x and fastmcp 4
 * ask first), not a failure. The call keeps its state (`error`: the server
 * did answer with an error); the views leave it out of what failed.
 */
export const ERA_PROBE_DECLINED = 'era_probe_declined';
