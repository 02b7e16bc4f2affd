/**
 * The client's direction of the relay: each line of mcpguard's stdin becomes
 * one decision. Checked in order (one JSON value, JSON-RPC, the call table,
 * the era's rules, each method's params, room for more calls), it is either
 * forwarded (a single tools/call through the gate first) or answered with
 * mcpguard's error, and then nothing of it reaches the server. The Relay
 * (relay.ts) hands each line here, after its taps.
 */
import { newCall, type Call } from '../mcp/call.js';
import { escapeBytes, type Diagnostics } from '../mask/diagnostics.js';
import { processMasker } from '../mask/mask.js';
import type { LineEvent } from '../wire/framing.js';
import { classifyFrame, errorResponse, idKey, peekId, INVALID_REQUEST, PARSE_ERROR, type Message, type RequestId } from '../wire/jsonrpc.js';
import type { RequestMeta, RuleKind } from '../mcp/era.js';
import type { Gate } from '../gate/gate.js';
import type { FrameWriter } from '../wire/writer.js';
import type { ToChild } from './link.js';
import type { CallKeeper, RelayCounters, RelayOptions } from './relay-calls.js';
import type { CallTable } from './calls.js';
import type { EraGuard } from './era-guard.js';
import { ClientLineChecks, one } from './client-checks.js';

/** The client's direction: one line of mcpguard's stdin at a time, each forwarded or answered (ClientLines.line). */
export class ClientLines {
  private readonly calls: CallTable;
  private readonly eras: EraGuard;
  private readonly gate: Gate | null;
  private readonly counters: RelayCounters;
  /** The era's rules and the methods' shapes for each client line. */
  private readonly checks: ClientLineChecks;
  /** Set when mcpguard accepts no more client input (on-invalid close, shutdown). */
  private inputClosed = false;
  /** Whether an id key is one of mcpguard's own requests to the client (made once, not per line). */
  private readonly ownsId = (key: string): boolean => this.gate?.ownsId(key) ?? false;

  constructor(
    private readonly keeper: CallKeeper,
    private readonly options: RelayOptions,
    private readonly toClient: FrameWriter,
    private readonly toChild: ToChild,
    private readonly diag: Diagnostics,
    /** Asks the session to end; the first reason wins there. */
    private readonly requestEnd: (reason: string) => void,
    /** How a line is classified now (batches pass only where the era has them): the relay's, for both directions. */
    private readonly classifyOptions: () => { allowBatch: boolean },
  ) {
    this.calls = keeper.calls;
    this.eras = keeper.eras;
    this.gate = keeper.gate;
    this.counters = keeper.counters;
    this.checks = new ClientLineChecks({
      eras: this.eras,
      counters: this.counters,
      diag,
      notify: (r) => this.keeper.notify(r),
      gated: this.gate !== null,
      reject: (line, code, reason, id, frame, bytes, method, rule) => this.reject(line, code, reason, id, frame, bytes, method, rule),
    });
  }

  /** mcpguard takes no more client input (shutdown): a later line is answered, never forwarded. */
  closeInput(): void {
    this.inputClosed = true;
  }

  /** One line of the client's input; `slot` is the relay's one-slot array for a single message (null when re-entered). */
  line(event: LineEvent, slot: Message[] | null): void {
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
    if (message.kind === 'response' && this.keeper.endings.retiredChildRequests.delete(message.idKey))
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

  /** Input after the session closed is never forwarded; its requests are answered (CallEndings.refuseClosed). */
  private refuseAfterClose(event: LineEvent): void {
    this.counters.ignoredClientBytes += event.kind === 'oversize' ? event.bytes : event.kind === 'line' ? event.frame.length : event.bytes.length;
    if (event.kind !== 'line') return;
    const message = classifyFrame(event.frame, this.options);
    this.keeper.endings.refuseClosed(message.kind === 'batch' ? message.items : [message]);
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
        forward = this.keeper.endings.clientCancels(item);
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
}
