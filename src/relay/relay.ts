/**
 * The relay: every line from either side becomes one decision — forward its
 * original bytes, answer it with an error, or divert it as noise — and every
 * client request ends in exactly one state with exactly one answer.
 */
import { newCall, type Call, type CallState } from '../mcp/call.js';
import { escapeBytes, type Diagnostics } from '../mask/diagnostics.js';
import { processMasker } from '../mask/mask.js';
import type { LineEvent } from '../wire/framing.js';
import {
  classifyFrame,
  errorResponse,
  idKey,
  memberId,
  peekAnswerId,
  peekId,
  INTERNAL_ERROR,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  type Classified,
  type Message,
  type RequestId,
  type Response,
} from '../wire/jsonrpc.js';
import type { SessionObserver } from './observer.js';
import type { RequestMeta, RuleKind } from '../mcp/era.js';
import { serverInfoOf } from '../mcp/server-info.js';
import { reservedMarker } from '../mcp/reserved.js';
import type { Gate, GateIO } from '../gate/gate.js';
import type { FrameWriter } from '../wire/writer.js';
import type { ToChild } from './link.js';
import { CallKeeper, type RelayCounters, type RelayOptions } from './relay-calls.js';
import type { CallTable } from './calls.js';
import type { EraGuard } from './era-guard.js';
import { ClientLineChecks, one, TOOL_ERROR_DETAIL, toolError } from './client-checks.js';
import type { LineTap, ResponseDecorator } from './hooks.js';

export type { RelayCounters, RelayOptions } from './relay-calls.js';

/**
 * One object owns a line's fate in both directions. It holds the calls (a
 * CallKeeper) rather than inheriting them, and the session reaches it only
 * through its public methods: lines in (fromClient, fromChild: the session's
 * line splitters feed them and never look at a line themselves; what else
 * must see raw lines is a LineTap, which the relay calls first), the endings
 * (clientEnded, answerPending, answerCrashed, closeInput) and what it learned
 * (counters, protocol).
 */
export class Relay {
  /** The calls, from accepted to their one final state: held here, never inherited, and reached by nothing outside the relay. */
  private readonly keeper: CallKeeper;
  private readonly calls: CallTable;
  /** The session's protocol era, learned from what passes, and its rules. */
  private readonly eras: EraGuard;
  private readonly gate: Gate | null;
  /** What the relay saw, for the session's summary (the same object for the whole session). */
  readonly counters: RelayCounters;
  /** Set when mcpguard accepts no more client input (on-invalid close, shutdown). */
  private inputClosed = false;
  /** Whether an id key is one of mcpguard's own requests to the client (made once, not per line). */
  private readonly ownsId = (key: string): boolean => this.gate?.ownsId(key) ?? false;

  constructor(
    private readonly options: RelayOptions,
    private readonly toClient: FrameWriter,
    private readonly toChild: ToChild,
    private readonly diag: Diagnostics,
    private readonly observers: readonly SessionObserver[],
    /** Asks the session to end; the first reason wins there. */
    private readonly requestEnd: (reason: string) => void,
    /** May return a replacement frame for a single response that ends a call (the stderr excerpt). */
    private readonly decorate: ResponseDecorator | null = null,
    /** Schema, policy and approval for tools/call (null: --validate-args off and no policy). */
    gate: ((io: GateIO) => Gate) | null = null,
    /** See each raw line first, in this order (the restart code's handshake watch and replay). */
    private readonly taps: readonly LineTap[] = [],
  ) {
    this.keeper = new CallKeeper(options, toClient, toChild, diag, observers, gate);
    this.calls = this.keeper.calls;
    this.eras = this.keeper.eras;
    this.gate = this.keeper.gate;
    this.counters = this.keeper.counters;
    this.checks = new ClientLineChecks({
      eras: this.eras,
      counters: this.counters,
      diag,
      notify: (r) => this.keeper.notify(r),
      gated: this.gate !== null,
      reject: (line, code, reason, id, frame, bytes, method, rule) => this.reject(line, code, reason, id, frame, bytes, method, rule),
    });
  }

  /** The era's rules and the methods' shapes for each client line. */
  private readonly checks: ClientLineChecks;

  // ---- what the session asks of the relay ----

  /** mcpguard takes no more client input (shutdown): a later line is answered, never forwarded. */
  closeInput(): void {
    this.inputClosed = true;
  }

