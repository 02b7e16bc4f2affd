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
 *
 * The server's own stderr, mirrored here, is told apart at a glance: each of
 * its lines is shown after SERVER_PREFIX, which no line of mcpguard's starts
 * with, and its control bytes cannot move the cursor or restyle the terminal
 * (a CR or an escape sequence could otherwise overwrite the prefix).
 */
import type { Writable } from 'node:stream';
import { SHOWN_BYTES, writeOut } from './escape.js';
import { processMasker, type Masker } from './mask.js';

/**
 * What every line of the server's stderr is shown after, on mcpguard's stderr
 * and in `mcpguard logs`: mcpguard's own lines start `mcpguard` (or `==> `
 * and `[stderr ` in logs), so a server line cannot pass for one of them.
 */
export const SERVER_PREFIX = 'server| ';
const PREFIX = Buffer.from(SERVER_PREFIX);
/** An empty server line: the prefix without its trailing space. */
const PREFIX_BARE = Buffer.from(SERVER_PREFIX.trimEnd());

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

  /**
   * Mirror a chunk of the server's (already masked) stderr: each line after
   * SERVER_PREFIX, control bytes shown as `\xNN` (see ServerLines). False
   * if it was dropped.
   */
  mirror(bytes: Buffer): boolean {
    return this.writeRaw(this.serverLines.format(bytes, this.atLineStart));
  }

  private readonly serverLines = new ServerLines();

  /** One diagnostic line, always starting on a line of its own, with secrets masked. */
  line(text: string): void {
    // Names and reasons quote either side (a schema's member names, a tool's name): written out, so a line stays one line and drives nothing.
    const shown = writeOut(this.masker.text(text));
    this.writeLine(`mcpguard: ${shown}`);
    this.onLine?.(shown);
  }

  /** Hears each diagnostic line as written (masked, escaped), e.g. for the OpenTelemetry export's logs; null: nobody. */
  onLine: ((text: string) => void) | null = null;

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

const C2 = 0xc2;
const HELD_C2 = Buffer.from([C2]);

/**
 * The server's stderr bytes as mcpguard shows them, chunk by chunk: a line's
 * first byte gets SERVER_PREFIX in front (a line begins after a newline, or
 * where mcpguard's own line left the destination at a line start); C0
 * control bytes other than tab and newline, DEL, and C1 controls (UTF-8
 * `C2 80`–`C2 9F`) become `\xNN` text. A CR right before a newline stays (a
 * CRLF line end). A chunk ending in `C2` keeps it for the next chunk, so a
 * C1 control split across reads is still seen.
 */
export class ServerLines {
  private heldC2 = false;

  format(chunk: Buffer, atLineStart: boolean): Buffer {
    const bytes = this.heldC2 ? Buffer.concat([HELD_C2, chunk]) : chunk;
    let end = bytes.length;
    this.heldC2 = end > 0 && bytes[end - 1] === C2;
    if (this.heldC2) end--;
    const out: Buffer[] = [];
    let from = 0;
    let lineStart = atLineStart;
    for (let i = 0; i < end; i++) {
      const c = bytes[i]!;
      if (lineStart) {
        out.push(bytes.subarray(from, i), c === 0x0a ? PREFIX_BARE : PREFIX);
        from = i;
        lineStart = false;
      }
      if (c === 0x0a) {
        lineStart = true;
        continue;
      }
      let size = 0;
      if ((c < 0x20 && c !== 0x09) || c === 0x7f) size = c === 0x0d && i + 1 < end && bytes[i + 1] === 0x0a ? 0 : 1;
      else if (c === C2 && i + 1 < end && bytes[i + 1]! >= 0x80 && bytes[i + 1]! <= 0x9f) size = 2;
      if (size === 0) continue;
      out.push(bytes.subarray(from, i), Buffer.from(hexBytes(bytes, i, size)));
      i += size - 1;
      from = i + 1;
    }
    if (from === 0 && out.length === 0) return end === bytes.length ? bytes : bytes.subarray(0, end);
    out.push(bytes.subarray(from, end));
    return Buffer.concat(out);
  }
}

function hexBytes(bytes: Buffer, at: number, size: number): string {
  let text = '';
  for (let i = at; i < at + size; i++) text += `\\x${bytes[i]!.toString(16).padStart(2, '0')}`;
  return text;
}

/**
 * Recorded server stderr as `mcpguard logs` shows it: each line after
 * SERVER_PREFIX (an empty line after the prefix alone).
 */
export function serverText(text: string): string {
  let out = '';
  for (let at = 0; at < text.length; ) {
    const nl = text.indexOf('\n', at);
    const end = nl === -1 ? text.length : nl + 1;
    out += (nl === at ? SERVER_PREFIX.trimEnd() : SERVER_PREFIX) + text.slice(at, end);
    at = end;
  }
  return out;
}
