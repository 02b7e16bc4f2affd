/**
 * FrameWriter: one destination for whole frames, one write per frame, with
 * backpressure made visible. Frames are handed to the stream while it accepts
 * them; once it reports it is full, later frames wait in mcpguard's own queue,
 * where a queued request can still be withdrawn (that is what "cancelled
 * before dispatch" means). Only when the queue passes `queueLimit` bytes is
 * the producer told to pause its source: small frames such as a cancellation
 * keep flowing while one large frame is stuck, and memory stays bounded by
 * the stream's buffer + the limit + one frame. Each queued frame also counts
 * ENTRY_COST toward the limit, so a flood of tiny frames (mcpguard's own
 * error answers to a client that stopped reading) is bounded by count too.
 * A closed or ended destination turns every later write into a counted drop,
 * never a throw, and a frame that carries a Delivery is told it was not
 * delivered: queued when the destination closed, handed to a destination
 * that failed before taking it (EPIPE), or written after the close.
 */
import type { Writable } from 'node:stream';
import type { JoinPool } from './framing.js';

/** What a frame's sender learns about it: handed to the stream, or never delivered. */
export interface Delivery {
  /** Handed to the stream (in order; before any `undelivered` for the same frame). */
  dispatched(): void;
  /** The destination will never take this frame; called at most once. */
  undelivered(error: Error): void;
}

/** What a queued frame counts toward the limit besides its bytes: the queue entry and the Buffer object. */
export const ENTRY_COST = 16 * 1024;

/**
 * Why a frame was refused instead of queued: the destination took nothing for
 * the stall time while the queue was full (see FrameWriterOptions.stall). Its
 * message is the whole reason, said to whoever sent the frame.
 */
export class QueueRefusal extends Error {}

interface Queued {
  frame: Buffer;
  delivery: Delivery | undefined;
  tag: unknown;
}

export interface FrameWriterOptions {
  /** Bytes queued inside mcpguard before the source is paused. */
  queueLimit: number;
  /** Called with true to pause the source, false to resume it. */
  onPressure: (full: boolean) => void;
  /** The destination failed or closed; called once. `expected` when it closed after `end()` without an error. */
  onClosed: (error: Error, expected: boolean) => void;
  /** Where frames joined from pooled buffers go back once their write has completed. */
  joins?: JoinPool;
  /**
   * When the destination closes, keep the frames still queued (never handed
   * to it) for `takeQueued` instead of telling them they were not delivered:
   * a restarted server can take them instead (--restart).
   */
  keepQueuedOnClose?: boolean;
  /**
   * A destination that takes nothing for `ms` while the queue is full has
   * stopped reading: the source is resumed, and while the queue stays full
   * each further frame is refused (its Delivery hears `error`) instead of
   * queued. Pausing the source for ever would hide everything it sends after
   * (its cancellations, its end of input) behind bytes mcpguard cannot take.
   * The first byte the destination takes again brings the pause back.
   */
  stall?: { ms: number; error: QueueRefusal; onStall?: () => void };
}

