/**
 * `logs SESSION` in stream order, each byte once. Calls that overlap share
 * the stderr that came while both were in flight, and each call's final
 * record keeps its own copy; printed call by call, the same lines came out
 * once per call that was open (the README's hang walkthrough: 6 lines as 22).
 * A call's record says where its stderr ends in the session's stream
 * (`stderr_stream_end`); its retained text is then the stretch
 * [end - retained, end) of that stream, whenever the text is exactly that many
 * bytes (tail retention; head+tail text carries an omission line, and older
 * records no offset: those are printed whole, as before). Blocks are sorted by
 * where their text starts, and each prints only what no block before it did;
 * its header names the calls that were open with it. The session tail's
 * stretches (logs-tail.ts), when the session record places them, go in
 * between: each before the first call block that starts after it.
 */
import type { Block } from './logs.js';

/** More calls than this open together are named as a count. */
const ALSO_SHOWN = 5;

/** Where a block's text lies in the session's stderr stream, or null when that cannot be told. */
function windowOf(b: Block): { start: number; end: number } | null {
  if (b.kind !== 'call' || b.stream_end === null || b.text === null || b.bytes_retained === null) return null;
  if (Buffer.byteLength(b.text) !== b.bytes_retained) return null;
  return { start: b.stream_end - b.bytes_retained, end: b.stream_end };
}

/** The stretch of the stream a call was in flight for (its bytes seen), or null. */
function spanOf(b: Block): { start: number; end: number } | null {
  return b.kind !== 'call' || b.stream_end === null ? null : { start: b.stream_end - b.bytes_seen, end: b.stream_end };
}

/**
 * Order one batch of blocks (calls that were in flight together, with any
 * session tail last) and cut from each what was printed already. `printed` is
 * how far into the stream the output has gone; the new value is returned.
 * `outside`: the tail's stretches not printed yet, in stream order; those
 * that came before a call block are taken from it and put before that block.
 */
export function inStreamOrder(blocks: Block[], printed: number, outside: Block[] = []): { blocks: Block[]; printed: number } {
  const key = (b: Block): number => windowOf(b)?.start ?? spanOf(b)?.start ?? Number.POSITIVE_INFINITY;
  const calls = blocks.filter((b) => b.kind === 'call');
  const rest = blocks.filter((b) => b.kind !== 'call');
  // Stable: blocks that cannot be placed keep their file order, after those that can.
  const sorted = calls
    .map((b, i) => ({ b, i, k: key(b) }))
    .sort((x, y) => x.k - y.k || x.i - y.i)
    .map((x) => x.b);
  let to = printed;
  const out: Block[] = [];
  for (const b of sorted) {
    // Tail bytes and a call's bytes never share a stream offset: a stretch that starts first came first.
    while (outside.length > 0 && outside[0]!.stretch!.start < key(b)) {
      out.push(outside.shift()!);
    }
    out.push(b);
    const span = spanOf(b);
    if (span !== null) {
      const also = sorted.filter((o) => o !== b && o.call_id !== null && overlaps(span, spanOf(o))).map((o) => o.call_id!);
      b.also_open = also.length > ALSO_SHOWN ? [...also.slice(0, ALSO_SHOWN), `${also.length - ALSO_SHOWN} more`] : also;
    }
    const w = windowOf(b);
    if (w === null) continue;
    if (w.start < to) {
      const bytes = Buffer.from(b.text!);
      let cut = Math.min(to, w.end) - w.start;
      // Never split a character: the rest of it was printed with the block before.
      while (cut < bytes.length && (bytes[cut]! & 0xc0) === 0x80) cut++;
      b.text = bytes.subarray(cut).toString('utf8');
      b.shown_above = cut;
      // What it lost lies before bytes already printed: its marker would now describe the wrong place.
      if (cut > 0) b.marker = null;
    }
    to = Math.max(to, w.end);
  }
  return { blocks: [...out, ...rest], printed: to };
}

function overlaps(a: { start: number; end: number }, b: { start: number; end: number } | null): boolean {
  return b !== null && a.start < b.end && b.start < a.end;
}
