/**
 * Scanning a large frame while it arrives. A frame is forwarded only once it
 * is whole and valid, so mcpguard cannot stream it; but most of a large
 * frame's bytes are inside a few long strings (a tool result's text, a
 * file's content as an argument), and checking those is most of the scan.
 * FramePrescan walks the bytes as each read lands, string by string, with
 * the scanner's own string loop (StringResume), and notes every long string
 * it found valid. When the newline comes, the scanner proper runs over the
 * whole frame as always and steps over those strings in one move each: the
 * verdict is the scanner's, only the work moved earlier, into the time the
 * rest of the frame was still on its way.
 *
 * Nothing here decides anything. A string that turns out invalid (or a
 * frame that is not JSON at all) only stops the pre-scan; the scanner at the
 * newline then finds the fault and reports it exactly as it would have.
 * Frames made of many short strings gain nothing: the pre-scan gives up
 * after WASTE_LIMIT bytes of strings too short to note.
 */
import { isUtf8 } from 'node:buffer';
import { attachScanHints, isScanError, StringResume, type ScanHints } from './json-scan.js';
import { INVALID_STRING, stringBodyCheck, type StringBodyCheck } from './wasm/string-body.js';

/** Strings at least this long (quotes included) are noted. */
export const HINT_MIN_BYTES = 1024;
/** Bytes of short strings scanned for nothing before the pre-scan stops for this frame. */
export const WASTE_LIMIT = 16 * 1024;
/**
 * What each short string counts toward WASTE_LIMIT besides its bytes: the
 * call into the string check costs about as much as checking this many
 * bytes, so a frame of thousands of tiny keys stops after a few hundred.
 */
const SHORT_STRING_COST = 32;

const QUOTE = 0x22;

export class FramePrescan {
  /**
   * The SIMD string check (null: the scanner's own loop, slower, same
   * answers), compiled by the first frame that needs it (undefined until
   * then): a session whose frames stay small never compiles the module nor
   * holds its memory.
   */
  private bodies: StringBodyCheck | null | undefined;

  constructor({ simd = true }: { simd?: boolean } = {}) {
    if (!simd) this.bodies = null;
  }

  private hints: ScanHints = { starts: [], ends: [], utf8: false };
  /** Bytes before this are valid UTF-8 (a character boundary), unless `utf8Bad`. */
  private utf8At = 0;
  private utf8Bad = false;
  /** Where the next call continues: inside a string when `open` ≥ 0 (its opening quote). */
  private at = 0;
  private open = -1;
  private wasted = 0;
  private stopped = false;

  /** `buf[0, filled)` is the frame so far (same offsets on every call; `buf` may be a new, larger copy). */
  advance(buf: Buffer, filled: number): void {
    this.checkUtf8(buf, filled);
    if (this.stopped || filled <= this.at) return;
    // A view that ends where the bytes end: searches never look past them.
    const view = buf.length === filled ? buf : buf.subarray(0, filled);
    // The scanner's own loop only where there is no SIMD check (one object per read otherwise for nothing).
    if (this.bodies === undefined) this.bodies = stringBodyCheck();
    const strings = this.bodies === null ? new StringResume(view, filled) : null;
    let at = this.at;
    try {
      while (at < filled) {
        if (this.open < 0) {
          // Outside strings only structure, numbers and literals: the next quote opens a string.
          const quote = view.indexOf(QUOTE, at);
          if (quote === -1) {
            at = filled;
            break;
          }
          this.open = quote;
          at = quote + 1;
        }
        const past = strings !== null ? strings.resume(at) : this.bodies!.check(view, at, filled, at - this.open);
        if (past === INVALID_STRING) {
          this.stopped = true;
          break;
        }
        if (past < 0) {
          at = -past - 1;
          break;
        }
        const length = past - this.open;
        if (length >= HINT_MIN_BYTES) {
          this.hints.starts.push(this.open);
          this.hints.ends.push(past);
        } else if ((this.wasted += length + SHORT_STRING_COST) > WASTE_LIMIT) {
          this.stopped = true;
        }
        this.open = -1;
        at = past;
        if (this.stopped) break;
      }
    } catch (error) {
      if (!isScanError(error)) throw error;
      this.stopped = true; // the scanner will say what is wrong, at the newline
    }
    this.at = at;
  }

  /**
   * UTF-8 as the bytes arrive, in pieces. Valid pieces joined are always
   * valid, so "every piece valid" never vouches for an invalid frame; and
   * because each cut is made just before a byte that is not a continuation
   * byte (10xxxxxx), which in valid UTF-8 always starts a character, a
   * valid frame is never cut inside a character and is found valid.
   */
  private checkUtf8(buf: Buffer, filled: number): void {
    if (this.utf8Bad) return;
    let cut = filled - 1;
    const floor = Math.max(this.utf8At, filled - 4);
    while (cut > floor && (buf[cut]! & 0xc0) === 0x80) cut--;
    if (cut <= this.utf8At) return;
    if (!isUtf8(buf.subarray(this.utf8At, cut))) this.utf8Bad = true;
    this.utf8At = cut;
  }

  /** The frame is whole (`frame` is the Buffer object that will be scanned): hand over what was found, start afresh. */
  finish(frame: Buffer): void {
    this.hints.utf8 = !this.utf8Bad && isUtf8(frame.subarray(this.utf8At));
    attachScanHints(frame, this.hints);
    this.reset();
  }

  /** Forget the frame under way (it was dropped, or turned out oversize). */
  reset(): void {
    // The hints object may be attached to the last frame: a new one for the next.
    this.hints = { starts: [], ends: [], utf8: false };
    this.utf8At = 0;
    this.utf8Bad = false;
    this.at = 0;
    this.open = -1;
    this.wasted = 0;
    this.stopped = false;
  }
}