export class FrameWriter {
  private readonly queue: Queued[] = [];
  private queuedBytes = 0;
  private waitingForDrain = false;
  private pausedSource = false;
  private closedError: Error | null = null;
  private ending = false;
  /** Frames dropped because the destination was closed or ended. */
  dropped = 0;
  /** Frames refused because the destination had stopped reading with the queue full (see `stall`). */
  refused = 0;
  /** The destination stalled with the queue full: frames are refused, the source is not paused. */
  private refusing = false;
  private stallTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly stream: Writable,
    private readonly options: FrameWriterOptions,
  ) {
    stream.on('drain', () => this.flush());
    stream.on('error', (error: Error) => this.close(error, false));
    stream.on('close', () => this.close(new Error('destination closed'), this.ending));
  }

  get closed(): boolean {
    return this.closedError !== null;
  }

  /** Bytes accepted but not yet taken by the destination (mcpguard's queue + the stream's buffer). */
  get pendingBytes(): number {
    return this.closedError !== null ? 0 : this.queuedBytes + this.stream.writableLength;
  }

  /**
   * Wait until everything accepted has been taken, as long as the destination
   * keeps taking bytes: give up after `stallMs` without progress. Resolves to
   * the bytes left behind (0 when all went out).
   */
  async drained(stallMs: number, pollMs = 25): Promise<number> {
    let last = this.pendingBytes;
    let lastProgress = Date.now();
    while (last > 0 && Date.now() - lastProgress < stallMs) {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      const now = this.pendingBytes;
      if (now < last) lastProgress = Date.now();
      last = now;
    }
    return last;
  }

  /**
   * Write a frame (bytes ending in `\n`). `delivery` hears when the frame is
   * handed to the stream, or that it never will be; `tag` lets `withdraw`
   * find it while it is queued.
   */
  write(frame: Buffer, delivery?: Delivery, tag?: unknown): void {
    if (this.closedError !== null || this.ending) {
      this.dropped++;
      delivery?.undelivered(this.closedError ?? new Error('destination ended'));
      return;
    }
    if (!this.waitingForDrain) {
      this.dispatch(frame, delivery);
      return;
    }
    if (this.refusing && this.overLimit()) {
      this.refused++;
      delivery?.undelivered(this.options.stall!.error);
      return;
    }
    this.queue.push({ frame, delivery, tag });
    this.queuedBytes += frame.length;
    if (!this.pausedSource && !this.refusing && this.overLimit()) this.pauseSource();
  }

  private pauseSource(): void {
    if (!this.pausedSource) {
      this.pausedSource = true;
      this.options.onPressure(true);
    }
    const stall = this.options.stall;
    if (stall === undefined) return;
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    // Re-armed by every drain (flush), and by any frame the stream finished writing meanwhile:
    // it acts only after `ms` in which the destination took nothing.
    const pending = this.stream.writableLength;
    this.stallTimer = setTimeout(() => {
      this.stallTimer = null;
      if (!this.pausedSource || this.closedError !== null) return;
      if (this.stream.writableLength < pending) return this.pauseSource();
      this.refusing = true;
      this.pausedSource = false;
      stall.onStall?.();
      this.options.onPressure(false);
    }, stall.ms);
    this.stallTimer.unref();
  }

  private overLimit(): boolean {
    return this.queuedBytes + this.queue.length * ENTRY_COST > this.options.queueLimit;
  }

  /** Remove a queued frame that has not been handed to the stream; true if found. */
  withdraw(tag: unknown): boolean {
    const index = this.queue.findIndex((item) => item.tag === tag);
    if (index === -1) return false;
    this.queuedBytes -= this.queue[index]!.frame.length;
    this.queue.splice(index, 1);
    return true;
  }

  /** Take every frame still queued (none was handed to the stream), in order; they are the caller's now. */
  takeQueued(): Array<{ frame: Buffer; delivery: Delivery | undefined; tag: unknown }> {
    this.queuedBytes = 0;
    return this.queue.splice(0);
  }

  /** Finish the stream after every queued frame has been written; later writes are dropped. */
  end(): void {
    if (this.closedError !== null || this.ending) return;
    this.ending = true;
    if (!this.waitingForDrain) this.stream.end();
  }

  private dispatch(frame: Buffer, delivery: Delivery | undefined): void {
    // A write's callback always runs later (next tick at the earliest), so `dispatched` comes first.
    const joins = this.options.joins;
    const accepted = joins?.owns(frame)
      ? this.stream.write(frame, (error) => (error ? delivery?.undelivered(error) : joins.release(frame)))
      : delivery === undefined
        ? this.stream.write(frame)
        : this.stream.write(frame, (error) => error && delivery.undelivered(error));
    delivery?.dispatched();
    if (!accepted) this.waitingForDrain = true;
  }

  private flush(): void {
    this.waitingForDrain = false;
    while (this.queue.length > 0 && !this.waitingForDrain && this.closedError === null) {
      const next = this.queue.shift()!;
      this.queuedBytes -= next.frame.length;
      this.dispatch(next.frame, next.delivery);
    }
    // The destination took bytes: it reads again, so the source waits for it again (a fresh stall clock).
    this.refusing = false;
    if (this.overLimit() && this.closedError === null) this.pauseSource();
    else if (this.pausedSource) {
      this.pausedSource = false;
      this.clearStall();
      this.options.onPressure(false);
    }
    if (!this.waitingForDrain && this.ending && this.closedError === null) this.stream.end();
  }

  private clearStall(): void {
    if (this.stallTimer !== null) clearTimeout(this.stallTimer);
    this.stallTimer = null;
  }

  private close(error: Error, expected: boolean): void {
    if (this.closedError !== null) return;
    this.closedError = error;
    this.clearStall();
    if (this.options.keepQueuedOnClose === true) return this.options.onClosed(error, expected);
    this.dropped += this.queue.length;
    const queued = this.queue.splice(0);
    this.queuedBytes = 0;
    for (const item of queued) item.delivery?.undelivered(error);
    this.options.onClosed(error, expected);
  }
}
