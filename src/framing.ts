/**
 * Newline framing for one byte stream. A line is everything up to a `\n` byte
 * (split on `\n` only; a `\r` before it stays part of the line and is JSON
 * whitespace). Lines longer than the cap are never buffered past the cap: the
 * splitter switches to counting and reports the overflow as a value.
 *
 * Chunks are kept in a list with a running length and only the newest chunk is
 * searched for `\n`, so a long line costs one copy, not one concat per chunk.
 * Because nothing is decoded here, a UTF-8 character split across chunks is
 * simply bytes in two chunks.
 */

/** Bytes of an oversize line kept for diagnostics. */
export const OVERSIZE_HEAD_BYTES = 256;

/** Joined frames smaller than this come from Node's allocator as before (it reuses small memory well). */
export const POOLED_MIN_BYTES = 64 * 1024;
/** What a JoinPool keeps between frames at most, in all; a larger frame's buffer is never kept. */
export const POOL_KEEP_BYTES = 4 * 1024 * 1024;
const POOL_GRAIN = 64 * 1024;

/**
 * Buffers for the one copy that joins a frame spread over several reads.
 * A large buffer fresh from the allocator is fresh memory: writing 1 MiB into
 * it takes 256 page faults, which measured at ~450 µs against ~40 µs for the
 * copy itself in 12–64% of large frames. A buffer comes back (`release`) once
 * the frame's write to its destination has completed, and is handed out again
 * for the next large frame. The pool keeps at most POOL_KEEP_BYTES: one 16 MiB
 * frame's buffer is dropped after use, never kept for the life of the session.
 *
 * Only frames the pool handed out are taken back (by identity), and only by
 * the writer that wrote them: a frame kept elsewhere after its write (none is
 * today: records and checks decode what they need at once) must not be
 * released.
 */
export class JoinPool {
  private readonly free: Buffer[] = [];
  private freeBytes = 0;
  private readonly lent = new WeakSet<Buffer>();

  constructor(private readonly keepBytes = POOL_KEEP_BYTES) {}

  /** A buffer of exactly `size` bytes, pooled when large. */
  take(size: number): Buffer {
    if (size < POOLED_MIN_BYTES) return Buffer.allocUnsafe(size);
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const capacity = this.free[i]!.length;
      if (capacity >= size && (best === -1 || capacity < this.free[best]!.length)) best = i;
    }
    let backing: Buffer;
    if (best === -1) {
      // A little room over the size, so that frames of about the same size share buffers.
      backing = Buffer.allocUnsafeSlow(Math.ceil((size + (size >> 3)) / POOL_GRAIN) * POOL_GRAIN);
    } else {
      backing = this.free[best]!;
      this.free.splice(best, 1);
      this.freeBytes -= backing.length;
    }
    const frame = backing.subarray(0, size);
    this.lent.add(frame);
    return frame;
  }

  /** True if `frame` is one this pool handed out and has not had back. */
  owns(frame: Buffer): boolean {
    return this.lent.has(frame);
  }

  /** Take back a frame whose write has completed; nothing may read it afterwards. */
  release(frame: Buffer): void {
    if (!this.lent.delete(frame)) return;
    const backing = Buffer.from(frame.buffer, 0, frame.buffer.byteLength);
    if (this.freeBytes + backing.length > this.keepBytes) return;
    this.free.push(backing);
    this.freeBytes += backing.length;
  }

  /** Bytes kept for reuse (for tests and the bench). */
  get keptBytes(): number {
    return this.freeBytes;
  }
}

export type LineEvent =
  /** `frame` is the line's bytes followed by its `\n`. */
  | { kind: 'line'; line: number; frame: Buffer }
  /** A line longer than the cap; `bytes` excludes the `\n` (or is the count at EOF). */
  | { kind: 'oversize'; line: number; bytes: number; head: Buffer; atEof: boolean }
  /** Bytes after the last `\n` when the stream ended. */
  | { kind: 'partial'; line: number; bytes: Buffer };

export class LineSplitter {
  private readonly maxBytes: number;
  private readonly onEvent: (event: LineEvent) => void;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Non-null while discarding an oversize line: room for its first bytes, filled up to `headBytes`. */
  private oversizeHead: Buffer | null = null;
  private headBytes = 0;
  private lineNo = 0;

  /** Bytes of a chunk left unsplit because the gate closed, or null. */
  private deferred: Buffer | null = null;

