/**
 * The call half of the relay: every client request from the moment it is
 * accepted to its one final state and its one answer. Starting a call, the
 * gate's decision, dispatch and delivery, cancellation, deadlines, and the
 * answers owed when the session ends. The relay (relay.ts) reads the lines,
 * holds one CallKeeper and calls in here; nothing else does.
 */
import { emptyCounters, type RelayCounters } from './counters.js';
import { CallTable, MAX_OPEN_CALLS, MAX_SERVER_REQUESTS } from './calls.js';
import { keepContent, newCall, type Call, type CallState } from '../mcp/call.js';
import type { Diagnostics } from '../mask/diagnostics.js';
import {
  cancellation,
  errorResponse,
  idKey,
  memberId,
  memberString,
  CONNECTION_CLOSED,
  INTERNAL_ERROR,
  REQUEST_TIMEOUT,
  type Classified,
  type Message,
  type Request,
} from '../wire/jsonrpc.js';
import type { Rejection, SessionObserver } from './observer.js';
import { STREAM_METHODS, type EraRules, type RequestMeta } from '../mcp/era.js';
import { EraGuard } from './era-guard.js';
import type { Gate, GateIO, Outcome } from '../gate/gate.js';
import { refusal } from '../gate/refusal.js';
import { QueueRefusal, type Delivery, type FrameWriter } from '../wire/writer.js';
import type { ToChild } from './link.js';

export interface RelayOptions {
  maxFrameBytes: number;
  onInvalid: 'close' | 'reject';
  onChildNoise: 'continue' | 'close';
  allowBatch: boolean;
  /** Milliseconds, or null for no deadline. */
  callTimeout: number | null;
  /** What to do with a line that breaks its protocol era's rules: refuse it, or forward it and report it. */
  eraRules: EraRules;
  /** Keep each tools/call's arguments and result on its call (--otlp-content on, for the OpenTelemetry export). */
  keepContent?: boolean;
  /** Have the gate time its schema and policy steps on each tools/call (the OpenTelemetry export is on). */
  timeSteps?: boolean;
}

export type { RelayCounters } from './counters.js';

export class CallKeeper {
  readonly calls = new CallTable();
  readonly counters: RelayCounters = emptyCounters();
  /** The session's protocol era, learned from what passes, and its rules. */
  readonly eras: EraGuard;
  /** Schema, policy and approval for tools/call; null when off. */
  readonly gate: Gate | null;

  constructor(
    private readonly options: RelayOptions,
    private readonly toClient: FrameWriter,
    private readonly toChild: ToChild,
    private readonly diag: Diagnostics,
    private readonly observers: readonly SessionObserver[],
    gate: ((io: GateIO) => Gate) | null,
  ) {
    this.eras = new EraGuard(
      options.eraRules,
      this.counters.eraViolations,
      diag,
      (r) => this.notify(r),
      (key) => this.calls.inFlight.get(key),
    );
    this.gate =
      gate === null
        ? null
        : gate({
            toChild: (frame, delivery) => this.toChild.write(frame, delivery),
            toClient: (frame) => this.toClient.write(frame),
            diag: (line) => this.diag.line(line),
            modern: () => this.eras.modern,
            version: () => this.eras.tracker.version,
            clientClosed: () => this.clientClosed,
            idTaken: (key) => this.idTaken(key),
          });
  }

  /**
   * An id key in flight on either side: a client request's (the server has
   * it, or will), a server request's (the client has it; a restarted
   * server's too, whose answers are still dropped), or one of mcpguard's own.
   */
  idTaken(key: string): boolean {
    return this.calls.inFlight.has(key) || this.calls.childRequests.has(key) || this.retiredChildRequests.has(key) || (this.gate?.ownsId(key) ?? false);
  }

