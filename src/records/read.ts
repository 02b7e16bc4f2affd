/**
 * Reading record files back: bytes split into lines, a log streamed line by
 * line or read at its two ends only, and the list of session logs in a
 * directory. Shared by verify (which needs each line's exact bytes) and the
 * views (which only need the parsed records, and never a whole large log).
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { LogRecord } from './chain.js';

/** A file's complete lines (without their `\n`) and the bytes after the last `\n`, if any. */
export interface SplitLog {
  lines: Buffer[];
  /** Non-empty bytes not ended by `\n`: a torn write, or something appended by hand. */
  tail: Buffer | null;
}

/** Split on `\n` only; every other byte, `\r` included, belongs to its line. */
export function splitLines(bytes: Buffer): SplitLog {
  const lines: Buffer[] = [];
  let start = 0;
  for (let nl = bytes.indexOf(10, start); nl !== -1; nl = bytes.indexOf(10, start)) {
    lines.push(bytes.subarray(start, nl));
    start = nl + 1;
  }
  return { lines, tail: start < bytes.length ? bytes.subarray(start) : null };
}

/** A line parsed as a JSON object, or null for anything else (invalid JSON, an array, a number). */
export function parseRecord(line: Buffer): LogRecord | null {
  try {
    const value: unknown = JSON.parse(line.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as LogRecord) : null;
  } catch {
    return null;
  }
}

/** Absolute paths of the `*.jsonl` files in `dir`, sorted by name (session ids sort by time); reading them is readLogFile's to judge. */
export function listLogFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.name.endsWith('.jsonl') && !entry.isDirectory())
    .map((entry) => join(dir, entry.name))
    .sort();
}

