/**
 * Session ids, made without node:crypto. The command line needs the id before
 * it starts the server (the server's environment carries it), on the start-up
 * path, where loading the crypto module would cost 4 to 7 ms; 4 bytes from
 * /dev/urandom cost tens of microseconds. Ids sort by creation time (to the
 * second; the random tail keeps concurrent sessions apart) and double as file
 * names, so they are restricted to characters that cannot leave the record
 * directory.
 */
import { closeSync, openSync, readSync } from 'node:fs';

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** A new session id such as `s_20261129T112233Z_1a2b3c4d`. */
export function newSessionId(now: Date = new Date()): string {
  // Built field by field: on a cold start a regex over toISOString() costs more than the rest together.
  const stamp = `${now.getUTCFullYear()}${two(now.getUTCMonth() + 1)}${two(now.getUTCDate())}T${two(now.getUTCHours())}${two(now.getUTCMinutes())}${two(now.getUTCSeconds())}Z`;
  return `s_${stamp}_${randomHex32()}`;
}

/** True when `id` is safe to use as a session id and file name. */
export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

function two(n: number): string {
  return n < 10 ? `0${n}` : `${n}`;
}

/** 8 random hex digits. */
function randomHex32(): string {
  const buf = Buffer.alloc(4);
  let got = 0;
  try {
    const fd = openSync('/dev/urandom', 'r');
    try {
      got = readSync(fd, buf, 0, 4, null);
    } finally {
      closeSync(fd);
    }
  } catch {
    // no /dev/urandom (Windows): the tail only has to keep concurrent sessions apart
  }
  const n = got === 4 ? buf.readUInt32BE(0) : Math.floor(Math.random() * 0x100000000);
  return n.toString(16).padStart(8, '0');
}
