/**
 * mcpguard's own voice: one-line diagnostics on its stderr, prefixed
 * `mcpguard: `. The destination may be a pipe nobody reads; lines that do not
 * fit are dropped and counted rather than queued, so a stuck reader can never
 * grow mcpguard's memory or stall the relay.
 */
import type { Writable } from 'node:stream';

/** Bytes queued toward stderr before further diagnostics are dropped. */
const MAX_QUEUED_BYTES = 1 << 20;

export class Diagnostics {
  dropped = 0;
  private closed = false;

  constructor(private readonly stream: Writable) {
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

  /** One diagnostic line, always starting on a line of its own. */
  line(text: string): void {
    this.writeLine(`mcpguard: ${text}`);
  }

  /** A whole line of mcpguard's own (e.g. the JSON summary), after a newline if mirrored text left a partial line. */
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
export const SHOWN_BYTES = 120;

/**
 * Show the first bytes of untrusted output in a double-quoted, one-line form:
 * printable text as is, `"` and `\` escaped, control characters as `\n`, `\t`,
 * `\xNN`, and bytes that are not valid UTF-8 as `\xNN`. Longer input ends with
 * `…(+N bytes)` outside the quotes.
 */
export function escapeBytes(bytes: Buffer, max: number = SHOWN_BYTES): string {
  const shown = Math.min(bytes.length, max);
  let out = '"';
  let i = 0;
  while (i < shown) {
    const c = bytes[i]!;
    if (c >= 0x20 && c < 0x7f) {
      out += c === 0x22 ? '\\"' : c === 0x5c ? '\\\\' : String.fromCharCode(c);
      i++;
    } else if (c === 0x0a) { out += '\\n'; i++; }
    else if (c === 0x0d) { out += '\\r'; i++; }
    else if (c === 0x09) { out += '\\t'; i++; }
    else if (c < 0x80) { out += hex(c); i++; }
    else {
      const size = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
      const text = size > 0 && i + size <= shown ? bytes.toString('utf8', i, i + size) : '';
      // Accept only a whole, valid, printable character; C1 controls are escaped.
      if (text.length > 0 && !text.includes('\ufffd') && !/[\u0080-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/.test(text)) {
        out += text;
        i += size;
      } else {
        out += hex(c);
        i++;
      }
    }
  }
  out += '"';
  if (bytes.length > shown) out += `…(+${bytes.length - shown} bytes)`;
  return out;
}

function hex(byte: number): string {
  return `\\x${byte.toString(16).padStart(2, '0')}`;
}
