/**
 * The relay: every line from either side becomes one decision — forward its
 * original bytes, answer it with an error, or divert it as noise — and every
 * client request ends in exactly one state with exactly one answer.
 */
import { CallTable, newCall, type Call, type CallState } from './calls.js';
import { escapeBytes, type Diagnostics } from './diagnostics.js';
import { processMasker } from './mask.js';
import type { LineEvent } from './framing.js';
import {
  cancellation, classifyFrame, errorResponse, idKey, memberId, memberString, peekId,
  CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, REQUEST_TIMEOUT,
  type Classified, type Message, type Request, type RequestId, type Response,
} from './jsonrpc.js';
import type { Rejection, SessionObserver } from './observer.js';
import { STREAM_METHODS, type EraRules, type RequestMeta, type RuleKind } from './wire/era.js';
import { EraGuard } from './wire/era-guard.js';
import { checkShape } from './wire/shapes.js';
import type { Gate, GateIO, Outcome } from './gate/gate.js';
import type { Delivery, FrameWriter } from './writer.js';

export interface RelayOptions {
  maxFrameBytes: number;
  onInvalid: 'close' | 'reject';
  onChildNoise: 'continue' | 'close';
  allowBatch: boolean;
  /** Milliseconds, or null for no deadline. */
  callTimeout: number | null;
  /** What to do with a line that breaks its protocol era's rules: refuse it, or forward it and report it. */
  eraRules: EraRules;
}

export interface RelayCounters {
  clientFrames: number;
  childFrames: number;
  rejectedClient: number;
  noiseLines: number;
  noiseBytes: number;
  lateResponses: number;
  ignoredClientBytes: number;
  /** Requests handed toward the child that it could never receive (its stdin was closed). */
  undelivered: number;
  /** Calls per final state. */
  states: Partial<Record<CallState, number>>;
  /** Client lines refused because an MCP method's params had the wrong shape. */
  shapeRejections: number;
  /** Lines that broke their era's rules, per rule (refused or, with --era-rules warn, forwarded). */
  eraViolations: Partial<Record<RuleKind, number>>;
}


export class Relay {
  readonly calls = new CallTable();
  readonly counters: RelayCounters = {
    clientFrames: 0, childFrames: 0, rejectedClient: 0, noiseLines: 0, noiseBytes: 0, lateResponses: 0, ignoredClientBytes: 0, undelivered: 0, states: {}, shapeRejections: 0, eraViolations: {},
  };
  /** The session's protocol era, learned from what passes, and its rules. */
  readonly eras: EraGuard;
  private readonly gate: Gate | null;
  /** Calls the gate is deciding: received, not yet dispatched, answered or withdrawn. */
  private readonly gated = new Set<Call>();
  /** Set when mcpguard accepts no more client input (on-invalid close, shutdown). */
  inputClosed = false;

  constructor(
    private readonly options: RelayOptions,
    private readonly toClient: FrameWriter,
    private readonly toChild: FrameWriter,
    private readonly diag: Diagnostics,
    private readonly observers: readonly SessionObserver[],
    /** Asks the session to end; the first reason wins there. */
    private readonly requestEnd: (reason: string) => void,
    /** May return a replacement frame for a single response that ends a call. */
    private readonly decorate: ((call: Call, response: Response) => Buffer | null) | null = null,
    /** Schema, policy and approval for tools/call (null: --validate-args off and no policy). */
    gate: ((io: GateIO) => Gate) | null = null,
  ) {
    this.gate = gate === null ? null : gate({
      toChild: (frame) => this.toChild.write(frame),
      toClient: (frame) => this.toClient.write(frame),
      diag: (line) => this.diag.line(line),
      modern: () => this.eras.modern,
    });
    this.eras = new EraGuard(options.eraRules, this.counters.eraViolations, diag, (r) => this.notify(r), (key) => this.calls.inFlight.get(key));
  }

  // ---- client → child ----

