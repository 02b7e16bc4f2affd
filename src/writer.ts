/**
 * FrameWriter: one destination for whole frames, one write per frame, with
 * backpressure made visible. Frames are handed to the stream while it accepts
 * them; once it reports it is full, later frames wait in mcpguard's own queue
 * (so a queued request can still be withdrawn, which is what "cancelled before
 * dispatch" means) and the producer is told to pause its source. A closed
 * destination turns every later write into a counted drop, never a throw.
 */
import type { Writable } from 'node:stream';

interface Queued {
  frame: Buffer;
  onDispatch: (() => void) | undefined;
  tag: unknown;
}

export class FrameWriter {
  private readonly queue: Queued[] = [];
  private waitingForDrain = false;
  private closedError: Error | null = null;
  private endWhenDrained = false;
  /** Frames dropped because the destination was closed. */
  dropped = 0;

  constructor(
    private readonly stream: Writable,
    private readonly onPressure: (full: boolean) => void,
    private readonly onClosed: (error: Error) => void,
  ) {
    stream.on('drain', () => this.flush());
    stream.on('error', (error: Error) => this.close(error));
    stream.on('close', () => this.close(new Error('destination closed')));
  }

  get closed(): boolean {
    return this.closedError !== null;
  }

  /** Frames waiting inside mcpguard. */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * Write a frame (bytes ending in `\n`). `onDispatch` runs when the frame is
   * handed to the stream; `tag` lets `withdraw` find it while it is queued.
   */
  write(frame: Buffer, onDispatch?: () => void, tag?: unknown): void {
    if (this.closedError !== null) {
      this.dropped++;
      return;
    }
    if (this.waitingForDrain) {
      this.queue.push({ frame, onDispatch, tag });
      return;
    }
    this.dispatch(frame, onDispatch);
  }

  /** Remove a queued frame that has not been handed to the stream; true if found. */
  withdraw(tag: unknown): boolean {
    const index = this.queue.findIndex((item) => item.tag === tag);
    if (index === -1) return false;
    this.queue.splice(index, 1);
    return true;
  }

  /** Finish the stream after every queued frame has been written. */
  end(): void {
    if (this.closedError !== null) return;
    if (this.waitingForDrain) this.endWhenDrained = true;
    else this.stream.end();
  }

  private dispatch(frame: Buffer, onDispatch: (() => void) | undefined): void {
    const accepted = this.stream.write(frame);
    onDispatch?.();
    if (!accepted && !this.waitingForDrain) {
      this.waitingForDrain = true;
      this.onPressure(true);
    }
  }

  private flush(): void {
    this.waitingForDrain = false;
    while (this.queue.length > 0 && !this.waitingForDrain && this.closedError === null) {
      const next = this.queue.shift()!;
      this.dispatch(next.frame, next.onDispatch);
    }
    if (this.waitingForDrain) return;
    if (this.endWhenDrained) this.stream.end();
    this.onPressure(false);
  }

  private close(error: Error): void {
    if (this.closedError !== null) return;
    this.closedError = error;
    this.dropped += this.queue.length;
    this.queue.length = 0;
    this.onClosed(error);
  }
}
