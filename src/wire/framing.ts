/**
 * Newline framing for one byte stream. A line is everything up to a `\n` byte
 * (split on `\n` only; a `\r` before it stays part of the line and is JSON
 * whitespace). Lines longer than the cap are never buffered past the cap: the
 * splitter switches to counting and reports the overflow as a value.
 *
 * Chunks are kept in a list with a running length and only the newest chunk is
 * searched for `\n`, so a long line costs one copy, not one concat per chunk.
 * A line that reaches ASSEMBLE_MIN_BYTES is instead copied into one buffer
 * read by read as it arrives (the same one copy, done while the rest is still
 * on its way), and an ArrivalWatch may look at it meanwhile. Because nothing
 * is decoded here, a UTF-8 character split across chunks is simply bytes in
 * two chunks.
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
    return this.lend(this.room(size), size);
  }

  /**
   * A whole backing buffer of at least `size` bytes, not yet lent: a frame
   * being assembled while it arrives. It comes back through `lend` (its
   * frame, once whole) or `discard` (outgrown or dropped).
   */
  room(size: number): Buffer {
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
    return backing;
  }

  /** The first `size` bytes of a buffer from `room`, lent as a frame (the writer gives it back). */
  lend(backing: Buffer, size: number): Buffer {
    const frame = backing.subarray(0, size);
    this.lent.add(frame);
    return frame;
  }

  /** A buffer from `room` that will not be lent after all. */
  discard(backing: Buffer): void {
    this.keep(backing);
  }

  /** True if `frame` is one this pool handed out and has not had back. */
  owns(frame: Buffer): boolean {
    return this.lent.has(frame);
  }

  /** Take back a frame whose write has completed; nothing may read it afterwards. */
  release(frame: Buffer): void {
    if (!this.lent.delete(frame)) return;
    this.keep(Buffer.from(frame.buffer, 0, frame.buffer.byteLength));
  }

  private keep(backing: Buffer): void {
    if (this.freeBytes + backing.length > this.keepBytes) return;
    this.free.push(backing);
    this.freeBytes += backing.length;
  }

  /** Bytes kept for reuse (for tests and the bench). */
  get keptBytes(): number {
    return this.freeBytes;
  }
}

/**
 * Told about a large frame while it arrives (see json-prescan.ts): the
 * splitter assembles such a frame in one buffer as its reads land, so that
 * the work on it can start before its newline.
 */
export interface ArrivalWatch {
  /** `buf[0, filled)` is the frame so far (offsets stay; `buf` may be replaced by a larger copy). */
  advance(buf: Buffer, filled: number): void;
  /** The frame is whole: `frame` is the Buffer object the line event carries. */
  finish(frame: Buffer): void;
  /** The frame under way was dropped (oversize, end of stream). */
  reset(): void;
}

