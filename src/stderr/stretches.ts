/**
 * Where the session tail's bytes lie in the session's stderr stream. The tail
 * (stderr that came while no call was in flight) is one ring, fed by the
 * stretches between calls: before the first, between two, after the last.
 * Each stretch is kept here with its stream offsets, so that `logs SESSION`
 * can print it where it came, between the call blocks (which say where their
 * own bytes end: `stderr_stream_end`), each byte once.
 *
 * Bounded twice over: a stretch none of whose bytes the ring can still hold
 * is dropped as the ring moves past it, and past MAX_TAIL_STRETCHES
 * neighbours are merged, down to half the bound in one pass, those with the
 * least of the stream between them first: a `merged` stretch's bytes are
 * known to lie within [start, end), with calls' stderr between them. A
 * session with thousands of gaps between calls keeps at most
 * MAX_TAIL_STRETCHES entries, ordered at worst to the nearest merged stretch,
 * never lost.
 *
 * Offsets are those of the stream as retained: after redaction, the stream in
 * which calls' `stderr_stream_end` is counted. A secret is masked before any
 * of its bytes reach the stream, so no boundary here can cut one in half.
 */
import { isUtf8 } from 'node:buffer';

/** Most stretches kept for a session tail (and written in its record): 128 entries are about 6 KB of JSON. */
export const MAX_TAIL_STRETCHES = 128;

interface Stretch {
  /** Stream offset of its first byte. */
  start: number;
  /** Stream offset just past its last byte. */
  end: number;
  /** Offset of its first byte among the tail's own bytes (the ring's stream). */
  from: number;
  /** Its bytes in the tail (end - start unless merged). */
  bytes: number;
  merged: boolean;
}

/** One entry of the record's `tail_stretches`: a stretch of the tail's text, or the omission line between head and tail. */
export type TailStretch = { start: number; end: number; bytes: number; merged?: true } | { omitted: number; bytes: number };

/** The bytes of the tail that a rendered text shows: the first `head` and the last `tail` of the tail's own stream. */
export interface ShownBytes {
  head: Buffer;
  tail: Buffer;
  /** Tail bytes between the two that are not shown (0: head and tail are contiguous). */
  omitted: number;
  /** Byte length of the text between the head's and the tail's text (the omission line, and the newline before it). */
  omissionText: number;
}

export class TailStretches {
  readonly #list: Stretch[] = [];
  #seen = 0;

  /** `n` tail bytes that came at stream offset `start`. */
  add(start: number, n: number): void {
    const last = this.#list.at(-1);
    if (last !== undefined && last.end === start) {
      last.end += n;
      last.bytes += n;
    } else {
      this.#list.push({ start, end: start + n, from: this.#seen, bytes: n, merged: false });
      if (this.#list.length > MAX_TAIL_STRETCHES) this.#mergeClosest();
    }
    this.#seen += n;
  }

  /**
   * Forget stretches the ring can no longer hold: those wholly past its first
   * `headCap` bytes and before its last `tailCap`. The newest is always kept
   * (the next bytes may extend it).
   */
  prune(headCap: number, tailCap: number): void {
    const keepFrom = this.#seen - tailCap;
    let i = 0;
    while (i < this.#list.length - 1) {
      const s = this.#list[i]!;
      if (s.from < headCap) i++;
      else if (s.from + s.bytes <= keepFrom) this.#list.splice(i, 1);
      else break;
    }
  }

  /**
   * The record's entries for a rendered tail, in text order: the stretches
   * of the shown head bytes, the omission (if any), those of the shown tail
   * bytes. Null when the text is not exactly those bytes (invalid UTF-8
   * decodes to U+FFFD): `logs` then prints the tail whole, after the calls.
   * A boundary inside a character moves past it: the character is shown with
   * the stretch its first byte came in.
   */
  shown(s: ShownBytes): TailStretch[] | null {
    if (!isUtf8(s.head) || !isUtf8(s.tail)) return null;
    const out: TailStretch[] = [];
    this.#cover(0, s.head, out);
    // Head+tail: the omission line stands between the two parts (tail and head retention have none).
    if (s.omissionText > 0) out.push({ omitted: s.omitted, bytes: s.omissionText });
    this.#cover(this.#seen - s.tail.length, s.tail, out);
    // Every byte shown in exactly one entry, or no entries: a stretch lost here would misplace the rest.
    const covered = out.reduce((n, e) => n + ('start' in e ? e.bytes : 0), 0);
    return covered === s.head.length + s.tail.length ? out : null;
  }

  /** Entries for `bytes`, the tail's own bytes from offset `from`, each cut on a character boundary. */
  #cover(from: number, bytes: Buffer, out: TailStretch[]): void {
    const to = from + bytes.length;
    const parts: { s: Stretch; at: number; stop: number }[] = [];
    for (const s of this.#list) {
      const a = Math.max(from, s.from);
      const b = Math.min(to, s.from + s.bytes);
      if (a < b) parts.push({ s, at: a - from, stop: b - from });
    }
    for (let k = 0; k < parts.length; k++) {
      const { s, stop } = parts[k]!;
      let at = parts[k]!.at;
      // A character split between two stretches goes whole with the one its first byte came in.
      if (k > 0) while (at < bytes.length && (bytes[at]! & 0xc0) === 0x80) at++;
      let next = k + 1 < parts.length ? parts[k + 1]!.at : bytes.length;
      while (next < bytes.length && (bytes[next]! & 0xc0) === 0x80) next++;
      if (next <= at) continue;
      const end = s.start + (from + stop - s.from);
      const start = s.merged ? s.start : s.start + (from + at - s.from);
      out.push(s.merged ? { start, end: s.end, bytes: next - at, merged: true } : { start, end, bytes: next - at });
    }
  }

  /**
   * Merge down to half the bound in one pass, closing the smallest gaps of
   * the stream between neighbours first (the oldest first among equal gaps):
   * a sort of MAX_TAIL_STRETCHES numbers once every MAX_TAIL_STRETCHES / 2
   * new stretches, not a scan for every one.
   */
  #mergeClosest(): void {
    const list = this.#list;
    const gaps = new Float64Array(list.length - 1);
    for (let i = 0; i < gaps.length; i++) gaps[i] = list[i + 1]!.start - list[i]!.end;
    let merges = list.length - MAX_TAIL_STRETCHES / 2;
    // The gap at which enough are closed (a typed array sorts numerically, without a callback).
    const limit = Float64Array.from(gaps).sort()[merges - 1]!;
    let below = 0;
    for (const g of gaps) if (g < limit) below++;
    let atLimit = merges - below; // gaps equal to the limit closed too, oldest first
    let kept = 0;
    for (let i = 0; i < list.length; i++) {
      const s = list[i]!;
      const g = i > 0 ? gaps[i - 1]! : Number.POSITIVE_INFINITY;
      const close = merges > 0 && (g < limit || (g === limit && atLimit > 0));
      if (!close) {
        list[kept++] = s;
        continue;
      }
      if (g === limit) atLimit--;
      merges--;
      const into = list[kept - 1]!;
      into.end = s.end;
      into.bytes += s.bytes;
      into.merged = true;
    }
    list.length = kept;
  }
}