  /** A request's call, with what its era and its metadata say about it. */
  startCall(item: Request, meta: RequestMeta): Call {
    const tool = item.method === 'tools/call' ? (memberString(item.frame, item.params, 'name') ?? null) : null;
    const call = newCall(item.id, item.idKey, item.method, tool);
    if (tool !== null && this.options.keepContent === true) call.content = keepContent();
    if (tool !== null && this.options.timeSteps === true) call.steps = { schemaMs: null, policyMs: null };
    this.calls.inFlight.set(item.idKey, call);
    this.eras.callStarted(call, item, meta);
    if (item.method === 'tools/list') call.cursor = item.params?.members?.has('cursor') === true;
    return call;
  }

  /**
   * Room in the call table for a client line's requests (MAX_OPEN_CALLS). A
   * line that does not fit never reaches the server: it is answered (with the
   * request's id; null for a batch) and recorded, and the session goes on (the
   * line was well-formed; the server's silence filled the table).
   */
  roomForCalls(line: number, frame: Buffer, items: readonly Message[]): boolean {
    const n = requestsIn(items);
    if (n === 0 || this.calls.roomFor(n)) return true;
    const reason = `${MAX_OPEN_CALLS} requests already wait for an answer, the most mcpguard keeps open`;
    const single = items.length === 1 && items[0]!.kind === 'request' ? items[0]! : null;
    this.counters.rejectedClient++;
    this.toClient.write(errorResponse(single?.id ?? null, INTERNAL_ERROR, `mcpguard: ${reason}; request not forwarded`, { state: 'rejected' }));
    this.diag.line(`refused client line ${line}: ${reason}`);
    if (single !== null) this.end(newCall(single.id, null, single.method, null), 'rejected', reason);
    this.notify({ direction: 'client', line, code: INTERNAL_ERROR, reason, frame: frame.subarray(0, -1), bytes: frame.length - 1 });
    return false;
  }

  /**
   * Room for a server line's requests among those waiting for the client
   * (MAX_SERVER_REQUESTS). A line that does not fit is not forwarded: each of
   * its requests is answered to the server with an error, so it waits for
   * nothing, and the line is reported and recorded.
   */
  roomForServerRequests(line: number, frame: Buffer, items: readonly Message[]): boolean {
    const n = requestsIn(items);
    if (n === 0 || this.calls.childRequests.size + n <= MAX_SERVER_REQUESTS) return true;
    const reason = `${MAX_SERVER_REQUESTS} requests of the server already wait for the client's answer, the most mcpguard keeps open`;
    for (const item of items) {
      if (item.kind === 'request')
        this.toChild.write(errorResponse(item.id, INTERNAL_ERROR, `mcpguard: ${reason}; request not forwarded to the client`, { state: 'rejected' }));
    }
    // Counted with the server's other refused lines (the summary's rejected.child).
    this.counters.noiseLines++;
    this.counters.noiseBytes += frame.length - 1;
    this.diag.line(`refused server line ${line}: ${reason}`);
    this.notify({ direction: 'child', line, code: INTERNAL_ERROR, reason, frame: frame.subarray(0, -1), bytes: frame.length - 1 });
    return false;
  }

  /** A tools/call goes through the gate; other lines keep flowing while it is decided. */
  review(gate: Gate, item: Request, meta: RequestMeta): void {
    const call = this.startCall(item, meta);
    call.gated = true;
    this.armDeadline(call);
    let outcome: Outcome | Promise<Outcome>;
    try {
      outcome = gate.review(call, item, meta);
    } catch (error) {
      outcome = reviewFailed(call, error as Error);
    }
    // Decided at once (the common case): the call goes out in order with the lines around it.
    if (!(outcome instanceof Promise)) return this.settle(call, outcome);
    outcome.then(
      (decided) => this.settle(call, decided),
      (error: Error) => this.settle(call, reviewFailed(call, error)),
    );
  }

  /** The gate's outcome for a call, unless the call ended meanwhile (cancelled, timed out, session over). */
  private settle(call: Call, outcome: Outcome): void {
    if (!call.gated) return;
    call.gated = false;
    if (call.state !== null) return;
    if (outcome.kind === 'refuse') return this.settleNow(call, outcome);
    if (outcome.kind === 'card') {
      this.eras.cardShown(call, outcome.state);
      this.end(call, 'input_required', 'mcpguard asks a person to approve the call; the client retries with the answer');
      this.toClient.write(outcome.answer);
      return;
    }
    if (!this.recordAttempt(call)) return this.refuseUnrecorded(call);
    this.toChild.write(outcome.frame, this.delivery(call), call);
  }

