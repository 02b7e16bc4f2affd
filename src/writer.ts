/**
 * FrameWriter: one destination for whole frames, one write per frame, with
 * backpressure made visible. Frames are handed to the stream while it accepts
 * them; once it reports it is full, later frames wait in mcpguard's own queue,
 * where a queued request can still be withdrawn (that is what "cancelled
 * before dispatch" means). Only when the queue passes `queueLimit` bytes is
 * the producer told to pause its source: small frames such as a cancellation
 * keep flowing while one large frame is stuck, and memory stays bounded by
 * the stream's buffer + the limit + one frame. A closed or ended destination
 * turns every later write into a counted drop, never a throw.
 */
import type { Writable } from 'node:stream';

interface Queued {
  frame: Buffer;
  onDispatch: (() => void) | undefined;
  tag: unknown;
}

export interface FrameWriterOptions {
  /** Bytes queued inside mcpguard before the source is paused. */
  queueLimit: number;
  /** Called with true to pause the source, false to resume it. */
  onPressure: (full: boolean) => void;
  /** The destination failed or closed; called once. */
  onClosed: (error: Error) => void;
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

  constructor(private readonly stream: Writable, private readonly options: FrameWriterOptions) {
    stream.on('drain', () => this.flush());
    stream.on('error', (error: Error) => this.close(error));
    stream.on('close', () => this.close(new Error('destination closed')));
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
   * Write a frame (bytes ending in `\n`). `onDispatch` runs when the frame is
   * handed to the stream; `tag` lets `withdraw` find it while it is queued.
   */
  write(frame: Buffer, onDispatch?: () => void, tag?: unknown): void {
    if (this.closedError !== null || this.ending) {
      this.dropped++;
      return;
    }
    if (!this.waitingForDrain) {
      this.dispatch(frame, onDispatch);
      return;
    }
    this.queue.push({ frame, onDispatch, tag });
    this.queuedBytes += frame.length;
    if (this.queuedBytes > this.options.queueLimit && !this.pausedSource) {
      this.pausedSource = true;
      this.options.onPressure(true);
    }
  }

  /** Remove a queued frame that has not been handed to the stream; true if found. */
  withdraw(tag: unknown): boolean {
    const index = this.queue.findIndex((item) => item.tag === tag);
    if (index === -1) return false;
    this.queuedBytes -= this.queue[index]!.frame.length;
    this.queue.splice(index, 1);
    return true;
  }

  /** Finish the stream after every queued frame has been written; later writes are dropped. */
  end(): void {
    if (this.closedError !== null || this.ending) return;
    this.ending = true;
    if (!this.waitingForDrain) this.stream.end();
  }

  private dispatch(frame: Buffer, onDispatch: (() => void) | undefined): void {
    const accepted = this.stream.write(frame);
    onDispatch?.();
    if (!accepted) this.waitingForDrain = true;
  }

  private flush(): void {
    this.waitingForDrain = false;
    while (this.queue.length > 0 && !this.waitingForDrain && this.closedError === null) {
      const next = this.queue.shift()!;
      this.queuedBytes -= next.frame.length;
      this.dispatch(next.frame, next.onDispatch);
    }
    if (this.pausedSource && this.queuedBytes <= this.options.queueLimit) {
      this.pausedSource = false;
      this.options.onPressure(false);
    }
    if (!this.waitingForDrain && this.ending && this.closedError === null) this.stream.end();
  }

  private close(error: Error): void {
    if (this.closedError !== null) return;
    this.closedError = error;
    this.dropped += this.queue.length;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.options.onClosed(error);
  }
}
