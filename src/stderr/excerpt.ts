/**
 * Retained stderr as text: the only place it is decoded. The output is
 *
 *   [captured stderr]                                    (with `label`)
 *   [stderr truncated: kept last 16384 of 184320 bytes]  (only when bytes are missing)
 *   …the kept bytes, decoded with U+FFFD for invalid UTF-8…
 *
 * Its UTF-8 length never exceeds `maxBytes`, label and marker included; only
 * when `maxBytes` is smaller than label + marker are those written alone. The
 * marker's numbers describe exactly the bytes shown: bytes skipped to start on
 * a character boundary, or cut to fit, count as not kept. The marker is
 * mcpguard's and comes before any child byte, so the child cannot forge it.
 * In head+tail mode the marker states both parts and the omitted count, and an
 * omission line stands where the bytes are missing.
 */
import type { RetainMode, RingSnapshot } from './ring.js';

export const CAPTURED_LABEL = '[captured stderr]';

export interface ExcerptOptions {
  /** Most UTF-8 bytes in the returned string (Infinity: no cut beyond the ring's). */
  maxBytes: number;
  /** Start with a `[captured stderr]` line. */
  label: boolean;
}

export interface View {
  head: Buffer;
  tail: Buffer;
  /** Bytes of the stream between head and tail that are not shown. */
  omitted: number;
}

const EMPTY = Buffer.alloc(0);

/** Render a snapshot as labelled, marked, boundary-aligned text within `maxBytes`. */
export function renderExcerpt(snapshot: RingSnapshot, options: ExcerptOptions): string {
  return renderExcerptShown(snapshot, options).text;
}

/** The rendered text and the ring's bytes it shows: a prefix (`head`) and a suffix (`tail`) of the stream, `omitted` between. */
export function renderExcerptShown(snapshot: RingSnapshot, options: ExcerptOptions): { text: string } & View {
  const label = options.label ? `${CAPTURED_LABEL}\n` : '';
  const whole = viewOf(snapshot, Infinity);
  if (whole.omitted === 0) {
    const text = compose(snapshot, whole, label);
    if (Buffer.byteLength(text) <= options.maxBytes) return { text, ...whole };
  }
  // Room for the longest marker this snapshot can have: every number as large as `seen`.
  const n = snapshot.seen;
  const reserve = Buffer.byteLength(label + marker(snapshot, n, n, n) + '\n' + (snapshot.mode === 'head+tail' ? '\n' + omissionLine(n) : ''));
  let max = options.maxBytes - reserve;
  for (;;) {
    const view = viewOf(snapshot, max);
    const text = compose(snapshot, view, label);
    const over = Buffer.byteLength(text) - options.maxBytes;
    if (over <= 0 || max <= 0) return { text, ...view };
    // Invalid bytes decode to a 3-byte U+FFFD, so text can outgrow its bytes.
    max -= over;
  }
}

function compose(snapshot: RingSnapshot, view: View, label: string): string {
  const head = view.head.toString('utf8');
  const tail = view.tail.toString('utf8');
  if (view.omitted === 0) return label + head + tail;
  return label + marker(snapshot, view.head.length, view.tail.length, view.omitted) + '\n' + head + omission(snapshot.mode, head, view.omitted) + tail;
}

/** What stands between the head's and the tail's text: in head+tail retention with bytes omitted, the omission line (on a line of its own). */
export function omission(mode: RetainMode, head: string, omitted: number): string {
  if (mode !== 'head+tail' || omitted === 0) return '';
  return (head.length > 0 && !head.endsWith('\n') ? '\n' : '') + omissionLine(omitted);
}

function marker(s: RingSnapshot, head: number, tail: number, omitted: number): string {
  const why = s.evicted > 0 ? ' (process budget)' : '';
  if (s.mode === 'tail') return `[stderr truncated: kept last ${tail} of ${s.seen} bytes${why}]`;
  if (s.mode === 'head') return `[stderr truncated: kept first ${head} of ${s.seen} bytes${why}]`;
  return `[stderr truncated: kept first ${head} and last ${tail} of ${s.seen} bytes, omitted ${omitted}${why}]`;
}

function omissionLine(omitted: number): string {
  return `[... ${omitted} bytes omitted ...]\n`;
}

/** At most `max` bytes of the stream, split as the mode says, cut edges on character boundaries. */
function viewOf(s: RingSnapshot, max: number): View {
  const room = Math.max(0, max);
  let head = s.head;
  let tail = s.tail;
  if (s.omitted === 0) {
    // The whole stream is here; as one piece a character spanning head and tail stays whole.
    const all = head.length > 0 && tail.length > 0 ? Buffer.concat([head, tail]) : head.length > 0 ? head : tail;
    if (all.length <= room) return { head: all, tail: EMPTY, omitted: 0 };
    const split = s.mode === 'tail' ? 0 : s.mode === 'head' ? all.length : Math.floor(room / 2);
    head = all.subarray(0, split);
    tail = all.subarray(split);
  }
  let headKeep = Math.min(head.length, s.mode === 'head+tail' ? Math.floor(room / 2) : room);
  const tailKeep = Math.min(tail.length, room - headKeep);
  headKeep = Math.min(head.length, room - tailKeep);
  const view = { head: head.subarray(0, headKeep), tail: tail.subarray(tail.length - tailKeep), omitted: s.seen - headKeep - tailKeep };
  return view.omitted > 0 ? aligned(view) : view;
}

/**
 * Make cut edges fall between characters: the head loses a trailing incomplete
 * sequence, the tail skips up to 3 leading continuation bytes. With bytes
 * omitted, both edges are cuts (the true start and end of the stream are not).
 */
function aligned(view: View): View {
  const back = incompleteEnd(view.head);
  let skip = 0;
  while (skip < 3 && skip < view.tail.length && (view.tail[skip]! & 0xc0) === 0x80) skip++;
  return {
    head: view.head.subarray(0, view.head.length - back),
    tail: view.tail.subarray(skip),
    omitted: view.omitted + back + skip,
  };
}

/** Bytes of a multibyte sequence at the end of `b` that is missing its last bytes. */
function incompleteEnd(b: Buffer): number {
  for (let k = 1; k <= Math.min(3, b.length); k++) {
    const c = b[b.length - k]!;
    if ((c & 0xc0) === 0x80) continue;
    const size = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return size > k ? k : 0;
  }
  return 0;
}
