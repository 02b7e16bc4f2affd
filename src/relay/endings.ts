/**
 * How calls end other than by the server's answer, and the answers owed when
 * a side goes away: the client's cancel, the client's end of input (its
 * requests are still decided and answered; a card it can no longer answer is
 * denied), a line read after the session closed, the server's exit (every
 * call still waiting gets its one answer), and a restarted server (the calls
 * it had are answered, never retried). The CallKeeper (relay-calls.ts) holds
 * one CallEndings; the relay reaches it through the keeper.
 */
import { newCall, type Call, type CallState } from '../mcp/call.js';
import type { Diagnostics } from '../mask/diagnostics.js';
import { errorResponse, idKey, memberId, CONNECTION_CLOSED, type Classified, type Message } from '../wire/jsonrpc.js';
import { STREAM_METHODS } from '../mcp/era.js';
import type { Gate } from '../gate/gate.js';
import { refusal } from '../gate/refusal.js';
import type { FrameWriter } from '../wire/writer.js';
import { MAX_SERVER_REQUESTS, type CallTable } from './calls.js';
import type { EraGuard } from './era-guard.js';
import type { CallKeeper, Refused } from './relay-calls.js';

/** The endings of calls other than the server's answer, each through CallKeeper.end: one final state, one answer. */
export class CallEndings {
  private readonly calls: CallTable;
  private readonly eras: EraGuard;
  private readonly gate: Gate | null;
  private readonly toClient: FrameWriter;
  private readonly diag: Diagnostics;

  constructor(private readonly keeper: CallKeeper) {
    this.calls = keeper.calls;
    this.eras = keeper.eras;
    this.gate = keeper.gate;
    this.toClient = keeper.toClient;
    this.diag = keeper.diag;
  }

  /** A call ended (CallKeeper.end): once none read before the client's EOF is owed an answer, whenAnswered resolves. */
  callEnded(): void {
    if (this.onAnswered !== null && this.owed() === 0) {
      const resolve = this.onAnswered;
      this.onAnswered = null;
      resolve();
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
    if (this.keeper.withdraw(call)) {
      this.keeper.end(call, 'cancelled_before_dispatch', 'cancelled by the client before it reached the server');
      return false;
    }
    // Closing a stream is how a listen ends, not a failed call.
    if (STREAM_METHODS.has(call.method!)) this.keeper.end(call, 'stream_ended', 'closed by the client (notifications/cancelled)', true);
    else this.keeper.end(call, 'cancelled_after_dispatch', 'cancelled by the client', true);
    return true;
  }

  /** The client closed its input (EOF). */
  clientClosed = false;

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
      this.keeper.withdraw(call);
      const card = call.decision.card;
      if (card !== null) {
        card.answered_at = new Date().toISOString();
        card.answer = 'client_closed';
      }
      this.keeper.settleNow(
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
      this.keeper.end(newCall(item.id, null, item.method, null), 'rejected', 'arrived after the session closed');
      this.toClient.write(errorResponse(item.id, CONNECTION_CLOSED, 'mcpguard: the session is closed; request not forwarded', { state: 'rejected' }));
    }
  }

  /**
   * Answer every call still waiting (and drop queued ones): the child exited
   * or the session is ending. `state` says what is known about calls the child
   * had already received.
   */
  answerPending(state: CallState, why: string, observed: Pick<Call, 'exitStatus' | 'streamEnd'>): void {
    for (const call of [...this.calls.pending()]) {
      const dispatched = !this.keeper.withdraw(call);
      call.exitStatus = observed.exitStatus;
      call.streamEnd = observed.streamEnd;
      this.keeper.end(call, !dispatched ? 'cancelled_before_dispatch' : STREAM_METHODS.has(call.method!) ? 'stream_ended' : state, why);
      this.keeper.answer(call, CONNECTION_CLOSED, `mcpguard: ${why}`);
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
      this.keeper.end(call, state, why);
      this.keeper.answer(call, CONNECTION_CLOSED, `mcpguard: ${why}`);
    }
  }

  /** Ids of the dead generation's requests to the client: the client's late answers to them are dropped. */
  readonly retiredChildRequests = new Set<string>();

  /**
   * The server died and a restart is on its way: its tools are unknown from
   * now on, not from when the next generation runs. Closing the dead one can
   * take a while (--grace, --drain-ms), and a card answered meanwhile must be
   * compared with the definition the next generation lists (its call would be
   * queued for that generation), never with the dead one's.
   */
  serverDown(): void {
    this.gate?.tools.serverDown();
  }

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
    this.keeper.end(call, 'cancelled_before_dispatch', `the server was being restarted and was not back within ${waitMs} ms (--restart-wait)`);
    this.keeper.answer(
      call,
      CONNECTION_CLOSED,
      `mcpguard: the server is restarting and was not back within ${waitMs} ms (--restart-wait); request not forwarded`,
    );
  }
}
