/**
 * The human mirror: (redacted) child stderr copied to mcpguard's own stderr,
 * within a byte budget, never blocking the drain. Two things stop a chunk:
 *
 * - the budget: once `limitBytes` are mirrored, everything after is counted,
 *   not written. The last mirrored chunk is cut after its last newline that
 *   fits (exactly at the limit if it has none), so the summary line that the
 *   session prints at exit starts on a line of its own in the common case.
 * - the destination: when `write` returns false, the destination did not take
 *   the bytes or is backed up. Nothing is queued here: chunks are dropped and
 *   counted until `resume()` (wire it to the destination's 'drain'). A chunk
 *   whose write returned false counts as dropped, so the summary may overstate
 *   what was lost by that one chunk, never understate it.
 *
 * A write that throws (EPIPE, EBADF) closes the mirror for good.
 */

/** Default mirror budget: a screenful of a flood is plenty; the rest is in the record's counts. */
export const DEFAULT_PASSTHROUGH_BYTES = 1024 * 1024;

export interface PassthroughOptions {
  /** Most bytes mirrored over the session (default 1 MiB). */
  limitBytes?: number;
  /** Write to the destination; false if it did not take the bytes or is backed up. */
  write: (bytes: Buffer) => boolean;
  /**
   * Called once, right after the budget is first spent (after the last bytes
   * that fit were written), so a person watching learns of the cap at that
   * moment and not only from the summary at exit.
   */
  onCapReached?: (limitBytes: number) => void;
}

export class Passthrough {
  readonly limitBytes: number;
  /** Bytes handed to the destination and taken. */
  mirrored = 0;
  /** Bytes not mirrored because the budget was spent (only mirrored bytes spend it). */
  overBudget = 0;
  /** Bytes not mirrored because the destination was backed up or closed. */
  dropped = 0;
  readonly #write: (bytes: Buffer) => boolean;
  readonly #onCapReached: ((limitBytes: number) => void) | undefined;
  #exhausted = false;
  #backedUp = false;
  #closed = false;

  constructor(options: PassthroughOptions) {
    const limit = options.limitBytes ?? DEFAULT_PASSTHROUGH_BYTES;
    if (!Number.isSafeInteger(limit) || limit < 0) throw new RangeError(`passthrough limit must be a whole number of bytes, got ${limit}`);
    this.limitBytes = limit;
    this.#write = options.write;
    this.#onCapReached = options.onCapReached;
  }

  /** Mirror a chunk, or count it. Never throws, never queues. */
  write(chunk: Buffer): void {
    if (chunk.length === 0) return;
    if (this.#exhausted) {
      this.overBudget += chunk.length;
      return;
    }
    let bytes = chunk;
    const room = this.limitBytes - this.mirrored;
    if (chunk.length > room) {
      this.#exhausted = true;
      const nl = room > 0 ? chunk.lastIndexOf(0x0a, room - 1) : -1;
      bytes = chunk.subarray(0, nl === -1 ? Math.max(0, room) : nl + 1);
      this.overBudget += chunk.length - bytes.length;
      if (bytes.length > 0) this.#mirror(bytes);
      this.#capReached();
      return;
    }
    this.#mirror(bytes);
  }

  #capReached(): void {
    try {
      this.#onCapReached?.(this.limitBytes);
    } catch {
      // The notice is a courtesy: it never stops the drain.
    }
  }

  #mirror(bytes: Buffer): void {
    if (this.#backedUp || this.#closed) {
      this.dropped += bytes.length;
      return;
    }
    let taken: boolean;
    try {
      taken = this.#write(bytes);
    } catch {
      this.#closed = true;
      taken = false;
    }
    if (taken) {
      this.mirrored += bytes.length;
    } else {
      this.#backedUp = true;
      this.dropped += bytes.length;
    }
  }

  /** The destination can take bytes again (its 'drain' event). */
  resume(): void {
    this.#backedUp = false;
  }

  /** The destination is gone (its 'error' or 'close' event): count everything from now on. */
  close(): void {
    this.#closed = true;
  }

  /** Bytes not mirrored, for whatever reason. */
  get suppressed(): number {
    return this.overBudget + this.dropped;
  }

  /** The line to print at exit, or null if every byte was mirrored. */
  summary(): string | null {
    if (this.suppressed === 0) return null;
    const detail = this.dropped > 0 ? `; ${this.dropped} dropped while the destination was backed up or closed` : '';
    return `mcpguard: suppressed ${this.suppressed} bytes of child stderr (passthrough budget ${this.limitBytes} bytes${detail})`;
  }
}
