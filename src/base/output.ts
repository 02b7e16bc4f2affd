/**
 * mcpguard's own stdout and stderr as non-blocking streams.
 *
 * Node makes `process.stdout`/`process.stderr` synchronous when they are pipes
 * on Linux: one write to a full pipe would freeze the event loop, and with it
 * the draining of the child's stderr. So mcpguard never touches them and opens
 * its own stream on the descriptor: a libuv pipe for FIFOs and sockets, and a
 * synchronous write for files and terminals (those do not stall on a reader).
 */
import { fstatSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';
import { Writable } from 'node:stream';

/** Open fd 1 or 2 for writing without ever blocking the event loop on a pipe. */
export function openOutput(fd: number): Writable {
  let isStreamLike = false;
  try {
    const stat = fstatSync(fd);
    isStreamLike = stat.isFIFO() || stat.isSocket();
  } catch {
    // A closed descriptor: every write below fails with EBADF, reported as 'error'.
  }
  if (isStreamLike) {
    const socket = new Socket({ fd, readable: false, writable: true });
    // Our own descriptor must never keep mcpguard alive on its own.
    socket.unref();
    return socket;
  }
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      try {
        let at = 0;
        while (at < chunk.length) at += writeSync(fd, chunk, at, chunk.length - at);
        callback();
      } catch (error) {
        callback(error as Error);
      }
    },
  });
}
