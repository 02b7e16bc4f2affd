/**
 * Session ids, made without node:crypto. The command line needs the id before
 * it starts the server (the server's environment carries it), on the start-up
 * path, where loading the crypto module would cost 4 to 7 ms; 4 bytes from
 * /dev/urandom cost microseconds. Ids sort by creation time (to the second;
 * the random tail keeps concurrent sessions apart) and double as file names,
 * so they are restricted to characters that cannot leave the record directory.
 */
import { closeSync, openSync, readSync } from 'node:fs';

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** A new session id such as `s_20261129T112233Z_1a2b3c4d`. */
export function newSessionId(now: Date = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  return `s_${stamp}_${randomHex(4)}`;
}

/** True when `id` is safe to use as a session id and file name. */
export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

function randomHex(bytes: number): string {
  const buf = Buffer.alloc(bytes);
  let got = 0;
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      got = readSync(fd, buf, 0, bytes, null);
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /dev/urandom (Windows): the tail only has to keep concurrent sessions apart
  }
  for (let i = got; i < bytes; i++) buf[i] = Math.floor(Math.random() * 256);
  return buf.toString('hex');
}