  /**
   * Write-ahead: every observer hears of a call before any of it may reach
   * the server (the audit log writes its attempt). False when a record could
   * not be written; the call is then refused (refuseUnrecorded), never sent.
   */
  recordAttempt(call: Call): boolean {
    let recorded = true;
    for (const o of this.observers) if (o.callStarted?.(call) === false) recorded = false;
    return recorded;
  }

  /** The one ending of a call whose attempt could not be recorded: rejected, answered, nothing sent. */
  refuseUnrecorded(call: Call): void {
    this.end(call, 'rejected', 'mcpguard could not write its audit record');
    this.answer(call, INTERNAL_ERROR, 'mcpguard: the audit record could not be written; request not forwarded');
  }

  /** Take back a call that has not reached the child (the gate holds it, or it waits in the queue): true if it had not. */
  private withdraw(call: Call): boolean {
    if (call.dispatchedAt !== null) return false;
    if (call.gated) {
      call.gated = false;
      this.gate!.withdraw(call);
      return true;
    }
    return this.toChild.withdraw(call);
  }

  /** How the calls of one forwarded line (one call, or a batch's) learn that it reached the child's stdin, or never will. */
  delivery(started: Call | readonly Call[]): Delivery {
    // One small object per forwarded line, not an object and two closures.
    return new CallDelivery(this, started);
  }

  /** The calls' line was handed to the child's stdin. */
  callsDispatched(started: Call | readonly Call[]): void {
    const now = Date.now();
    if (!Array.isArray(started)) return this.dispatchedAt(started as Call, now);
    for (const call of started as readonly Call[]) this.dispatchedAt(call, now);
  }

  private dispatchedAt(call: Call, now: number): void {
    if (call.state !== null) return;
    call.dispatchedAt = now;
    for (const o of this.observers) o.callDispatched?.(call);
  }

  /** The child's stdin was closed (EPIPE) before the calls' bytes got in: the server never saw them. */
  callsUndelivered(started: Call | readonly Call[], error: Error): void {
    for (const call of Array.isArray(started) ? (started as readonly Call[]) : [started as Call]) {
      if (call.state !== null) continue;
      this.counters.undelivered++;
      call.dispatchedAt = null;
      const why =
        error instanceof QueueRefusal
          ? error.message
          : `the server's stdin is closed (${(error as NodeJS.ErrnoException).code ?? error.message}); not delivered`;
      this.end(call, 'cancelled_before_dispatch', why);
      this.answer(call, CONNECTION_CLOSED, `mcpguard: ${why}`);
    }
  }

  /** A client cancellation; returns whether to forward it to the child. */
  clientCancels(message: Message & { kind: 'notification' }): boolean {
    const requestId = memberId(message.frame, message.params, 'requestId');
    const call = requestId === undefined ? undefined : this.calls.inFlight.get(idKey(requestId));
    if (call === undefined || call.state !== null) {
      this.diag.line(`client cancelled request ${JSON.stringify(requestId ?? null)}, which is not in flight; not forwarded`);
      return false;
    }
    if (call.method === 'initialize') {
      this.diag.line('client tried to cancel initialize, which must not be cancelled; not forwarded');
      return false;
    }
    call.cancelRequested = true;
    if (this.withdraw(call)) {
      this.end(call, 'cancelled_before_dispatch', 'cancelled by the client before it reached the server');
      return false;
    }
    // Closing a stream is how a listen ends, not a failed call.
    if (STREAM_METHODS.has(call.method!)) this.end(call, 'stream_ended', 'closed by the client (notifications/cancelled)', true);
    else this.end(call, 'cancelled_after_dispatch', 'cancelled by the client', true);
    return true;
  }

