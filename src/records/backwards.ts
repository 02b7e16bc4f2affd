/**
 * A session log read from its last line to its first, one chunk at a time,
 * so a view can print the newest first without holding the log: memory is
 * one chunk and the line that spans two. Bytes after the last newline (a torn
 * write) are not a line and are skipped, as LineReader skips them.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';

const CHUNK = 1 << 20;

/** Open a log as read.ts does: a regular file named directly (no symlink followed, no FIFO waited on). */
function openRegular(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new Error('a symbolic link, not followed');
    throw error;
  }
  try {
    if (!fstatSync(fd).isFile()) throw new Error('not a regular file');
  } catch (error) {
    closeSync(fd);
    throw error;
  }
  return fd;
}

export class BackwardLineReader {
  private fd: number | null;
  /** File offset of buf[0]. */
  private bufStart: number;
  private buf = Buffer.alloc(0);
  /** The unread lines are buf[0, end); buf[end - 1] is a newline, or end is 0. -1: the last newline is not found yet. */
  private end = -1;

  constructor(path: string, private readonly chunk = CHUNK) {
    this.fd = openRegular(path);
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

  /** Read the chunk before buf[0] in front of the unread part; false at the start of the file. */
  private more(): boolean {
    if (this.fd === null || this.bufStart === 0) return false;
    const length = Math.min(this.chunk, this.bufStart);
    const start = this.bufStart - length;
    const keep = this.end === -1 ? this.buf.length : this.end;
    const next = Buffer.allocUnsafe(length + keep);
    let got = 0;
    while (got < length) {
      const n = readSync(this.fd, next, got, length - got, start + got);
      if (n === 0) throw new Error('the log shrank while it was read');
      got += n;
    }
    this.buf.copy(next, length, 0, keep);
    this.buf = next;
    this.bufStart = start;
    if (this.end !== -1) this.end += length;
    return true;
  }
}