  fromClient(event: LineEvent): void {
    if (this.inputClosed) return this.refuseAfterClose(event);
    if (event.kind === 'oversize') {
      return this.reject(event.line, INVALID_REQUEST, `line of ${event.bytes} bytes exceeds --max-frame-bytes ${this.options.maxFrameBytes}`, peekId(event.head), null, event.bytes);
    }
    if (event.kind === 'partial') {
      return this.reject(event.line, PARSE_ERROR, 'incomplete line at end of input (no newline)', peekId(event.bytes), event.bytes, event.bytes.length);
    }
    const message = classifyFrame(event.frame, this.classifyOptions());
    if (message.kind === 'invalid') {
      const id = message.id ?? (message.code === PARSE_ERROR ? peekId(event.frame) : null);
      return this.reject(event.line, message.code, message.reason, id, event.frame, event.frame.length - 1, message.method);
    }
    const items = message.kind === 'batch' ? message.items : [message];
    const problem = this.checkClientState(items);
    if (problem !== null) return this.reject(event.line, INVALID_REQUEST, problem.reason, problem.id, event.frame, event.frame.length - 1);
    const metas = this.checkClientEra(event.line, message.frame, items);
    if (metas === null) return;
    if (!this.checkShapes(event.line, message.frame, items, metas)) return;
    this.counters.clientFrames++;
    this.forwardToChild(message.frame, items, metas);
  }

  private readonly classifying = { allowBatch: false };

  /** Batches pass only where the era has them (see EraTracker.batchesAllowed). */
  private classifyOptions(): { allowBatch: boolean } {
    this.classifying.allowBatch = this.eras.tracker.batchesAllowed(this.options.allowBatch);
    return this.classifying;
  }

  /**
   * The era's rules for a client line, before any of it is applied. Returns
   * each item's `_meta` reading, or null when the line was refused (a request
   * is answered; a notification or response is not, as JSON-RPC requires).
   */
  private checkClientEra(line: number, frame: Buffer, items: readonly Message[]): RequestMeta[] | null {
    const { metas, refuse } = this.eras.clientLine(line, frame, items);
    if (refuse === null) return metas;
    const { violation, culprit } = refuse;
    if (culprit.kind === 'request') {
      const code = violation.rule === 'missing_meta' ? INVALID_PARAMS : INVALID_REQUEST;
      this.reject(line, code, violation.reason, items.length === 1 ? culprit.id : null, frame, frame.length - 1, culprit.method, violation.rule);
    } else {
      this.counters.rejectedClient++;
      this.eras.report('client', line, violation, frame, 'refused');
    }
    return null;
  }

