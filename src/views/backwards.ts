/**
 * A session log read from its last line to its first, one chunk at a time,
 * so a view can print the newest first without holding the log: memory is
 * one buffer of two chunks (more only for a line longer than a chunk). Bytes after the last newline (a torn
 * write) are not a line and are skipped, as LineReader skips them.
 */
import { closeSync, fstatSync, readSync } from 'node:fs';
import { openLog } from '../records/read.js';

const CHUNK = 1 << 20;

export class BackwardLineReader {
  private fd: number | null;
  /** File offset of buf[0]. */
  private bufStart: number;
  private store = Buffer.alloc(0);
  private buf = this.store;
  /** The unread lines are buf[0, end); buf[end - 1] is a newline, or end is 0. -1: the last newline is not found yet. */
  private end = -1;

  constructor(
    path: string,
    private readonly chunk = CHUNK,
  ) {
    this.fd = openLog(path);
    this.bufStart = fstatSync(this.fd).size;
  }

  /** The previous complete line (without its `\n`), or null at the start of the file (the file is closed then). */
  next(): Buffer | null {
    for (;;) {
      if (this.end === -1) {
        const nl = this.buf.lastIndexOf(10);
        if (nl !== -1) this.end = nl + 1;
        else if (!this.more()) return this.finish();
        continue;
      }
      if (this.end === 0) return this.finish();
      const nl = this.end >= 2 ? this.buf.lastIndexOf(10, this.end - 2) : -1;
      if (nl !== -1 || this.bufStart === 0) {
        const line = this.buf.subarray(nl + 1, this.end - 1);
        this.end = nl + 1;
        return line;
      }
      if (!this.more()) return this.finish();
    }
  }

  /** Stop early: release the descriptor. */
  close(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    closeSync(fd);
  }

  private finish(): null {
    this.close();
    return null;
  }

  /**
   * Read the chunk before buf[0] in front of the unread part; false at the
   * start of the file. One buffer serves the whole file (the lines handed out
   * before are no longer in use); it grows only for a line longer than a chunk.
   */
  private more(): boolean {
    if (this.fd === null || this.bufStart === 0) return false;
    const length = Math.min(this.chunk, this.bufStart);
    const start = this.bufStart - length;
    const keep = this.end === -1 ? this.buf.length : this.end;
    if (this.store.length < length + keep) {
      const grown = Buffer.allocUnsafe(Math.max(2 * this.chunk, 2 * (length + keep)));
      this.buf.copy(grown, length, 0, keep);
      this.store = grown;
    } else {
      this.store.copyWithin(length, this.buf.byteOffset - this.store.byteOffset, this.buf.byteOffset - this.store.byteOffset + keep);
    }
    let got = 0;
    while (got < length) {
      const n = readSync(this.fd, this.store, got, length - got, start + got);
      if (n === 0) throw new Error('the log shrank while it was read');
      got += n;
    }
    this.buf = this.store.subarray(0, length + keep);
    this.bufStart = start;
    if (this.end !== -1) this.end += length;
    return true;
  }
}
