/**
 * Where the child's (already redacted) stderr is retained, and the process-wide
 * cap on all of it. One ring per call that saw stderr while in flight, one ring
 * for the session (bytes that arrived with no call in flight), and one budget,
 * `processBytes`, over the retained bytes of all of them together.
 *
 * The budget is enforced after every ring grows, so the total never exceeds it
 * by more than one push, and never once `write` returns. When it would, bytes
 * are given up in this order, least useful first:
 *   1. calls that have ended but whose record is not written yet (their result
 *      already went out; the excerpt is a nicety now);
 *   2. calls still running;
 *   3. the session ring (startup banners and crash messages that no call owns,
 *      often the only explanation of why the child died).
 * Within a group the largest rings are cut down first, to a common level, so
 * one flooding call cannot push a quiet one's few lines out. Cutting lowers a
 * ring's capacity for good (`ByteRing.limit`): a running call cut to 4 KiB keeps
 * its last 4 KiB from then on instead of refilling and being cut again on every
 * read. The ring counts the evicted bytes, so its marker stays truthful.
 */
import { ByteRing, type RetainMode, type RingSnapshot } from './ring.js';
import { TailStretches } from './stretches.js';

export const DEFAULT_CALL_BYTES = 16384;
export const DEFAULT_PROCESS_BYTES = 262144;

export interface StderrBudgets {
  /** Retained per call (default 16384). */
  callBytes?: number;
  /** Retained by all calls and the session ring together (default 262144). */
  processBytes?: number;
  /** Capacity of the session ring (default: callBytes). */
  sessionBytes?: number;
  /** Which part of a stream each ring keeps (default tail). */
  retain?: RetainMode;
}

/** A call's stderr accounting, for its record. */
export interface CallStderr {
  seen: number;
  retained: number;
  truncated: boolean;
  /** Some of its bytes arrived while other calls were in flight too, and count to them as well. */
  shared: boolean;
  /** Retained bytes later given up to the process budget. */
  evicted: number;
  /**
   * Where its last byte ends in the session's stderr stream (bytes as retained,
   * after redaction), or null when it saw none. A call sees one contiguous
   * stretch of that stream, so its bytes are [end - seen, end): `logs SESSION`
   * prints bytes that overlapping calls share once, in order.
   */
  end: number | null;
}

/** A call during which no stderr arrived (most calls): no ring was ever opened for it. */
const NOTHING_SEEN: CallStderr = Object.freeze({ seen: 0, retained: 0, truncated: false, shared: false, evicted: 0, end: null });

interface Entry {
  ring: ByteRing;
  shared: boolean;
  /** Stream offset just past its last byte. */
  end: number;
}

export class StderrStore {
  readonly callBytes: number;
  readonly processBytes: number;
  readonly retain: RetainMode;
  readonly #open = new Map<string, Entry>();
  readonly #ended = new Map<string, Entry>();
  readonly #session: ByteRing;
  /** Where the session ring's bytes came in the stream. */
  readonly #stretches = new TailStretches();
  #retained = 0;
  #seen = 0;

  constructor(budgets: StderrBudgets = {}) {
    this.callBytes = byteCount('callBytes', budgets.callBytes ?? DEFAULT_CALL_BYTES);
    this.processBytes = byteCount('processBytes', budgets.processBytes ?? DEFAULT_PROCESS_BYTES);
    this.retain = budgets.retain ?? 'tail';
    this.#session = new ByteRing(byteCount('sessionBytes', budgets.sessionBytes ?? this.callBytes), this.retain);
  }

  /** Bytes ever written (exact up to 2^53). */
  get seen(): number {
    return this.#seen;
  }
  /** Bytes retained by all rings now; never above processBytes between calls. */
  get retained(): number {
    return this.#retained;
  }

