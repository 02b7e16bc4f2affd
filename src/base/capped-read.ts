/**
 * Reading a small file named on the command line (--config, --audit-key-file)
 * without trusting it to be small or to be a regular file. The size is never
 * taken from stat: /dev/zero, FIFOs and /proc files report 0. Bytes are read
 * from the descriptor in bounded chunks until EOF or one byte past the cap.
 *
 * The open is non-blocking, so a FIFO that nobody writes to cannot hang
 * mcpguard in open(): it reads as empty. A FIFO whose writer exists but is
 * slow (a process substitution, `--config <(make-config)`) is polled until
 * WAIT_MS have passed without a byte, and the whole read has DEADLINE_MS: a
 * writer that trickles a byte now and then (each one resetting the silence)
 * cannot hold start-up for ever.
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';

/** How long a silent writer (FIFO, terminal) may keep mcpguard waiting, ms. */
export const WAIT_MS = 5000;
/** The most a whole read may take, however often the writer speaks, ms. */
export const DEADLINE_MS = 10000;
const POLL_MS = 10;

export type CappedRead = { bytes: Buffer; tooBig: false } | { bytes: null; tooBig: true };

/**
 * Read all of `path` if it holds at most `cap` bytes. Errors of open/read are
 * thrown as they come (ENOENT, EACCES, EISDIR …); a writer silent for WAIT_MS,
 * or a read not done within DEADLINE_MS, throws an Error without a code that
 * says so.
 */
export function readCapped(path: string, cap: number): CappedRead {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const buf = Buffer.allocUnsafe(cap + 1);
    let got = 0;
    const startedAt = Date.now();
    let quietSince = startedAt;
    while (got <= cap) {
      // Checked whether the last read brought bytes or not: each byte resets only the silence.
      if (Date.now() - startedAt >= DEADLINE_MS)
        throw new Error(`not read to its end within ${DEADLINE_MS} ms (${got} bytes so far: a FIFO or terminal whose writer trickles)`);
      let n: number;
      try {
        n = readSync(fd, buf, got, buf.length - got, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
        if (Date.now() - quietSince >= WAIT_MS) throw new Error(`nothing to read for ${WAIT_MS} ms (a FIFO or terminal whose writer is silent)`);
        sleep(POLL_MS);
        continue;
      }
      if (n === 0) break;
      got += n;
      quietSince = Date.now();
    }
    return got > cap ? { bytes: null, tooBig: true } : { bytes: buf.subarray(0, got), tooBig: false };
  } finally {
    closeSync(fd);
  }
}

// Start-up is synchronous (nothing else runs yet): a plain blocking sleep.
function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
