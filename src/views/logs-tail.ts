/**
 * The session tail (stderr that came while no call was in flight) cut into
 * the stretches it came in, so that `logs SESSION` prints each where it came
 * between the call blocks. The session record says where each stretch of the
 * tail's text lies in the stream (`stderr.tail_stretches`, written by
 * stderr/stretches.ts): bytes of the text, in order, and the stream offsets
 * [start, end) they came at, in the same stream as calls'
 * `stderr_stream_end`. Records without it, or whose text does not add up to
 * it, are printed whole after the calls, as before.
 *
 * The text is cut only where the record says, never inside a character, and
 * only when masking it again changes nothing: a secret that masking would
 * catch whole is never cut in two and shown half in each stretch.
 */
import { processMasker } from '../mask/mask.js';
import { CAPTURED_LABEL } from '../stderr/excerpt.js';
import type { Block } from './logs.js';
import { logEnds } from './views.js';

/** Where a stretch of the tail came, for a block printed as one stretch of several. */
export interface Stretch {
  /** 1-based, in stream order. */
  index: number;
  count: number;
  /** Stream offsets of the stretch (of the session's stderr, after redaction). */
  start: number;
  end: number;
  /** Merged by the writer's bound: its bytes lie within [start, end), calls' stderr between them. */
  merged: boolean;
  /** Head+tail retention: bytes of the tail omitted just before this stretch (0: none). */
  omitted_before: number;
}

const MARKER_START = '[stderr truncated: ';

/** Most entries a record's tail_stretches may have (the writer keeps 128 and an omission). */
const MAX_ENTRIES = 1024;

/**
 * The session tail `whole` (the record's tail as one block, marker apart)
 * as one block per stretch, or null when the record does not place it.
 */
export function splitTail(whole: Block, entries: unknown): Block[] | null {
  if (!Array.isArray(entries) || entries.length === 0 || entries.length > MAX_ENTRIES || whole.text === null) return null;
  if (processMasker().text(whole.text) !== whole.text) return null;
  const bytes = Buffer.from(whole.text);
  const out: Block[] = [];
  let at = 0;
  let omitted = 0;
  for (const e of entries as unknown[]) {
    if (typeof e !== 'object' || e === null) return null;
    const { start, end, bytes: n, merged, omitted: gone } = e as Record<string, unknown>;
    if (!count(n) || at + n > bytes.length || !boundary(bytes, at) || !boundary(bytes, at + n)) return null;
    const text = bytes.subarray(at, at + n).toString('utf8');
    at += n;
    if (gone !== undefined) {
      // The omission line, as excerpt.ts writes it: shown by mcpguard above the next stretch, not as the server's text.
      if (!count(gone) || text.replace(/^\n/, '') !== `[... ${gone} bytes omitted ...]\n`) return null;
      omitted = gone;
      continue;
    }
    if (!count(start) || !count(end) || end < start) return null;
    const stretch: Stretch = { index: out.length + 1, count: 0, start, end, merged: merged === true, omitted_before: omitted };
    omitted = 0;
    out.push({ ...whole, text, marker: out.length === 0 ? whole.marker : null, stream_end: end, stretch });
  }
  if (at !== bytes.length || out.length === 0 || omitted > 0) return null;
  for (const b of out) b.stretch!.count = out.length;
  return out;
}

/** A stretch's header: which of the tail's stretches it is; then the omission before it, in mcpguard's voice. */
export function stretchLines(b: Block): string {
  const s = b.stretch!;
  const which = s.count === 1 ? '' : ` (${s.index} of ${s.count}${s.merged ? '; calls wrote between its lines' : ''})`;
  return `==> session ${b.session_id}: stderr outside any call${which} <==\n${b.marker === null ? '' : `${b.marker}\n`}${s.omitted_before > 0 ? `[... ${s.omitted_before} bytes omitted ...]\n` : ''}`;
}

/** The session tail as its stretches, when the log ends in a session record that places them; else null. */
export function placedTail(file: string): Block[] | null {
  const ends = logEnds(file);
  const whole = ends.end === undefined ? null : tailBlock(ends.end, ends.sessionId);
  return whole === null ? null : splitTail(whole, (ends.end!.stderr as Record<string, unknown>).tail_stretches);
}

/** The session record's tail as one block (its label dropped, its marker apart); null when it has none. */
export function tailBlock(record: Record<string, unknown>, sessionId: string): Block | null {
  const s = record.stderr as Record<string, unknown> | undefined;
  if (s === undefined || typeof s.tail !== 'string' || s.tail === '') return null;
  let text = s.tail.startsWith(`${CAPTURED_LABEL}\n`) ? s.tail.slice(CAPTURED_LABEL.length + 1) : s.tail;
  // Older records do not say whether the tail lost bytes; a marker-shaped first line is then taken as the marker.
  const truncated = typeof s.tail_truncated === 'boolean' ? s.tail_truncated : text.startsWith(MARKER_START);
  let marker: string | null = null;
  if (truncated) ({ marker, text } = splitMarker(text));
  return {
    kind: 'session_tail',
    session_id: sessionId,
    call_id: null,
    method: null,
    tool: null,
    state: null,
    ended_at: typeof record.ended_at === 'string' ? record.ended_at : null,
    bytes_seen: typeof s.tail_bytes_seen === 'number' ? s.tail_bytes_seen : Buffer.byteLength(text),
    bytes_retained: null,
    truncated,
    marker,
    text,
    stream_end: null,
    shown_above: 0,
    also_open: [],
    stretch: null,
  };
}

/** A marker-shaped first line, apart from the rest. */
export function splitMarker(text: string): { marker: string | null; text: string } {
  const nl = text.indexOf('\n');
  if (!text.startsWith(MARKER_START) || nl === -1) return { marker: null, text };
  return { marker: text.slice(0, nl), text: text.slice(nl + 1) };
}

function count(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/** `at` is not inside a UTF-8 character. */
function boundary(bytes: Buffer, at: number): boolean {
  return at >= bytes.length || (bytes[at]! & 0xc0) !== 0x80;
}