  /**
   * Start accounting for a call. Optional: `write` opens calls it has not seen.
   * An id that belongs to an ended, unreleased call starts a new call under it.
   */
  openCall(callId: string): void {
    if (this.#open.has(callId)) return;
    this.releaseCall(callId);
    this.#open.set(callId, { ring: new ByteRing(this.callBytes, this.retain), shared: false, end: 0 });
  }

  /**
   * Retain a chunk: it counts to every call in `inFlight`, or to the session
   * ring when there is none. The chunk is copied; the caller may reuse it.
   */
  write(chunk: Buffer, inFlight: readonly string[]): void {
    if (chunk.length === 0) return;
    this.#seen += chunk.length;
    if (inFlight.length === 0) {
      this.#stretches.add(this.#seen - chunk.length, chunk.length);
      this.#push(this.#session, chunk);
      const ring = this.#session;
      this.#stretches.prune(ring.headCapacity, ring.capacity - ring.headCapacity);
      return;
    }
    const shared = inFlight.length > 1;
    for (const id of inFlight) {
      let entry = this.#open.get(id);
      if (entry === undefined) {
        this.openCall(id);
        entry = this.#open.get(id)!;
      }
      if (shared) entry.shared = true;
      entry.end = this.#seen;
      this.#push(entry.ring, chunk);
    }
  }

  /** The call left flight: its ring is kept (first in line for eviction) until `releaseCall`. */
  closeCall(callId: string): CallStderr {
    const entry = this.#open.get(callId) ?? this.#ended.get(callId);
    if (entry === undefined) return NOTHING_SEEN;
    if (this.#open.delete(callId)) this.#ended.set(callId, entry);
    const r = entry.ring;
    return { seen: r.seen, retained: r.retained, truncated: r.truncated, shared: entry.shared, evicted: r.evicted, end: r.seen === 0 ? null : entry.end };
  }

  /** What is retained for a call, open or ended; undefined once released or never seen. */
  callSnapshot(callId: string): RingSnapshot | undefined {
    return (this.#open.get(callId) ?? this.#ended.get(callId))?.ring.snapshot();
  }

  /** Forget a call's bytes (after its record is written). */
  releaseCall(callId: string): void {
    const entry = this.#open.get(callId) ?? this.#ended.get(callId);
    if (entry === undefined) return;
    this.#retained -= entry.ring.retained;
    this.#open.delete(callId);
    this.#ended.delete(callId);
  }

  /** Whether a call not yet closed has given bytes up (the session summary can come before every call closed). */
  inFlightTruncated(): boolean {
    for (const entry of this.#open.values()) if (entry.ring.truncated) return true;
    return false;
  }

  /** The session ring: stderr that arrived while no call was in flight. */
  sessionSnapshot(): RingSnapshot {
    return this.#session.snapshot();
  }

  /** Where the session ring's bytes lie in the stream (stretches.ts). */
  get sessionStretches(): TailStretches {
    return this.#stretches;
  }

  #push(ring: ByteRing, chunk: Buffer): void {
    const before = ring.retained;
    ring.push(chunk);
    this.#retained += ring.retained - before;
    if (this.#retained > this.processBytes) this.#evict(this.#retained - this.processBytes);
  }

  #evict(excess: number): void {
    let left = excess;
    left -= level(rings(this.#ended), left);
    if (left > 0) left -= level(rings(this.#open), left);
    if (left > 0) left -= level([this.#session], left);
    this.#retained -= excess - left;
  }
}

function rings(entries: Map<string, Entry>): ByteRing[] {
  const out: ByteRing[] = [];
  for (const e of entries.values()) if (e.ring.retained > 0) out.push(e.ring);
  return out;
}

/**
 * Free at least `excess` bytes (or all there are) by cutting the largest rings
 * down to a common level L: the highest L such that cutting every ring above L
 * to L frees enough. Returns the bytes freed (may exceed `excess` by < rings.length).
 */
function level(list: ByteRing[], excess: number): number {
  if (list.length === 0) return 0;
  list.sort((a, b) => b.retained - a.retained);
  let sum = 0;
  let target = 0;
  for (let k = 0; k < list.length; k++) {
    sum += list[k]!.retained;
    const next = k + 1 < list.length ? list[k + 1]!.retained : 0;
    // Cutting the k+1 largest down to `next` frees sum - (k+1)*next.
    if (sum - (k + 1) * next >= excess) {
      target = Math.floor((sum - excess) / (k + 1));
      break;
    }
  }
  let freed = 0;
  for (const ring of list) {
    if (ring.retained <= target) break;
    freed += ring.limit(target);
  }
  return freed;
}

function byteCount(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`${name} must be a whole number of bytes, got ${value}`);
  return value;
}