  /** The protocol era and version spoken so far, as far as mcpguard can tell. */
  protocol(): { era: string; version: string | null; decidedBy: string | null } {
    const { era, version, decidedBy } = this.eras.tracker;
    return { era, version, decidedBy };
  }

  /** Whether the session speaks the modern era (no handshake to replay after a restart). */
  modern(): boolean {
    return this.eras.modern;
  }

  /** The ids of the calls in flight, for the stderr written while they run. */
  inFlightCallIds(): string[] {
    return this.calls.inFlightCallIds();
  }

  /** An id key in flight on either side, or one of mcpguard's own (see CallKeeper.idTaken). */
  idTaken(key: string): boolean {
    return this.keeper.idTaken(key);
  }

  /** The client closed its input (EOF); see CallKeeper.clientEnded. */
  clientEnded(): void {
    this.keeper.clientEnded();
  }

  /** Resolves when no call is owed an answer any more (streams excepted). */
  whenAnswered(): Promise<void> {
    return this.keeper.whenAnswered();
  }

  /** Every call still waiting gets its one answer: the child exited or the session is ending (see CallKeeper.answerPending). */
  answerPending(state: CallState, why: string, observed: Pick<Call, 'exitStatus' | 'streamEnd'>): void {
    this.keeper.answerPending(state, why, observed);
  }

  /** The crashed generation's calls get their one answer, never a retry (see CallKeeper.answerCrashed). */
  answerCrashed(waiting: (call: Call) => boolean, why: string, observed: Pick<Call, 'exitStatus' | 'streamEnd'>): void {
    this.keeper.answerCrashed(waiting, why, observed);
  }

  /** A new generation of the server runs: forget what only the last one knew. */
  serverRestarted(): void {
    this.keeper.serverRestarted();
  }

  /** A request waited --restart-wait for the next generation and was taken back: its one answer. */
  restartWaitExpired(call: Call, waitMs: number): void {
    this.keeper.restartWaitExpired(call, waitMs);
  }

  /**
   * A one-message line's items: the same one-slot array each time for each
   * direction, not an array per line. Emptied when the line is done, so no
   * frame outlives its line here; a line handled inside another (re-entered)
   * gets an array of its own.
   */
  private readonly clientOne: Message[] = [];
  private readonly childOne: Message[] = [];
  private clientSlotBusy = false;
  private childSlotBusy = false;

  // ---- client → child ----

  /** A line from the client: the taps see it, then the relay decides its fate (clientEvent). */
  fromClient(event: LineEvent): void {
    for (const tap of this.taps) tap.clientLine?.(event);
    if (this.clientSlotBusy) return this.clientEvent(event, null);
    this.clientSlotBusy = true;
    try {
      this.clientEvent(event, this.clientOne);
    } finally {
      this.clientSlotBusy = false;
      (this.clientOne as unknown[])[0] = undefined;
    }
  }

  private clientEvent(event: LineEvent, slot: Message[] | null): void {
    if (this.inputClosed) return this.refuseAfterClose(event);
    if (event.kind === 'oversize') {
      return this.reject(
        event.line,
        INVALID_REQUEST,
        `line of ${event.bytes} bytes exceeds --max-frame-bytes ${this.options.maxFrameBytes}`,
        peekId(event.head),
        null,
        event.bytes,
      );
    }
    if (event.kind === 'partial') {
      return this.reject(event.line, PARSE_ERROR, 'incomplete line at end of input (no newline)', peekId(event.bytes), event.bytes, event.bytes.length);
    }
    const message = classifyFrame(event.frame, this.classifyOptions());
    if (message.kind === 'invalid') {
      const id = message.id ?? (message.code === PARSE_ERROR ? peekId(event.frame) : null);
      return this.reject(event.line, message.code, message.reason, id, event.frame, event.frame.length - 1, message.method);
    }
    // An answer to a request of a server generation that is gone (--restart): nobody is left to take it.
    if (message.kind === 'response' && this.keeper.retiredChildRequests.delete(message.idKey))
      return this.diag.line(`dropped the client's answer to id ${JSON.stringify(message.id)}: the server that asked was restarted`);
    const items = message.kind === 'batch' ? message.items : one(slot, message);
    const problem = this.calls.lineProblem(items, this.ownsId);
    if (problem !== null) return this.reject(event.line, INVALID_REQUEST, problem.reason, problem.id, event.frame, event.frame.length - 1);
    const metas = this.checks.era(event.line, message.frame, items);
    if (metas === null) return;
    if (!this.checks.shapes(event.line, message.frame, items, metas)) return;
    if (!this.keeper.roomForCalls(event.line, message.frame, items)) return;
    this.counters.clientFrames++;
    this.forwardToChild(message.frame, items, metas);
  }

