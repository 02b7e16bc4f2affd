/**
 * The call half of the relay: every client request from the moment it is
 * accepted to its one final state and its one answer. Here: starting a call,
 * room for it, the gate's decision, the write-ahead record, dispatch, the
 * deadline, and the one end of each call (`end`). What the writer reports
 * for a dispatched line is in delivery.ts; the other endings (a cancel, the
 * client's EOF, the server's exit or restart) in endings.ts. The relay
 * (relay.ts) reads the lines, holds one CallKeeper and calls in here;
 * nothing else does.
 */
import { emptyCounters, type RelayCounters } from './counters.js';
import { CallTable, MAX_OPEN_CALLS, MAX_SERVER_REQUESTS } from './calls.js';
import { keepContent, newCall, type Call, type CallState } from '../mcp/call.js';
import type { Diagnostics } from '../mask/diagnostics.js';
import { cancellation, errorResponse, memberString, INTERNAL_ERROR, REQUEST_TIMEOUT, type Message, type Request } from '../wire/jsonrpc.js';
import type { Rejection, SessionObserver } from './observer.js';
import { STREAM_METHODS, type EraRules, type RequestMeta } from '../mcp/era.js';
import { EraGuard } from './era-guard.js';
import type { Gate, GateIO, Outcome } from '../gate/gate.js';
import type { Delivery, FrameWriter } from '../wire/writer.js';
import type { ToChild } from './link.js';
import { CallDelivery } from './delivery.js';
import { CallEndings } from './endings.js';

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
  /** How calls end other than by the server's answer, and what is owed when a side goes away (endings.ts). */
  readonly endings: CallEndings;

  constructor(
    private readonly options: RelayOptions,
    readonly toClient: FrameWriter,
    private readonly toChild: ToChild,
    readonly diag: Diagnostics,
    readonly observers: readonly SessionObserver[],
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
            clientClosed: () => this.endings.clientClosed,
            idTaken: (key) => this.idTaken(key),
          });
    this.endings = new CallEndings(this);
  }

  /**
   * An id key in flight on either side: a client request's (the server has
   * it, or will), a server request's (the client has it; a restarted
   * server's too, whose answers are still dropped), or one of mcpguard's own.
   */
  idTaken(key: string): boolean {
    return this.calls.inFlight.has(key) || this.calls.childRequests.has(key) || this.endings.retiredChildRequests.has(key) || (this.gate?.ownsId(key) ?? false);
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
    if (call.deadline !== null) this.armRuleDeadline(call);
    this.toChild.write(outcome.frame, this.delivery(call), call);
  }

  /** A policy rule's `timeout` replaces --call-timeout from the moment the gate lets the call go (a person's wait is not the tool's). */
  private armRuleDeadline(call: Call): void {
    if (call.timer !== null) clearTimeout(call.timer);
    call.timer = setTimeout(() => this.expire(call, call.deadline), call.deadline!.ms);
    call.timer.unref();
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
  withdraw(call: Call): boolean {
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

  armDeadline(call: Call): void {
    if (this.options.callTimeout === null || STREAM_METHODS.has(call.method!)) return;
    call.timer = setTimeout(() => this.expire(call), this.options.callTimeout);
    call.timer.unref();
  }

  /** `rule`: the policy rule's deadline ran out (null: --call-timeout's), in the words of the records and the answer. */
  private expire(call: Call, rule: Call['deadline'] = null): void {
    if (call.state !== null) return;
    const ms = rule?.ms ?? this.options.callTimeout;
    const which = rule === null ? '--call-timeout' : `the timeout of policy rule ${rule.rule + 1}`;
    if (this.withdraw(call)) {
      this.end(call, 'cancelled_before_dispatch', `${which} ${ms} ms expired before it reached the server`);
    } else {
      // initialize must never be cancelled: answer the client, tell the child nothing.
      if (call.method !== 'initialize') {
        this.toChild.write(cancellation(call.requestId!, `mcpguard: ${which} ${ms} ms expired`));
      }
      this.end(call, 'timed_out_after_dispatch', `${which} ${ms} ms expired`, true);
    }
    this.answer(call, REQUEST_TIMEOUT, `mcpguard: request timed out after ${ms} ms (${which})`);
  }

  settleNow(call: Call, outcome: Refused): void {
    this.end(call, outcome.state, outcome.reason);
    this.toClient.write(outcome.answer);
  }

  end(call: Call, state: CallState, detail: string | null, reserveId = false): void {
    if (!this.calls.finish(call, state, detail, reserveId)) return;
    this.counters.states[state] = (this.counters.states[state] ?? 0) + 1;
    this.gate?.callEnded(call);
    for (const o of this.observers) o.callEnded?.(call);
    this.endings.callEnded();
  }

  answer(call: Call, code: number, message: string): void {
    this.toClient.write(errorResponse(call.requestId, code, message, { state: call.state }));
  }

  notify(rejection: Rejection): void {
    for (const o of this.observers) o.rejected?.(rejection);
  }
}

/** The gate's refusal of a call: its state, reason and the answer the client gets. */
export type Refused = Extract<Outcome, { kind: 'refuse' }>;

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