  armDeadline(call: Call): void {
    if (this.options.callTimeout === null || STREAM_METHODS.has(call.method!)) return;
    call.timer = setTimeout(() => this.expire(call), this.options.callTimeout);
    call.timer.unref();
  }

  private expire(call: Call): void {
    if (call.state !== null) return;
    const ms = this.options.callTimeout;
    if (this.withdraw(call)) {
      this.end(call, 'cancelled_before_dispatch', `--call-timeout ${ms} ms expired before it reached the server`);
    } else {
      // initialize must never be cancelled: answer the client, tell the child nothing.
      if (call.method !== 'initialize') {
        this.toChild.write(cancellation(call.requestId!, `mcpguard: --call-timeout ${ms} ms expired`));
      }
      this.end(call, 'timed_out_after_dispatch', `--call-timeout ${ms} ms expired`, true);
    }
    this.answer(call, REQUEST_TIMEOUT, `mcpguard: request timed out after ${ms} ms (--call-timeout)`);
  }

  // ---- the client's end of input ----

  /** The client closed its input (EOF). */
  private clientClosed = false;
  /** Resolved once no call read before the client's EOF is still owed an answer (see whenAnswered). */
  private onAnswered: (() => void) | null = null;

  /**
   * The client closed its input: no more requests, but every one it sent is
   * still decided and, if allowed, dispatched and answered. A card shown by
   * elicitation can no longer be answered (the answer would travel on the
   * closed input), so its call is denied now rather than at its deadline.
   */
  clientEnded(): void {
    this.clientClosed = true;
    for (const call of [...this.calls.pending()]) {
      if (!call.gated || call.decision?.channel !== 'elicitation') continue;
      this.withdraw(call);
      const card = call.decision.card;
      if (card !== null) {
        card.answered_at = new Date().toISOString();
        card.answer = 'client_closed';
      }
      this.settleNow(
        call,
        refusal(call, 'denied', 'not approved: the client closed its input before the approval card was answered', this.eras.modern) as Refused,
      );
    }
  }

  /**
   * Resolves when no call is owed an answer any more (streams excepted: a
   * subscriptions/listen ends with the session, not before it).
   */
  whenAnswered(): Promise<void> {
    if (this.owed() === 0) return Promise.resolve();
    return new Promise((resolve) => (this.onAnswered = resolve));
  }

  private owed(): number {
    let n = 0;
    for (const call of this.calls.pending()) if (!STREAM_METHODS.has(call.method!)) n++;
    return n;
  }

  private settleNow(call: Call, outcome: Refused): void {
    this.end(call, outcome.state, outcome.reason);
    this.toClient.write(outcome.answer);
  }

  /**
   * A line read after the session closed, never forwarded: each request in it
   * still gets its one answer (the client must not wait forever) and its
   * record, unless its id is still in flight: an answer with that id would be
   * a second answer to the request already running.
   */
  refuseClosed(items: readonly Classified[]): void {
    for (const item of items) {
      if (item.kind !== 'request') continue;
      if (this.calls.inFlight.has(item.idKey)) {
        this.diag.line(`request id ${JSON.stringify(item.id)} arrived after the session closed while a request with that id is in flight; not answered twice`);
        continue;
      }
      this.end(newCall(item.id, null, item.method, null), 'rejected', 'arrived after the session closed');
      this.toClient.write(errorResponse(item.id, CONNECTION_CLOSED, 'mcpguard: the session is closed; request not forwarded', { state: 'rejected' }));
    }
  }

  // ---- endings ----

  /**
   * Answer every call still waiting (and drop queued ones): the child exited
   * or the session is ending. `state` says what is known about calls the child
   * had already received.
   */
  answerPending(state: CallState, why: string, observed: Pick<Call, 'exitStatus' | 'streamEnd'>): void {
    for (const call of [...this.calls.pending()]) {
      const dispatched = !this.withdraw(call);
      call.exitStatus = observed.exitStatus;
      call.streamEnd = observed.streamEnd;
      this.end(call, !dispatched ? 'cancelled_before_dispatch' : STREAM_METHODS.has(call.method!) ? 'stream_ended' : state, why);
      this.answer(call, CONNECTION_CLOSED, `mcpguard: ${why}`);
    }
  }