/** Open a session log for reading: a regular file named directly (see readLogFile). */
export function openLog(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Linux and macOS say ELOOP for a symlink under O_NOFOLLOW, FreeBSD EMLINK.
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

/**
 * The bytes of a session log, which must be a regular file named directly: a
 * symlink is not followed (the relay never makes one) and a FIFO does not
 * hang the reader. Throws on anything else, with the reason.
 */
export function readLogFile(path: string): Buffer {
  const fd = openLog(path);
  try {
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

const CHUNK = 1 << 20;

/**
 * A session log read one line at a time: memory holds one chunk (and the line
 * that spans two), whatever the file's size. Lines are views into the chunk:
 * use each before asking for the next. Opening throws like readLogFile.
 */
/**
 * The buffer of the last LineReader closed, for the next one: a view that
 * reads many logs one after the other (`show CALL` streams them all) would
 * otherwise leave a 1 MiB buffer per log to the collector, outside the heap
 * (89 MB peak over 41 logs, 59 MB with it).
 */
let spare: ReturnType<typeof Buffer.allocUnsafe> | null = null;

export class LineReader {
  /** 1-based number of the line `next` returned last. */
  lineNumber = 0;
  /** Set at the end: the file ends in bytes not ended by `\n`. */
  torn = false;
  /** Set at the end: those bytes (a torn last record, or something appended by hand); else null. */
  rest: Buffer | null = null;
  private fd: number | null;
  /** The buffer the file is read into; `buf` is its filled part. */
  private store = Buffer.alloc(0);
  private buf = this.store;
  private pos = 0;
  private eof = false;
  /** Bytes read so far; reading stops at `limit` (the file as it was when a follower took its snapshot). */
  private consumed = 0;

  constructor(
    path: string,
    private readonly limit = Infinity,
  ) {
    this.fd = openLog(path);
  }

  /** The next complete line without its `\n`, or null at the end (the file is closed then). */
  next(): Buffer | null {
    for (;;) {
      const nl = this.buf.indexOf(10, this.pos);
      if (nl !== -1) {
        const line = this.buf.subarray(this.pos, nl);
        this.pos = nl + 1;
        this.lineNumber++;
        return line;
      }
      if (this.eof || this.fd === null) {
        this.torn = this.pos < this.buf.length;
        if (this.torn) this.rest = Buffer.from(this.buf.subarray(this.pos));
        this.close();
        return null;
      }
      this.fill();
    }
  }

  /**
   * The next complete line that contains `needle` (which holds no newline),
   * or null at the end. Lines without it are stepped over a buffer at a time
   * (one memchr-like search per buffer, not one per line), so `lineNumber`
   * is not kept up to date by this method.
   */
  nextContaining(needle: Buffer): Buffer | null {
    for (;;) {
      const hit = this.buf.indexOf(needle, this.pos);
      if (hit !== -1) {
        const start = this.buf.lastIndexOf(10, hit) + 1;
        const nl = this.buf.indexOf(10, hit + needle.length);
        if (nl !== -1) {
          this.pos = nl + 1;
          return this.buf.subarray(start, nl);
        }
        // The line goes on past what was read: read more, from its start.
        this.pos = Math.max(this.pos, start);
      } else {
        // No match in what is here: only the unfinished last line (which may end in part of the needle) is kept.
        const last = this.buf.lastIndexOf(10);
        if (last + 1 > this.pos) this.pos = last + 1;
      }
      if (this.eof || this.fd === null) {
        this.pos = this.buf.length; // what is left has no newline: no complete line
        this.close();
        return null;
      }
      this.fill();
    }
  }

  /** Stop early: release the descriptor (and the buffer, for the next reader). */
  close(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    closeSync(fd);
    // What was not handed out (a torn tail) is kept apart; the buffer serves the next reader.
    this.buf = Buffer.from(this.buf.subarray(this.pos));
    this.pos = 0;
    if (this.store.length === CHUNK) spare = this.store;
    this.store = Buffer.alloc(0);
  }

  // The rest of the current chunk moved to the front of the same buffer, then as much of the file as fits
  // (one buffer for the whole file: the lines handed out before are no longer in use). A line longer than
  // half the buffer doubles it.
  private fill(): void {
    const rest = this.buf.length - this.pos;
    if (this.store.length === 0 && spare !== null) {
      this.store = spare;
      spare = null;
      this.buf.copy(this.store, 0, this.pos); // nothing yet: buf is empty
    } else if (this.store.length === 0 || rest > this.store.length / 2) {
      const grown = Buffer.allocUnsafe(Math.max(CHUNK, this.store.length * 2));
      this.buf.copy(grown, 0, this.pos);
      this.store = grown;
    } else {
      this.store.copyWithin(0, this.pos, this.buf.length); // buf starts at store[0]
    }
    const room = Math.min(this.store.length - rest, this.limit - this.consumed);
    const n = room <= 0 ? 0 : readSync(this.fd!, this.store, rest, room, null);
    this.consumed += n;
    if (n === 0) this.eof = true;
    this.buf = this.store.subarray(0, rest + n);
    this.pos = 0;
  }
}

/** The first and last lines of a log, read without reading what lies between. */
export interface LogEdges {
  /** Up to `headLines` complete lines from the start. */
  head: Buffer[];
  /** Up to `tailLines` complete lines from the end (the torn bytes after the last `\n` excluded). */
  tail: Buffer[];
  /** Every complete line, when the file was small enough to read whole; else null. */
  all: Buffer[] | null;
  torn: boolean;
}

const WHOLE_BELOW = 256 * 1024;
const EDGE_LIMIT = 16 * 1024 * 1024;

/**
 * Read the start and the end of a log: a small file whole, a large one in
 * chunks from each end until enough lines are in (or EDGE_LIMIT bytes, for a
 * log of absurdly long lines). Opening throws like readLogFile.
 */
export function readLogEdges(path: string, headLines: number, tailLines: number): LogEdges {
  const fd = openLog(path);
  try {
    const size = fstatSync(fd).size;
    if (size <= WHOLE_BELOW) {
      const { lines, tail } = splitLines(readFileSync(fd));
      return { head: lines.slice(0, headLines), tail: tailLines === 0 ? [] : lines.slice(-tailLines), all: lines, torn: tail !== null };
    }
    const front = readSpan(fd, 0, Math.min(size, 64 * 1024));
    let head = front;
    while (count(head, headLines) && head.length < Math.min(size, EDGE_LIMIT)) {
      head = Buffer.concat([head, readSpan(fd, head.length, Math.min(head.length, size - head.length))]);
    }
    const heads = splitLines(head).lines.slice(0, headLines);
    if (tailLines === 0) return { head: heads, tail: [], all: null, torn: readSpan(fd, size - 1, 1)[0] !== 10 };
    let back = readSpan(fd, size - 64 * 1024, 64 * 1024);
    // tailLines + 1 newlines: the first piece before them may be part of a longer line.
    while (count(back.subarray(0, -1), tailLines + 1) && back.length < Math.min(size, EDGE_LIMIT)) {
      const more = Math.min(back.length, size - back.length);
      back = Buffer.concat([readSpan(fd, size - back.length - more, more), back]);
    }
    const torn = back.at(-1) !== 10;
    const backLines = splitLines(back).lines;
    if (back.length < size) backLines.shift(); // starts mid-line
    return { head: heads, tail: backLines.slice(-tailLines), all: null, torn };
  } finally {
    closeSync(fd);
  }
}

/** True while `bytes` holds fewer than `n` newlines. */
function count(bytes: Buffer, n: number): boolean {
  let found = 0;
  for (let at = bytes.indexOf(10); at !== -1; at = bytes.indexOf(10, at + 1)) if (++found >= n) return false;
  return true;
}

function readSpan(fd: number, position: number, length: number): Buffer {
  const bytes = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, bytes, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return bytes.subarray(0, got);
}

/** Parse and visit the lines of data[0, end) (complete lines) that contain one of `needles`, in order. */
function visitContaining(data: Buffer, end: number, needles: readonly Buffer[], visit: (record: Record<string, unknown>) => void): void {
  // Each needle's next place at or after `pos` (-1: none before `end`), found once and searched again only when passed.
  const next = needles.map(() => -2);
  for (let pos = 0; ; ) {
    let hit = -1;
    for (let i = 0; i < needles.length; i++) {
      if (next[i] === -2 || (next[i]! !== -1 && next[i]! < pos)) {
        const found = data.indexOf(needles[i]!, pos);
        next[i] = found === -1 || found >= end ? -1 : found;
      }
      if (next[i]! !== -1 && (hit === -1 || next[i]! < hit)) hit = next[i]!;
    }
    if (hit === -1) return;
    const nl = data.indexOf(10, hit);
    const record = parseRecord(data.subarray(data.lastIndexOf(10, hit) + 1, nl));
    if (record !== null) visit(record);
    pos = nl + 1;
  }
}

const CHUNK_BYTES = 256 << 10;
/** Log bytes read per forEachLine call (a line longer than this is still read whole). */
const READ_BYTES = 1 << 20;
/** How often a followed log (`logs --follow`, `activity --follow`) is read again once its end was reached. */
export const FOLLOW_POLL_MS = 200;

/**
 * The complete lines of a log from byte `from` on, about READ_BYTES of them,
 * parsed (only the lines `keep` accepts, when given: a test of the line, or
 * needles (no newline in them) one of which the line must contain, searched
 * for a buffer at a time instead of line by line); returns the offset after
 * the last complete line, where the next read goes on, and whether the file
 * was read to its end. The file must be
 * a regular file named directly (as readLogFile wants it); an unparsable line
 * is skipped.
 */
export function forEachLine(
  file: string,
  from: number,
  keep: ((line: Buffer) => boolean) | readonly Buffer[] | null,
  visit: (record: Record<string, unknown>) => void,
  /** Stop after about this many bytes (whole lines); a caller that holds what it visits reads less at a time. */
  batch = READ_BYTES,
): { offset: number; eof: boolean } {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new Error(`${file}: a symbolic link, not followed`);
    throw error;
  }
  let offset = from;
  let eof = false;
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${file}: not a regular file`);
    // One buffer, reused: an unfinished line moves to its start and the next read lands after it.
    let buf = Buffer.allocUnsafe(2 * CHUNK_BYTES);
    let have = 0;
    for (let at = from; offset - from < batch; ) {
      if (buf.length - have < CHUNK_BYTES) {
        const bigger = Buffer.allocUnsafe(2 * buf.length); // a line longer than the buffer
        buf.copy(bigger, 0, 0, have);
        buf = bigger;
      }
      const n = readSync(fd, buf, have, CHUNK_BYTES, at);
      if (n === 0) {
        eof = true;
        break;
      }
      at += n;
      const data = buf.subarray(0, have + n);
      let start = 0;
      if (keep !== null && typeof keep !== 'function') {
        start = data.lastIndexOf(10) + 1; // the complete lines end here
        visitContaining(data, start, keep, visit);
      } else {
        for (let nl = data.indexOf(10, have); nl !== -1; nl = data.indexOf(10, start)) {
          const line = data.subarray(start, nl);
          start = nl + 1;
          if (keep !== null && !keep(line)) continue;
          const record = parseRecord(line);
          if (record !== null) visit(record);
        }
      }
      offset += start;
      have = data.length - start;
      buf.copy(buf, 0, start, data.length);
    }
  } finally {
    closeSync(fd);
  }
  return { offset, eof };
}
