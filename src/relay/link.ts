/**
 * The relay's way to the server across generations. While a generation is up
 * every frame goes straight to its writer; while the server is down (crashed,
 * being restarted, replaying the handshake) frames wait here in arrival
 * order, and are handed to the next generation's writer before anything
 * else. A waiting request can be withdrawn (a cancel, --call-timeout) like a
 * frame queued in a FrameWriter, and gives up after --restart-wait.
 */
import type { Delivery, FrameWriter } from '../wire/writer.js';
import { ENTRY_COST } from '../wire/writer.js';

/** What the relay needs of the way to the server (a FrameWriter, or a ChildLink). */
export type ToChild = Pick<FrameWriter, 'write' | 'withdraw'>;

interface Waiting {
  frame: Buffer;
  delivery: Delivery | undefined;
  tag: unknown;
  timer: NodeJS.Timeout | null;
}

export interface LinkOptions {
  /** How long a tagged frame (a request) may wait for the next generation, ms. */
  waitMs: number;
  /** Bytes waiting before the client's input is paused (like FrameWriter's queueLimit). */
  queueLimit: number;
  /** A request waited `waitMs` and was taken back: answer it. */
  expired: (tag: unknown) => void;
  onPressure: (full: boolean) => void;
}

export class ChildLink implements ToChild {
  private writer: FrameWriter | null = null;
  private readonly waiting: Waiting[] = [];
  private waitingBytes = 0;
  private pressed = false;

  constructor(private readonly options: LinkOptions) {}

  /** True while frames wait for a generation. */
  get down(): boolean {
    return this.writer === null;
  }

  write(frame: Buffer, delivery?: Delivery, tag?: unknown): void {
    if (this.writer !== null) return this.writer.write(frame, delivery, tag);
    this.waiting.push(this.entry(frame, delivery, tag));
    this.waitingBytes += frame.length;
    this.pressure();
  }

  /** A waiting frame; a request (tagged) gives up after waitMs. */
  private entry(frame: Buffer, delivery: Delivery | undefined, tag: unknown): Waiting {
    const entry: Waiting = { frame, delivery, tag, timer: null };
    if (tag !== undefined) {
      entry.timer = setTimeout(() => {
        if (this.take(tag)) this.options.expired(tag);
      }, this.options.waitMs);
      entry.timer.unref();
    }
    return entry;
  }

  withdraw(tag: unknown): boolean {
    return this.take(tag) || (this.writer?.withdraw(tag) ?? false);
  }

  /** Frames that wait for a generation (this includes any request the session must not answer as crashed). */
  isWaiting(tag: unknown): boolean {
    return this.waiting.some((entry) => entry.tag === tag);
  }

  /** The server is gone: hold every later frame. */
  goDown(): void {
    this.writer = null;
  }

  /**
   * Frames the dead generation's writer still held (never handed to its
   * stdin): they wait for the next generation ahead of everything that came
   * after them, as if they had arrived while it was down.
   */
  requeue(frames: ReadonlyArray<{ frame: Buffer; delivery: Delivery | undefined; tag: unknown }>): void {
    const entries = frames.map(({ frame, delivery, tag }) => this.entry(frame, delivery, tag));
    this.waiting.unshift(...entries);
    for (const e of entries) this.waitingBytes += e.frame.length;
    this.pressure();
  }

  /** A generation is ready: what waited goes to it first, in arrival order. */
  goUp(writer: FrameWriter): void {
    this.writer = writer;
    for (const entry of this.waiting.splice(0)) {
      if (entry.timer !== null) clearTimeout(entry.timer);
      writer.write(entry.frame, entry.delivery, entry.tag);
    }
    this.waitingBytes = 0;
    this.pressure();
  }

  /** No generation will come: whatever still waits (requests already answered by the caller) is never delivered. */
  close(error: Error): void {
    this.writer = null;
    for (const entry of this.waiting.splice(0)) {
      if (entry.timer !== null) clearTimeout(entry.timer);
      entry.delivery?.undelivered(error);
    }
    this.waitingBytes = 0;
    this.pressure();
  }

  private take(tag: unknown): boolean {
    const index = this.waiting.findIndex((entry) => entry.tag === tag);
    if (index === -1) return false;
    const [entry] = this.waiting.splice(index, 1);
    if (entry!.timer !== null) clearTimeout(entry!.timer);
    this.waitingBytes -= entry!.frame.length;
    this.pressure();
    return true;
  }

  private pressure(): void {
    const full = this.waitingBytes + this.waiting.length * ENTRY_COST > this.options.queueLimit;
    if (full === this.pressed) return;
    this.pressed = full;
    this.options.onPressure(full);
  }
}