  private readonly classifying = { allowBatch: false };

  /** Batches pass only where the era has them (see EraTracker.batchesAllowed). */
  private classifyOptions(): { allowBatch: boolean } {
    this.classifying.allowBatch = this.eras.tracker.batchesAllowed(this.options.allowBatch);
    return this.classifying;
  }

  /** Input after the session closed is never forwarded; its requests are answered (CallKeeper.refuseClosed). */
  private refuseAfterClose(event: LineEvent): void {
    this.counters.ignoredClientBytes += event.kind === 'oversize' ? event.bytes : event.kind === 'line' ? event.frame.length : event.bytes.length;
    if (event.kind !== 'line') return;
    const message = classifyFrame(event.frame, this.options);
    this.keeper.refuseClosed(message.kind === 'batch' ? message.items : [message]);
  }

  private forwardToChild(frame: Buffer, items: readonly Message[], metas: readonly RequestMeta[]): void {
    if (this.gate !== null && items.length === 1) {
      const item = items[0]!;
      if (item.kind === 'request' && item.method === 'tools/call') return this.keeper.review(this.gate, item, metas[0]!);
      if (item.kind === 'response' && this.gate.clientAnswered(item.idKey, item.isError ? null : item.body, item.frame)) return;
      if (item.kind === 'request' && item.method === 'initialize') this.gate.clientInitialized(item);
    }
    const started: Call[] = [];
    const vetoed: Call[] = [];
    let forward = true;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (item.kind === 'request') {
        const call = this.keeper.startCall(item, metas[i]!);
        if (!this.keeper.recordAttempt(call)) vetoed.push(call);
        this.keeper.armDeadline(call);
        started.push(call);
      } else if (item.kind === 'response') {
        this.calls.childRequests.delete(item.idKey);
      } else if (item.method === 'notifications/cancelled' && items.length === 1) {
        forward = this.keeper.clientCancels(item);
      }
    }
    if (vetoed.length > 0) {
      // Write-ahead failed: nothing of this line may reach the child.
      for (const call of started) this.keeper.refuseUnrecorded(call);
      return;
    }
    if (!forward) return;
    this.toChild.write(
      frame,
      started.length === 0 ? undefined : this.keeper.delivery(started.length === 1 ? started[0]! : started),
      started.length === 1 ? started[0] : undefined,
    );
  }

  /**
   * Refuse a client line, answering it (id null when none can be paired).
   * A line that breaks only an era rule (`rule`) was well-formed: the stream
   * is still in step, so it never closes the session.
   */
  private reject(
    line: number,
    code: number,
    reason: string,
    readId: RequestId | null,
    frame: Buffer | null,
    bytes: number,
    method: string | null = null,
    rule: RuleKind | 'method_shape' | null = null,
  ): void {
    this.counters.rejectedClient++;
    if (rule === 'method_shape') this.counters.shapeRejections++;
    else if (rule !== null) this.counters.eraViolations[rule] = (this.counters.eraViolations[rule] ?? 0) + 1;
    // Answering with an id still in flight would pair this error with that request.
    const id = readId !== null && this.calls.inFlight.has(idKey(readId)) ? null : readId;
    this.toClient.write(errorResponse(id, code, `mcpguard rejected the frame: ${processMasker().text(reason)}`, rule === null ? undefined : { rule }));
    this.diag.line(
      `rejected client line ${line}: ${rule === null ? '' : `${rule}: `}${reason}${frame ? `: ${escapeBytes(frame.subarray(0, frame.length - (frame.at(-1) === 10 ? 1 : 0)))}` : ''}`,
    );
    // A request with a readable id still gets its one final record; it never had an attempt.
    if (id !== null) this.keeper.end(newCall(id, null, method, null), 'rejected', reason);
    this.keeper.notify(
      rule === null
        ? { direction: 'client', line, code, reason, frame, bytes }
        : { direction: 'client', line, code, reason, frame, bytes, rule, action: 'refused' },
    );
    if (this.options.onInvalid === 'close' && rule === null) {
      this.inputClosed = true;
      this.requestEnd('invalid_client_frame');
    }
  }

  // ---- child → client ----

  /** A line from the server: a tap may take it (the answer to mcpguard's own request); else the relay decides its fate (childEvent). */
  fromChild(event: LineEvent): void {
    for (const tap of this.taps) if (tap.serverLine?.(event) === true) return;
    if (this.childSlotBusy) return this.childEvent(event, null);
    this.childSlotBusy = true;
    try {
      this.childEvent(event, this.childOne);
    } finally {
      this.childSlotBusy = false;
      (this.childOne as unknown[])[0] = undefined;
    }
  }

  private childEvent(event: LineEvent, slot: Message[] | null): void {
    if (event.kind === 'oversize')
      return this.unreadable(
        event.line,
        `line of ${event.bytes} bytes exceeds --max-frame-bytes ${this.options.maxFrameBytes}`,
        event.head,
        event.bytes,
        peekAnswerId(event.head),
      );
    // Cut off by the end of the server's output: the session is ending, and its end answers the call with how the server went.
    if (event.kind === 'partial') return this.noise(event.line, 'incomplete line at end of output (no newline)', event.bytes, event.bytes.length);
    const message: Classified = classifyFrame(event.frame, this.classifyOptions());
    if (message.kind === 'invalid') {
      // A line that names a method is a request or notification: its id is not an answer's.
      const id = message.method !== null ? null : (message.id ?? (message.code === PARSE_ERROR ? peekAnswerId(event.frame) : null));
      return this.unreadable(event.line, message.reason, event.frame, event.frame.length - 1, id);
    }
    const items = message.kind === 'batch' ? message.items : one(slot, message);
    // The answer to one of mcpguard's own requests (its tools/list) is for mcpguard alone.
    if (message.kind === 'response' && this.gate?.tools.serverAnswered(message)) return;
    // Validate the whole line against the call table and the era before acting on any of it.
    for (const item of items) {
      const marker = item.kind === 'response' && this.calls.inFlight.has(item.idKey) ? reservedMarker(item) : null;
      if (marker !== null) return this.refuseImpersonation(event.line, event.frame, items, marker);
      if (item.kind === 'request' && this.gate?.ownsId(item.idKey)) {
        return this.noise(
          event.line,
          `server request id ${JSON.stringify(item.id)} is the id of a request mcpguard itself has open with the client`,
          event.frame,
          event.frame.length - 1,
        );
      }
      const unasked = item.kind === 'response' ? this.calls.unasked(item) : null;
      if (unasked !== null) return this.noise(event.line, `response to id ${unasked}`, event.frame, event.frame.length - 1);
      const stray = item.kind === 'notification' ? this.eras.strayNotification(item) : null;
      if (stray?.late === true) return this.diag.line(`dropped child line ${event.line}: ${stray.reason}`);
      if (stray !== null) return this.noise(event.line, stray.reason, event.frame, event.frame.length - 1);
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
    if (!this.keeper.roomForServerRequests(event.line, message.frame, items)) return;
    let late = 0;
    let frame = message.frame;
    // The calls this line answers, ended once the answer is out: the first in locals (a single response needs no array).
    let first: Call | null = null;
    let firstState: CallState = 'completed';
    let firstDetail: string | null = null;
    let more: Array<[Call, CallState, string | null]> | null = null;
    for (const item of items) {
      if (item.kind === 'request') this.calls.childRequests.set(item.idKey, { id: item.id, method: item.method });
      else if (item.kind === 'notification') {
        if (item.method === 'notifications/tools/list_changed') this.gate?.tools.forget();
        const listen = this.eras.endedListen(item);
        if (listen !== undefined) this.keeper.end(listen, 'stream_ended', 'closed by the server (notifications/cancelled)');
      } else {
        const call = this.calls.inFlight.get(item.idKey)!;
        this.calls.inFlight.delete(item.idKey);
        if (call.state !== null) {
          late++;
          continue;
        }
        const outcome = this.eras.outcome(event.line, call, item);
        if ('refused' in outcome) {
          // A single response (the era with these rules has no batches): the client gets mcpguard's error instead.
          this.refuseAnswer(call, outcome.refused.reason, outcome.refused.rule);
          this.counters.childFrames++;
          return;
        }
        const failedTool = toolError(call, item) && outcome.state === 'completed';
        const state = failedTool ? 'tool_error' : outcome.state;
        if (state === 'error' && call.method === 'server/discover' && memberId(item.frame, item.body, 'code') === METHOD_NOT_FOUND)
          this.counters.eraProbesDeclined++;
        const detail = failedTool ? TOOL_ERROR_DETAIL : outcome.detail;
        if (first === null) {
          first = call;
          firstState = state;
          firstDetail = detail;
        } else {
          (more ??= []).push([call, state, detail]);
        }
        if (!this.serverNamed) this.learnServerInfo(call, item);
        if (items.length !== 1) continue;
        const gated =
          this.gate === null || item.isError
            ? null
            : call.method === 'tools/list'
              ? this.gate.toolsListed(call, call.cursor, item.body, item.frame)
              : call.method === 'tools/call'
                ? this.gate.checkOutput(call, item)
                : call.method === 'initialize' || call.method === 'server/discover'
                  ? this.gate.serverAnnounced(call, item)
                  : null;
        const decorated = gated ?? this.decorate?.(call, item) ?? null;
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
    if (first !== null) this.keeper.end(first, firstState, firstDetail);
    if (more !== null) for (const [call, state, detail] of more) this.keeper.end(call, state, detail);
  }

  /** Whether the server has named itself yet (only the first name counts). */
  private serverNamed = false;

  private learnServerInfo(call: Call, response: Response): void {
    const info = serverInfoOf(call.method, response);
    if (info === null) return;
    this.serverNamed = true;
    for (const o of this.observers) o.serverInfo?.(info);
  }

  /**
   * A server answer the client must not get: the call it answers ends
   * `error`, and the client gets mcpguard's error saying why in its place.
   */
  private refuseAnswer(call: Call, reason: string, rule: string): void {
    // The reason may quote the server (a key, a member name): masked like every quote of it.
    const why = `mcpguard refused the server's answer: ${processMasker().text(reason)}`;
    this.keeper.end(call, 'error', why);
    this.toClient.write(errorResponse(call.requestId, INTERNAL_ERROR, why, { state: 'error', rule }));
  }

  /**
   * A server line that cannot be forwarded (too long, not valid JSON-RPC):
   * noise. If its first bytes name a call in flight as the one it
   * answers, that call gets its one answer now, mcpguard's error, instead of
   * waiting until the session ends for an answer that will never pass.
   */
  private unreadable(line: number, reason: string, bytes: Buffer, length: number, id: RequestId | null): void {
    const call = id === null ? undefined : this.calls.sentCall(idKey(id));
    if (call !== undefined) this.refuseAnswer(call, `its answer could not be forwarded: ${reason}`, 'unreadable_answer');
    this.noise(line, reason, bytes, length);
  }

  /**
   * A server line whose answer speaks in mcpguard's voice (mcp/reserved.ts):
   * not forwarded, not rewritten. Every call it answers that the server was
   * sent gets mcpguard's error naming the mark; what else the line held (a
   * batch's requests and notifications) goes with it.
   */
  private refuseImpersonation(line: number, frame: Buffer, items: readonly Message[], marker: string): void {
    const reason = `the server used mcpguard's reserved marker: ${marker}`;
    for (const item of items) {
      const call = item.kind === 'response' ? this.calls.sentCall(item.idKey) : undefined;
      if (call !== undefined) this.refuseAnswer(call, reason, 'reserved_marker');
    }
    this.counters.childFrames++;
    const shown = frame.subarray(0, frame.length - 1);
    this.diag.line(`diverted child line ${line}: reserved_marker: ${reason}: ${escapeBytes(shown)}`);
    this.keeper.notify({ direction: 'child', line, code: null, reason, frame: shown, bytes: shown.length, rule: 'reserved_marker', action: 'refused' });
  }

  private noise(line: number, reason: string, bytes: Buffer, length: number): void {
    this.counters.noiseLines++;
    this.counters.noiseBytes += length;
    const shown = bytes.length > 0 && bytes[bytes.length - 1] === 10 ? bytes.subarray(0, -1) : bytes;
    this.diag.line(`child stdout line ${line} is not JSON-RPC: ${escapeBytes(shown)} (${reason})`);
    this.keeper.notify({ direction: 'child', line, code: null, reason, frame: shown, bytes: length });
    if (this.options.onChildNoise === 'close') this.requestEnd('child_noise');
  }
}
