/**
 * The relay: every line from either side becomes one decision — forward its
 * original bytes, answer it with an error, or divert it as noise — and every
 * client request ends in exactly one state with exactly one answer. This file
 * is the relay's front: the lines in, what the session asks of it, and the
 * parts it holds; each direction is decided in its own file (from-client.ts,
 * from-child.ts), and the calls are kept by a CallKeeper (relay-calls.ts).
 */
import type { Call, CallState } from '../mcp/call.js';
import type { Diagnostics } from '../mask/diagnostics.js';
import type { LineEvent } from '../wire/framing.js';
import type { Message } from '../wire/jsonrpc.js';
import type { SessionObserver } from './observer.js';
import type { Gate, GateIO } from '../gate/gate.js';
import type { FrameWriter } from '../wire/writer.js';
import type { ToChild } from './link.js';
import { CallKeeper, type RelayCounters, type RelayOptions } from './relay-calls.js';
import type { CallTable } from './calls.js';
import type { CallEndings } from './endings.js';
import type { EraGuard } from './era-guard.js';
import type { LineTap, ResponseDecorator } from './hooks.js';
import { ClientLines } from './from-client.js';
import { ChildLines } from './from-child.js';

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
  /** What the relay saw, for the session's summary (the same object for the whole session). */
  readonly counters: RelayCounters;
  /** The answers owed when a side goes away, and the other endings of calls (the keeper's). */
  private readonly endings: CallEndings;
  /** The client's direction: each line of mcpguard's stdin. */
  private readonly client: ClientLines;
  /** The server's direction: each line of its stdout. */
  private readonly child: ChildLines;

  constructor(
    private readonly options: RelayOptions,
    toClient: FrameWriter,
    toChild: ToChild,
    diag: Diagnostics,
    observers: readonly SessionObserver[],
    /** Asks the session to end; the first reason wins there. */
    requestEnd: (reason: string) => void,
    /** May return a replacement frame for a single response that ends a call (the stderr excerpt). */
    decorate: ResponseDecorator | null = null,
    /** Schema, policy and approval for tools/call (null: --validate-args off and no policy). */
    gate: ((io: GateIO) => Gate) | null = null,
    /** See each raw line first, in this order (the restart code's handshake watch and replay). */
    private readonly taps: readonly LineTap[] = [],
  ) {
    this.keeper = new CallKeeper(options, toClient, toChild, diag, observers, gate);
    this.calls = this.keeper.calls;
    this.eras = this.keeper.eras;
    this.counters = this.keeper.counters;
    this.endings = this.keeper.endings;
    const classify = () => this.classifyOptions();
    this.client = new ClientLines(this.keeper, options, toClient, toChild, diag, requestEnd, classify);
    this.child = new ChildLines(this.keeper, options, toClient, diag, observers, requestEnd, decorate, classify);
  }

  // ---- the lines in, one direction each ----

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

  /** A line from the client: the taps see it, then the relay decides its fate (ClientLines.line). */
  fromClient(event: LineEvent): void {
    for (const tap of this.taps) tap.clientLine?.(event);
    if (this.clientSlotBusy) return this.client.line(event, null);
    this.clientSlotBusy = true;
    try {
      this.client.line(event, this.clientOne);
    } finally {
      this.clientSlotBusy = false;
      (this.clientOne as unknown[])[0] = undefined;
    }
  }

  /** A line from the server: a tap may take it (the answer to mcpguard's own request); else the relay decides its fate (ChildLines.line). */
  fromChild(event: LineEvent): void {
    for (const tap of this.taps) if (tap.serverLine?.(event) === true) return;
    if (this.childSlotBusy) return this.child.line(event, null);
    this.childSlotBusy = true;
    try {
      this.child.line(event, this.childOne);
    } finally {
      this.childSlotBusy = false;
      (this.childOne as unknown[])[0] = undefined;
    }
  }

  /** One options object, filled for each line: both directions classify with it. */
  private readonly classifying = { allowBatch: false };

  /** Batches pass only where the era has them (see EraTracker.batchesAllowed). */
  private classifyOptions(): { allowBatch: boolean } {
    this.classifying.allowBatch = this.eras.tracker.batchesAllowed(this.options.allowBatch);
    return this.classifying;
  }

  // ---- what the session asks of the relay ----

  /** mcpguard takes no more client input (shutdown): a later line is answered, never forwarded. */
  closeInput(): void {
    this.client.closeInput();
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

  /** The client closed its input (EOF); see CallEndings.clientEnded. */
  clientEnded(): void {
    this.endings.clientEnded();
  }

  /** Resolves when no call is owed an answer any more (streams excepted). */
  whenAnswered(): Promise<void> {
    return this.endings.whenAnswered();
  }

  /** Every call still waiting gets its one answer: the child exited or the session is ending (see CallEndings.answerPending). */
  answerPending(state: CallState, why: string, observed: Pick<Call, 'exitStatus' | 'streamEnd'>): void {
    this.endings.answerPending(state, why, observed);
  }

  /** The crashed generation's calls get their one answer, never a retry (see CallEndings.answerCrashed). */
  answerCrashed(waiting: (call: Call) => boolean, why: string, observed: Pick<Call, 'exitStatus' | 'streamEnd'>): void {
    this.endings.answerCrashed(waiting, why, observed);
  }

  /** The server died and is being restarted: what it listed no longer holds (see CallEndings.serverDown). */
  serverDown(): void {
    this.endings.serverDown();
  }

  /** A new generation of the server runs: forget what only the last one knew. */
  serverRestarted(): void {
    this.endings.serverRestarted();
  }

  /** A request waited --restart-wait for the next generation and was taken back: its one answer. */
  restartWaitExpired(call: Call, waitMs: number): void {
    this.endings.restartWaitExpired(call, waitMs);
  }
}
