/**
 * Reading record files back: bytes split into lines, and the list of session
 * logs in a directory. Shared by verify (which needs each line's exact bytes)
 * and the views (which only need the parsed records).
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, readdirSync } from 'node:fs';
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

/**
 * The bytes of a session log, which must be a regular file named directly: a
 * symlink is not followed (the relay never makes one) and a FIFO does not
 * hang the reader. Throws on anything else, with the reason.
 */
export function readLogFile(path: string): Buffer {
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
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Absolute paths of the `*.jsonl` files in `dir`, sorted by name (session ids sort by time); reading them is readLogFile's to judge. */
export function listLogFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.name.endsWith('.jsonl') && !entry.isDirectory())
    .map((entry) => join(dir, entry.name))
    .sort();
}
