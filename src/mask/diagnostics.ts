/**
 * mcpguard's own voice: one-line diagnostics on its stderr, prefixed
 * `mcpguard: `. The destination may be a pipe nobody reads; lines that do not
 * fit are dropped and counted rather than queued, so a stuck reader can never
 * grow mcpguard's memory or stall the relay.
 *
 * Agent hosts keep this stream in log files, and diagnostics quote what either
 * side sent (a rejected frame, a line of noise, an id, a member name): every
 * `line` is masked (mask.ts) as a whole, and `escapeBytes` masks what it
 * quotes before cutting it. Masking is idempotent, so text masked twice reads
 * the same.
 */
import type { Writable } from 'node:stream';
import { SHOWN_BYTES, writeOut } from './escape.js';
import { processMasker, type Masker } from './mask.js';

/** Bytes queued toward stderr before further diagnostics are dropped. */
const MAX_QUEUED_BYTES = 1 << 20;

export class Diagnostics {
  dropped = 0;
  private closed = false;

  constructor(
    private readonly stream: Writable,
    private readonly masker: Masker = processMasker(),
  ) {
    stream.on('error', () => {
      this.closed = true;
    });
  }

  /** Write raw bytes (e.g. mirrored child stderr); false if they were dropped. */
  writeRaw(bytes: Buffer): boolean {
    if (bytes.length === 0) return true;
    if (this.closed || this.stream.writableLength > MAX_QUEUED_BYTES) {
      this.dropped += bytes.length;
      return false;
    }
    this.stream.write(bytes);
    this.atLineStart = bytes[bytes.length - 1] === 0x0a;
    return true;
  }

  /** One diagnostic line, always starting on a line of its own, with secrets masked. */
  line(text: string): void {
    // Names and reasons quote either side (a schema's member names, a tool's name): written out, so a line stays one line and drives nothing.
    this.writeLine(`mcpguard: ${writeOut(this.masker.text(text))}`);
  }

  /**
   * A whole line as given (e.g. the JSON summary, whose values the caller
   * masked: masking JSON text could cut it), after a newline if mirrored text
   * left a partial line.
   */
  writeLine(text: string): void {
    this.writeRaw(Buffer.from(`${this.atLineStart ? '' : '\n'}${text}\n`));
  }

  /** Whether the last byte written was a newline (mirrored child stderr may end mid-line). */
  private atLineStart = true;

  /** Resolves when queued output has been written, or after `ms`. */
  flush(ms: number): Promise<void> {
    if (this.closed || this.stream.writableLength === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      this.stream.once('drain', done);
      function done() {
        clearTimeout(timer);
        resolve();
      }
    });
  }
}

/** Default number of bytes shown by `escapeBytes`. */
export { SHOWN_BYTES };

/**
 * Show the first bytes of untrusted output in a double-quoted, one-line form
 * (escape.ts), secrets masked first: a secret is never cut in half before it
 * is recognised. `…(+N bytes)` after the quote counts what is not shown.
 */
export function escapeBytes(bytes: Buffer, max: number = SHOWN_BYTES, masker: Masker = processMasker()): string {
  return masker.quote(bytes, max);
}