  /**
   * The params of each MCP method against its era's schema. A request with
   * the wrong shape is answered -32602 and never reaches the server; the
   * line was well-formed JSON-RPC, so the session goes on.
   */
  private checkShapes(line: number, frame: Buffer, items: readonly Message[], metas: readonly RequestMeta[]): boolean {
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (item.kind === 'response') continue;
      const problem = checkShape(item.method, item.params, frame, this.eras.modern || metas[i]!.claimsModern);
      if (problem === null) continue;
      const reason = `${item.method}: ${problem}`;
      if (item.kind === 'request') {
        this.reject(line, INVALID_PARAMS, reason, items.length === 1 ? item.id : null, frame, frame.length - 1, item.method, 'method_shape');
      } else {
        this.counters.rejectedClient++;
        this.counters.shapeRejections++;
        this.diag.line(`refused client line ${line}: method_shape: ${reason}`);
        this.notify({ direction: 'client', line, code: null, reason, frame: frame.subarray(0, -1), bytes: frame.length - 1, rule: 'method_shape', action: 'refused' });
      }
      return false;
    }
    return true;
  }

  /**
   * Input after the session closed is never forwarded. Each request in it
   * still gets its one answer (the client must not wait forever) and its
   * record, unless its id is still in flight: an answer with that id would be
   * a second answer to the request already running.
   */
  private refuseAfterClose(event: LineEvent): void {
    this.counters.ignoredClientBytes += event.kind === 'oversize' ? event.bytes : event.kind === 'line' ? event.frame.length : event.bytes.length;
    if (event.kind !== 'line') return;
    const message = classifyFrame(event.frame, this.options);
    const items = message.kind === 'batch' ? message.items : [message];
    for (const item of items) {
      if (item.kind !== 'request') continue;
      if (this.calls.inFlight.has(item.idKey)) {
        this.diag.line(`request id ${JSON.stringify(item.id)} arrived after the session closed while a request with that id is in flight; not answered twice`);
        continue;
      }
      const call = newCall(item.id, null, item.method, null);
      this.end(call, 'rejected', 'arrived after the session closed');
      this.toClient.write(errorResponse(item.id, CONNECTION_CLOSED, 'mcpguard: the session is closed; request not forwarded', { state: 'rejected' }));
    }
  }

  /** Checks that need the call table; the whole batch is checked before any of it is applied. */
  private checkClientState(items: readonly Message[]): { reason: string; id: RequestId | null } | null {
    // A Set is needed only to catch repeats inside a batch.
    const seen = items.length > 1 ? new Set<string>() : null;
    for (const item of items) {
      if (item.kind === 'request') {
        // Answering with the reused id would pair the error with the request in flight.
        if (this.calls.inFlight.has(item.idKey) || seen?.has(item.idKey) || this.gate?.ownsId(item.idKey)) return { reason: `request id ${JSON.stringify(item.id)} is already in flight`, id: null };
        seen?.add(item.idKey);
      } else if (item.kind === 'response') {
        if (this.gate?.ownsId(item.idKey) && items.length === 1) continue;
        if (!this.calls.childRequests.has(item.idKey) || seen?.has(`r${item.idKey}`)) return { reason: `response to id ${JSON.stringify(item.id)}, which the server did not ask (or was already answered)`, id: null };
        seen?.add(`r${item.idKey}`);
      }
    }
    return null;
  }

  private forwardToChild(frame: Buffer, items: readonly Message[], metas: readonly RequestMeta[]): void {
    if (this.gate !== null && items.length === 1) {
      const item = items[0]!;
      if (item.kind === 'request' && item.method === 'tools/call') return this.review(this.gate, item, metas[0]!);
      if (item.kind === 'response' && this.gate.clientAnswered(item.idKey, item.isError ? null : item.body, item.frame)) return;
      if (item.kind === 'request' && item.method === 'initialize') this.gate.clientInitialized(item);
    }
    const started: Call[] = [];
    const vetoed: Call[] = [];
    let forward = true;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (item.kind === 'request') {
        const call = this.startCall(item, metas[i]!);
        let recorded = true;
        for (const o of this.observers) if (o.callStarted?.(call) === false) recorded = false;
        if (!recorded) vetoed.push(call);
        this.armDeadline(call);
        started.push(call);
      } else if (item.kind === 'response') {
        this.calls.childRequests.delete(item.idKey);
      } else if (item.method === 'notifications/cancelled' && items.length === 1) {
        forward = this.clientCancels(item);
      }
    }
    if (vetoed.length > 0) {
      // Write-ahead failed: nothing of this line may reach the child.
      for (const call of started) {
        this.end(call, 'rejected', 'mcpguard could not write its audit record');
        this.answer(call, INTERNAL_ERROR, 'mcpguard: the audit record could not be written; request not forwarded');
      }
      return;
    }
    if (!forward) return;
    this.toChild.write(frame, started.length === 0 ? undefined : this.delivery(started), started.length === 1 ? started[0] : undefined);
  }

  /** A request's call, with what its era and its metadata say about it. */
  private startCall(item: Request, meta: RequestMeta): Call {
    const tool = item.method === 'tools/call' ? memberString(item.frame, item.params, 'name') ?? null : null;
    const call = newCall(item.id, item.idKey, item.method, tool);
    this.calls.inFlight.set(item.idKey, call);
    this.eras.callStarted(call, item, meta);
    if (item.method === 'tools/list') call.cursor = item.params?.members?.has('cursor') === true;
    return call;
  }

  /** A tools/call goes through the gate; other lines keep flowing while it is decided. */
  private review(gate: Gate, item: Request, meta: RequestMeta): void {
    const call = this.startCall(item, meta);
    this.gated.add(call);
    this.armDeadline(call);
    gate.review(call, item, meta).then(
      (outcome) => this.settle(call, outcome),
      (error: Error) => this.settle(call, { kind: 'refuse', state: 'rejected', reason: `mcpguard could not check the call: ${error.message}`, answer: errorResponse(call.requestId, INTERNAL_ERROR, 'mcpguard: the call could not be checked; not forwarded', { state: 'rejected' }) }),
    );
  }

  /** The gate's outcome for a call, unless the call ended meanwhile (cancelled, timed out, session over). */
  private settle(call: Call, outcome: Outcome): void {
    if (!this.gated.delete(call) || call.state !== null) return;
    if (outcome.kind === 'refuse') {
      this.end(call, outcome.state, outcome.reason);
      this.toClient.write(outcome.answer);
      return;
    }
    if (outcome.kind === 'card') {
      this.eras.cardShown(call, outcome.state);
      this.end(call, 'input_required', 'mcpguard asks a person to approve the call; the client retries with the answer');
      this.toClient.write(outcome.answer);
      return;
    }
    let recorded = true;
    for (const o of this.observers) if (o.callStarted?.(call) === false) recorded = false;
    if (!recorded) {
      this.end(call, 'rejected', 'mcpguard could not write its audit record');
      return this.answer(call, INTERNAL_ERROR, 'mcpguard: the audit record could not be written; request not forwarded');
    }
    this.toChild.write(outcome.frame, this.delivery([call]), call);
  }

  /** Take back a call that has not reached the child (the gate holds it, or it waits in the queue): true if it had not. */
  private withdraw(call: Call): boolean {
    if (call.dispatchedAt !== null) return false;
    if (this.gated.delete(call)) {
      this.gate!.withdraw(call);
      return true;
    }
    return this.toChild.withdraw(call);
  }

  /** How the calls of one forwarded line learn that it reached the child's stdin, or never will. */
  private delivery(started: readonly Call[]): Delivery {
    return {
      dispatched: () => {
        const now = Date.now();
        for (const call of started) {
          if (call.state !== null) continue;
          call.dispatchedAt = now;
          for (const o of this.observers) o.callDispatched?.(call);
        }
      },
      // The child's stdin was closed (EPIPE) before these bytes got in: the server never saw them.
      undelivered: (error) => {
        for (const call of started) {
          if (call.state !== null) continue;
          this.counters.undelivered++;
          call.dispatchedAt = null;
          const why = `the server's stdin is closed (${(error as NodeJS.ErrnoException).code ?? error.message}); not delivered`;
          this.end(call, 'cancelled_before_dispatch', why);
          this.answer(call, CONNECTION_CLOSED, `mcpguard: ${why}`);
        }
      },
    };
  }

  /** A client cancellation; returns whether to forward it to the child. */
  private clientCancels(message: Message & { kind: 'notification' }): boolean {
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

  private armDeadline(call: Call): void {
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

  /**
   * Refuse a client line, answering it (id null when none can be paired).
   * A line that breaks only an era rule (`rule`) was well-formed: the stream
   * is still in step, so it never closes the session.
   */
  private reject(line: number, code: number, reason: string, readId: RequestId | null, frame: Buffer | null, bytes: number, method: string | null = null, rule: RuleKind | 'method_shape' | null = null): void {
    this.counters.rejectedClient++;
    if (rule === 'method_shape') this.counters.shapeRejections++;
    else if (rule !== null) this.counters.eraViolations[rule] = (this.counters.eraViolations[rule] ?? 0) + 1;
    // Answering with an id still in flight would pair this error with that request.
    const id = readId !== null && this.calls.inFlight.has(idKey(readId)) ? null : readId;
    this.toClient.write(errorResponse(id, code, `mcpguard rejected the frame: ${processMasker().text(reason)}`, rule === null ? undefined : { rule }));
    this.diag.line(`rejected client line ${line}: ${rule === null ? '' : `${rule}: `}${reason}${frame ? `: ${escapeBytes(frame.subarray(0, frame.length - (frame.at(-1) === 10 ? 1 : 0)))}` : ''}`);
    // A request with a readable id still gets its one final record; it never had an attempt.
    if (id !== null) this.end(newCall(id, null, method, null), 'rejected', reason);
    this.notify(rule === null ? { direction: 'client', line, code, reason, frame, bytes } : { direction: 'client', line, code, reason, frame, bytes, rule, action: 'refused' });
    if (this.options.onInvalid === 'close' && rule === null) {
      this.inputClosed = true;
      this.requestEnd('invalid_client_frame');
    }
  }

  // ---- child → client ----

  fromChild(event: LineEvent): void {
    if (event.kind === 'oversize') return this.noise(event.line, `line of ${event.bytes} bytes exceeds --max-frame-bytes ${this.options.maxFrameBytes}`, event.head, event.bytes);
    if (event.kind === 'partial') return this.noise(event.line, 'incomplete line at end of output (no newline)', event.bytes, event.bytes.length);
    const message: Classified = classifyFrame(event.frame, this.classifyOptions());
    if (message.kind === 'invalid') return this.noise(event.line, message.reason, event.frame, event.frame.length - 1);
    const items = message.kind === 'batch' ? message.items : [message];
    // The answer to one of mcpguard's own requests (its tools/list) is for mcpguard alone.
    if (message.kind === 'response' && this.gate?.tools.serverAnswered(message)) return;
    // Validate the whole line against the call table and the era before acting on any of it.
    for (const item of items) {
      if (item.kind === 'request' && this.gate?.ownsId(item.idKey)) {
        return this.noise(event.line, `server request id ${JSON.stringify(item.id)} is the id of a request mcpguard itself has open with the client`, event.frame, event.frame.length - 1);
      }
      if (item.kind === 'response' && !this.calls.inFlight.has(item.idKey)) {
        return this.noise(event.line, `response to id ${JSON.stringify(item.id)}, which no client request in flight has`, event.frame, event.frame.length - 1);
      }
      const violation = item.kind === 'response' ? null : this.eras.serverMessage(item);
      if (violation !== null) {
        // Diverted, not forwarded: a server request's id never enters the table.
        if (this.options.eraRules === 'enforce') return this.eras.report('child', event.line, violation, event.frame, 'refused');
        this.eras.report('child', event.line, violation, event.frame, 'forwarded');
      }
      if (item.kind === 'request' && this.calls.childRequests.has(item.idKey)) {
        return this.noise(event.line, `server request id ${JSON.stringify(item.id)} is already in flight`, event.frame, event.frame.length - 1);
      }
    }
    let late = 0;
    let frame = message.frame;
    const answered: Array<[Call, CallState, string | null]> = [];
    for (const item of items) {
      if (item.kind === 'request') this.calls.childRequests.set(item.idKey, { id: item.id, method: item.method });
      else if (item.kind === 'notification') {
        if (item.method === 'notifications/tools/list_changed') this.gate?.tools.forget();
        const listen = this.eras.endedListen(item);
        if (listen !== undefined) this.end(listen, 'stream_ended', 'closed by the server (notifications/cancelled)');
      }
      else {
        const call = this.calls.inFlight.get(item.idKey)!;
        this.calls.inFlight.delete(item.idKey);
        if (call.state !== null) {
          late++;
          continue;
        }
        const outcome = this.eras.outcome(event.line, call, item);
        if ('refused' in outcome) {
          // A single response (the era with these rules has no batches): the client gets mcpguard's error instead.
          const why = `mcpguard refused the server's answer: ${outcome.refused.reason}`;
          this.end(call, 'error', why);
          this.toClient.write(errorResponse(call.requestId, INTERNAL_ERROR, why, { state: 'error', rule: outcome.refused.rule }));
          this.counters.childFrames++;
          return;
        }
        answered.push([call, outcome.state, outcome.detail]);
        if (items.length !== 1) continue;
        const listed = call.method === 'tools/list' && !item.isError ? this.gate?.toolsListed(call, call.cursor, item.body, item.frame) ?? null : null;
        const decorated = listed ?? this.decorate?.(call, item) ?? null;
        if (decorated !== null) frame = decorated;
      }
    }
    if (late > 0 && late === items.length) {
      // The client was already answered (timeout) or stopped waiting (cancel).
      this.counters.lateResponses += late;
      this.diag.line(`dropped late response on child line ${event.line} (the call had already ended)`);
      return;
    }
    this.counters.childFrames++;
    // The answer goes out first; the final records follow (only the attempt must be write-ahead).
    this.toClient.write(frame);
    for (const [call, state, detail] of answered) this.end(call, state, detail);
  }

  private noise(line: number, reason: string, bytes: Buffer, length: number): void {
    this.counters.noiseLines++;
    this.counters.noiseBytes += length;
    const shown = bytes.length > 0 && bytes[bytes.length - 1] === 10 ? bytes.subarray(0, -1) : bytes;
    this.diag.line(`child stdout line ${line} is not JSON-RPC: ${escapeBytes(shown)} (${reason})`);
    this.notify({ direction: 'child', line, code: null, reason, frame: shown, bytes: length });
    if (this.options.onChildNoise === 'close') this.requestEnd('child_noise');
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

  private end(call: Call, state: CallState, detail: string | null, reserveId = false): void {
    if (!this.calls.finish(call, state, detail, reserveId)) return;
    this.counters.states[state] = (this.counters.states[state] ?? 0) + 1;
    for (const o of this.observers) o.callEnded?.(call);
  }

  private answer(call: Call, code: number, message: string): void {
    this.toClient.write(errorResponse(call.requestId, code, message, { state: call.state }));
  }



  private notify(rejection: Rejection): void {
    for (const o of this.observers) o.rejected?.(rejection);
  }
}

