/**
 * Bounded retention of an untrusted byte stream. A ring keeps the first bytes
 * (head), the last bytes (tail), or both, in one Buffer laid out as
 * `[head region][tail region]`, where the tail region is circular. Nothing is
 * decoded here: a multibyte character cut by the ring is just bytes, and
 * excerpt.ts realigns it when the text is written out.
 *
 * The Buffer grows geometrically up to the capacity instead of being
 * preallocated, so a thousand quiet calls cost nothing, and `limit()` gives
 * memory back, so what the process budget counts (retained bytes) is what the
 * heap actually holds (at most about twice that, plus MIN_ALLOC per ring).
 */

export type RetainMode = 'tail' | 'head' | 'head+tail';

/** What a ring holds, copied out: later pushes do not change it. */
export interface RingSnapshot {
  mode: RetainMode;
  /** The first bytes of the stream (empty in tail mode). */
  head: Buffer;
  /** The last bytes of the stream (empty in head mode). */
  tail: Buffer;
  /** Bytes seen but not kept; they lie between head and tail. */
  omitted: number;
  /** Bytes ever pushed: head.length + omitted + tail.length. */
  seen: number;
  /** Of `omitted`, bytes that were kept once and later given up by `limit()`. */
  evicted: number;
}

const EMPTY = Buffer.alloc(0);
/** Smallest allocation; below it growth would reallocate for every short line. */
const MIN_ALLOC = 256;

export class ByteRing {
  readonly mode: RetainMode;
  #capacity = 0;
  #headCap = 0;
  #tailCap = 0;
  #buf: Buffer = EMPTY;
  #headAlloc = 0; // the tail region starts here
  #tailAlloc = 0; // modulus of the circular tail; never above #tailCap
  #headLen = 0;
  #tailStart = 0;
  #tailLen = 0;
  #seen = 0;
  #evicted = 0;
  readonly #initialCapacity: number;

  constructor(capacity: number, mode: RetainMode = 'tail') {
    if (!Number.isSafeInteger(capacity) || capacity < 0) throw new RangeError(`ring capacity must be a byte count, got ${capacity}`);
    this.mode = mode;
    this.#initialCapacity = capacity;
    this.#setCapacity(capacity);
  }

  /** Bytes ever pushed. Exact up to 2^53 (8 PiB). */
  get seen(): number {
    return this.#seen;
  }
  get retained(): number {
    return this.#headLen + this.#tailLen;
  }
  get truncated(): boolean {
    return this.#seen > this.#headLen + this.#tailLen;
  }
  /** Most bytes the ring will retain from now on (lowered by `limit`). */
  get capacity(): number {
    return this.#capacity;
  }
  /** Of `capacity`, the first bytes of the stream it keeps (the rest keeps the last bytes). */
  get headCapacity(): number {
    return this.#headCap;
  }
  /** Retained bytes later dropped by `limit()`. */
  get evicted(): number {
    return this.#evicted;
  }