/** A line that has this many bytes pending is assembled in one buffer as it arrives. */
export const ASSEMBLE_MIN_BYTES = 64 * 1024;
/** The first assembly buffer is at least this large (or the last large frame's size). */
const ASSEMBLE_FIRST_BYTES = 256 * 1024;

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
  /** A large line under way, assembled as it arrives: its bytes are `assembly[0, pendingBytes)` (then `pending` is empty). */
  private assembly: Buffer | null = null;
  /** The size of the last assembled line: the next one likely needs as much room. */
  private lastAssembled = 0;

  /**
   * `gate`, when given, is read after every line: while `held` is true the
   * rest of the chunk waits (see `resume`), so a consumer that pauses its
   * source mid-chunk is not handed the thousands of lines one read can hold.
   * `joins`, when given, provides the buffers of joined frames (the writer
   * that writes them gives them back).
   */
  constructor(
    maxBytes: number,
    onEvent: (event: LineEvent) => void,
    private readonly gate: { held: boolean } | null = null,
    private readonly joins: JoinPool | null = null,
    /** Told about large lines as they arrive (the scanner's pre-scan). */
    private readonly watch: ArrivalWatch | null = null,
  ) {
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
      } else if (this.assembly !== null) {
        const frame = this.completeAssembly(chunk, start, nl + 1, lineBytes);
        this.onEvent({ kind: 'line', line: this.lineNo, frame });
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
      if (gate?.held && start < chunk.length) {
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
    // An assembly buffer given out as the partial bytes never goes back to the pool.
    const bytes =
      this.assembly !== null
        ? this.assembly.subarray(0, this.pendingBytes)
        : this.pending.length === 1
          ? this.pending[0]!
          : Buffer.concat(this.pending, this.pendingBytes);
    this.watch?.reset();
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
    if (this.assembly !== null) return this.append(chunk, start, end);
    this.pending.push(chunk.subarray(start, end));
    this.pendingBytes += size;
    if (this.pendingBytes >= ASSEMBLE_MIN_BYTES) this.startAssembly();
  }

  /** Move the pending pieces into one buffer; later reads are appended to it as they land. */
  private startAssembly(): void {
    const want = Math.max(2 * this.pendingBytes, this.lastAssembled, ASSEMBLE_FIRST_BYTES);
    const assembly = this.room(Math.min(want, this.maxBytes + 1));
    let at = 0;
    for (const piece of this.pending) at += piece.copy(assembly, at);
    this.pending = [];
    this.assembly = assembly;
    this.watch?.advance(assembly, this.pendingBytes);
  }

  /** Copy `chunk[start, end)` onto the assembly, growing it if needed (never past the cap + newline). */
  private appendBytes(chunk: Buffer, start: number, end: number): void {
    const need = this.pendingBytes + (end - start);
    let assembly = this.assembly!;
    if (need > assembly.length) {
      const grown = this.room(Math.min(Math.max(need, 2 * assembly.length), this.maxBytes + 1));
      assembly.copy(grown, 0, 0, this.pendingBytes);
      this.joins?.discard(assembly);
      this.assembly = assembly = grown;
    }
    chunk.copy(assembly, this.pendingBytes, start, end);
    this.pendingBytes = need;
  }

  private append(chunk: Buffer, start: number, end: number): void {
    this.appendBytes(chunk, start, end);
    this.watch?.advance(this.assembly!, this.pendingBytes);
  }

  /** The assembled line with its last bytes `chunk[start, end)` (newline included): the frame to hand out. */
  private completeAssembly(chunk: Buffer, start: number, end: number, lineBytes: number): Buffer {
    this.appendBytes(chunk, start, end);
    const assembly = this.assembly!;
    this.watch?.advance(assembly, lineBytes);
    const frame = this.joins === null ? assembly.subarray(0, lineBytes + 1) : this.joins.lend(assembly, lineBytes + 1);
    this.lastAssembled = lineBytes + 1;
    this.watch?.finish(frame);
    this.reset();
    return frame;
  }

  private room(size: number): Buffer {
    return this.joins === null ? Buffer.allocUnsafeSlow(size) : this.joins.room(size);
  }

  /** Enter discard mode: keep the line's first bytes (pending pieces, then this chunk), drop the rest. */
  private startOversize(chunk: Buffer, start: number, end: number): void {
    this.oversizeHead = Buffer.allocUnsafe(OVERSIZE_HEAD_BYTES);
    this.headBytes = 0;
    for (const piece of this.pending) this.fillHead(piece, 0, piece.length);
    this.pending = [];
    if (this.assembly !== null) {
      this.fillHead(this.assembly, 0, this.pendingBytes);
      this.joins?.discard(this.assembly);
      this.assembly = null;
      this.watch?.reset();
    }
    this.fillHead(chunk, start, end);
  }

  /** Copy bytes into the head until it is full, whatever the chunking. */
  private fillHead(chunk: Buffer, start: number, end: number): void {
    const room = OVERSIZE_HEAD_BYTES - this.headBytes;
    if (room > 0) this.headBytes += chunk.copy(this.oversizeHead!, this.headBytes, start, Math.min(end, start + room));
  }

  private reset(): void {
    this.assembly = null;
    this.pending = [];
    this.pendingBytes = 0;
    this.oversizeHead = null;
    this.headBytes = 0;
  }
}