  /**
   * `gate`, when given, is read after every line: while `held` is true the
   * rest of the chunk waits (see `resume`), so a consumer that pauses its
   * source mid-chunk is not handed the thousands of lines one read can hold.
   * `joins`, when given, provides the buffers of joined frames (the writer
   * that writes them gives them back).
   */
  constructor(maxBytes: number, onEvent: (event: LineEvent) => void, private readonly gate: { held: boolean } | null = null, private readonly joins: JoinPool | null = null) {
    this.maxBytes = maxBytes;
    this.onEvent = onEvent;
  }

  /** Split what the gate held back; false if the gate closed again before all of it was split. */
  resume(): boolean {
    const rest = this.deferred;
    this.deferred = null;
    if (rest !== null) this.push(rest);
    return this.deferred === null;
  }

  /** Lines seen so far, complete or not. */
  get lines(): number {
    return this.lineNo;
  }

  push(chunk: Buffer): void {
    if (this.deferred !== null) {
      // Bytes that arrive while earlier ones wait keep their order.
      this.deferred = Buffer.concat([this.deferred, chunk]);
      return;
    }
    this.split(chunk, this.gate);
  }

  private split(chunk: Buffer, gate: { held: boolean } | null): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(10, start);
      if (nl === -1) {
        this.hold(chunk, start, chunk.length);
        return;
      }
      const lineBytes = this.pendingBytes + (nl - start);
      this.lineNo++;
      if (this.oversizeHead !== null || lineBytes > this.maxBytes) {
        if (this.oversizeHead === null) this.startOversize(chunk, start, nl);
        else this.fillHead(chunk, start, nl);
        const head = this.oversizeHead!.subarray(0, this.headBytes);
        this.reset();
        this.onEvent({ kind: 'oversize', line: this.lineNo, bytes: lineBytes, head, atEof: false });
      } else if (this.pending.length === 0) {
        // The whole line lies in this chunk: hand out a view, no copy.
        this.onEvent({ kind: 'line', line: this.lineNo, frame: chunk.subarray(start, nl + 1) });
      } else {
        const frame = this.joins === null ? Buffer.allocUnsafe(lineBytes + 1) : this.joins.take(lineBytes + 1);
        let at = 0;
        for (const piece of this.pending) at += piece.copy(frame, at);
        chunk.copy(frame, at, start, nl + 1);
        this.reset();
        this.onEvent({ kind: 'line', line: this.lineNo, frame });
      }
      start = nl + 1;
      if (gate !== null && gate.held && start < chunk.length) {
        this.deferred = chunk.subarray(start);
        return;
      }
    }
  }

  /** Signal end of stream: reports what remains after the last newline (bytes the gate held back are split first). */
  end(): void {
    if (this.deferred !== null) {
      const rest = this.deferred;
      this.deferred = null;
      this.split(rest, null);
    }
    if (this.oversizeHead !== null) {
      const head = this.oversizeHead.subarray(0, this.headBytes);
      const bytes = this.pendingBytes;
      this.reset();
      this.onEvent({ kind: 'oversize', line: ++this.lineNo, bytes, head, atEof: true });
      return;
    }
    if (this.pendingBytes === 0) return;
    const bytes = this.pending.length === 1 ? this.pending[0]! : Buffer.concat(this.pending, this.pendingBytes);
    this.reset();
    this.onEvent({ kind: 'partial', line: ++this.lineNo, bytes });
  }

  private hold(chunk: Buffer, start: number, end: number): void {
    const size = end - start;
    if (this.oversizeHead !== null) {
      this.fillHead(chunk, start, end);
      this.pendingBytes += size; // counting only
      return;
    }
    if (this.pendingBytes + size > this.maxBytes) {
      this.startOversize(chunk, start, end);
      this.pendingBytes += size;
      return;
    }
    this.pending.push(chunk.subarray(start, end));
    this.pendingBytes += size;
  }

  /** Enter discard mode: keep the line's first bytes (pending pieces, then this chunk), drop the rest. */
  private startOversize(chunk: Buffer, start: number, end: number): void {
    this.oversizeHead = Buffer.allocUnsafe(OVERSIZE_HEAD_BYTES);
    this.headBytes = 0;
    for (const piece of this.pending) this.fillHead(piece, 0, piece.length);
    this.pending = [];
    this.fillHead(chunk, start, end);
  }

  /** Copy bytes into the head until it is full, whatever the chunking. */
  private fillHead(chunk: Buffer, start: number, end: number): void {
    const room = OVERSIZE_HEAD_BYTES - this.headBytes;
    if (room > 0) this.headBytes += chunk.copy(this.oversizeHead!, this.headBytes, start, Math.min(end, start + room));
  }

  private reset(): void {
    this.pending = [];
    this.pendingBytes = 0;
    this.oversizeHead = null;
    this.headBytes = 0;
  }
}