  push(chunk: Buffer): void {
    const n = chunk.length;
    if (n === 0) return;
    this.#seen += n;
    let off = 0;
    if (this.#headLen < this.#headCap) {
      const take = Math.min(this.#headCap - this.#headLen, n);
      if (this.#headLen + take > this.#headAlloc) {
        this.#rebuild(grow(this.#headAlloc, this.#headLen + take, this.#headCap), this.#tailAlloc);
      }
      chunk.copy(this.#buf, this.#headLen, 0, take);
      this.#headLen += take;
      off = take;
    }
    const rest = n - off;
    if (rest === 0 || this.#tailCap === 0) return;
    if (rest >= this.#tailCap) {
      // Only the last tailCap bytes of this chunk can survive.
      if (this.#tailAlloc < this.#tailCap) this.#rebuild(this.#headAlloc, this.#tailCap);
      chunk.copy(this.#buf, this.#headAlloc, n - this.#tailCap, n);
      this.#tailStart = 0;
      this.#tailLen = this.#tailCap;
      return;
    }
    const need = this.#tailLen + rest;
    if (need > this.#tailAlloc && this.#tailAlloc < this.#tailCap) {
      this.#rebuild(this.#headAlloc, grow(this.#tailAlloc, need, this.#tailCap));
    }
    // Either it fits, or the region is at full capacity and the oldest bytes go.
    const mod = this.#tailAlloc;
    const at = (this.#tailStart + this.#tailLen) % mod;
    const first = Math.min(rest, mod - at);
    chunk.copy(this.#buf, this.#headAlloc + at, off, off + first);
    if (first < rest) chunk.copy(this.#buf, this.#headAlloc, off + first, n);
    if (need > this.#tailCap) {
      this.#tailStart = (this.#tailStart + need - this.#tailCap) % mod;
      this.#tailLen = this.#tailCap;
    } else {
      this.#tailLen = need;
    }
  }

  /**
   * Lower the capacity to `maxBytes` for good, dropping what no longer fits:
   * the newest head bytes and the oldest tail bytes, so the head is still the
   * first bytes of the stream and the tail the last. Returns the bytes freed.
   */
  limit(maxBytes: number): number {
    const cap = Math.max(0, Math.floor(maxBytes));
    if (cap >= this.#capacity) return 0;
    const before = this.retained;
    const contiguous = !this.truncated;
    const oldHead = this.#buf.subarray(0, this.#headLen);
    const oldTail = this.#linearTail();
    this.#setCapacity(cap);
    let head: Buffer;
    let tail: Buffer;
    if (contiguous) {
      // Nothing was dropped yet: the stream is head ++ tail, and the new tail may
      // have to come out of the old head.
      const all = oldTail.length === 0 ? oldHead : Buffer.concat([oldHead, oldTail]);
      head = all.subarray(0, Math.min(this.#headCap, all.length));
      tail = all.subarray(Math.max(head.length, all.length - this.#tailCap));
    } else {
      head = oldHead.subarray(0, Math.min(this.#headCap, oldHead.length));
      tail = oldTail.subarray(Math.max(0, oldTail.length - this.#tailCap));
    }
    this.#place(head, tail);
    const freed = before - this.retained;
    this.#evicted += freed;
    return freed;
  }

  snapshot(): RingSnapshot {
    return {
      mode: this.mode,
      head: Buffer.from(this.#buf.subarray(0, this.#headLen)),
      tail: Buffer.from(this.#linearTail()),
      omitted: this.#seen - this.retained,
      seen: this.#seen,
      evicted: this.#evicted,
    };
  }

  /** Forget everything, counters included, and restore the original capacity. */
  clear(): void {
    this.#setCapacity(this.#initialCapacity);
    this.#place(EMPTY, EMPTY);
    this.#seen = 0;
    this.#evicted = 0;
  }

  #setCapacity(cap: number): void {
    this.#capacity = cap;
    this.#headCap = this.mode === 'tail' ? 0 : this.mode === 'head' ? cap : Math.floor(cap / 2);
    this.#tailCap = cap - this.#headCap;
  }

  /** The tail in stream order; a view when it does not wrap. */
  #linearTail(): Buffer {
    const base = this.#headAlloc;
    const end = this.#tailStart + this.#tailLen;
    if (end <= this.#tailAlloc) return this.#buf.subarray(base + this.#tailStart, base + end);
    return Buffer.concat([this.#buf.subarray(base + this.#tailStart, base + this.#tailAlloc), this.#buf.subarray(base, base + end - this.#tailAlloc)]);
  }

  /** Move the content into a new Buffer with the given region sizes. */
  #rebuild(headAlloc: number, tailAlloc: number): void {
    const head = this.#buf.subarray(0, this.#headLen);
    const tail = this.#linearTail();
    const buf = headAlloc + tailAlloc === 0 ? EMPTY : Buffer.allocUnsafe(headAlloc + tailAlloc);
    head.copy(buf, 0);
    tail.copy(buf, headAlloc);
    this.#buf = buf;
    this.#headAlloc = headAlloc;
    this.#tailAlloc = tailAlloc;
    this.#tailStart = 0;
  }

  /** Replace the content with exactly these bytes, in a right-sized Buffer. */
  #place(head: Buffer, tail: Buffer): void {
    const buf = head.length + tail.length === 0 ? EMPTY : Buffer.allocUnsafe(head.length + tail.length);
    head.copy(buf, 0);
    tail.copy(buf, head.length);
    this.#buf = buf;
    this.#headAlloc = head.length;
    this.#headLen = head.length;
    this.#tailAlloc = tail.length;
    this.#tailStart = 0;
    this.#tailLen = tail.length;
  }
}

function grow(current: number, needed: number, cap: number): number {
  return Math.min(cap, Math.max(needed, current * 2, MIN_ALLOC));
}