  /**
   * The server died and another generation will follow (--restart): the
   * calls it had received get their one answer now, never a retry (the
   * action may have happened). Calls still with the gate, or waiting for the
   * next generation (`waiting`), are not its calls and stay.
   */
  answerCrashed(waiting: (call: Call) => boolean, why: string, observed: Pick<Call, 'exitStatus' | 'streamEnd'>): void {
    for (const call of [...this.calls.pending()]) {
      if (call.gated || waiting(call)) continue;
      call.exitStatus = observed.exitStatus;
      call.streamEnd = observed.streamEnd;
      const state = call.dispatchedAt === null ? 'cancelled_before_dispatch' : STREAM_METHODS.has(call.method!) ? 'stream_ended' : 'unknown_after_dispatch';
      this.end(call, state, why);
      this.answer(call, CONNECTION_CLOSED, `mcpguard: ${why}`);
    }
  }

  /** Ids of the dead generation's requests to the client: the client's late answers to them are dropped. */
  readonly retiredChildRequests = new Set<string>();

  /** A new generation of the server runs: forget what only the last one knew. */
  serverRestarted(): void {
    for (const key of this.calls.childRequests.keys()) this.retiredChildRequests.add(key);
    // Bounded like the table they come from: the oldest are forgotten first (a late answer to one is then refused as unasked).
    for (const key of this.retiredChildRequests) {
      if (this.retiredChildRequests.size <= MAX_SERVER_REQUESTS) break;
      this.retiredChildRequests.delete(key);
    }
    this.calls.childRequests.clear();
    // Its tools are learned again (from the next tools/list, or mcpguard's own).
    this.gate?.tools.restarted();
  }

  /** A request waited --restart-wait for the next generation and was taken back: its one answer. */
  restartWaitExpired(call: Call, waitMs: number): void {
    if (call.state !== null) return;
    this.end(call, 'cancelled_before_dispatch', `the server was being restarted and was not back within ${waitMs} ms (--restart-wait)`);
    this.answer(call, CONNECTION_CLOSED, `mcpguard: the server is restarting and was not back within ${waitMs} ms (--restart-wait); request not forwarded`);
  }

  end(call: Call, state: CallState, detail: string | null, reserveId = false): void {
    if (!this.calls.finish(call, state, detail, reserveId)) return;
    this.counters.states[state] = (this.counters.states[state] ?? 0) + 1;
    this.gate?.callEnded(call);
    for (const o of this.observers) o.callEnded?.(call);
    if (this.onAnswered !== null && this.owed() === 0) {
      const resolve = this.onAnswered;
      this.onAnswered = null;
      resolve();
    }
  }

  answer(call: Call, code: number, message: string): void {
    this.toClient.write(errorResponse(call.requestId, code, message, { state: call.state }));
  }

  notify(rejection: Rejection): void {
    for (const o of this.observers) o.rejected?.(rejection);
  }
}

type Refused = Extract<Outcome, { kind: 'refuse' }>;

function requestsIn(items: readonly Message[]): number {
  let n = 0;
  for (const item of items) if (item.kind === 'request') n++;
  return n;
}

/** The refusal of a call the gate could not check. */
function reviewFailed(call: Call, error: Error): Outcome {
  return {
    kind: 'refuse',
    state: 'rejected',
    reason: `mcpguard could not check the call: ${error.message}`,
    answer: errorResponse(call.requestId, INTERNAL_ERROR, 'mcpguard: the call could not be checked; not forwarded', { state: 'rejected' }),
  };
}

/** A forwarded line's Delivery: what the writer reports goes to the keeper, for the line's calls. */
class CallDelivery implements Delivery {
  constructor(
    private readonly keeper: CallKeeper,
    private readonly started: Call | readonly Call[],
  ) {}

  dispatched(): void {
    this.keeper.callsDispatched(this.started);
  }

  undelivered(error: Error): void {
    this.keeper.callsUndelivered(this.started, error);
  }
}
