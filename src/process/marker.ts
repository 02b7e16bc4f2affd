/**
 * The session marker. The child starts with `MCPGUARD_SESSION_ID=<session id>`
 * in its environment, and every process it starts inherits it, including a
 * daemon that forked twice and called setsid: once the middle process has
 * exited, such a daemon is re-parented to init, and no walk of the process
 * tree can find it. A sweep of the processes of the same user whose
 * /proc/PID/environ holds the exact entry can.
 *
 * /proc/PID/environ is the environment a process was exec'd with. A process
 * that exec's itself with a cleared or rewritten environment, or overwrites
 * that memory in place, drops the marker and is not found; so, unless mcpguard
 * runs as root, is one that made itself non-dumpable (its /proc files then
 * belong to root). mcpguard's own environment (and so its watchdog's) never
 * carries its own marker. Without procfs (macOS) the marker is still set, for
 * the server's own logs, and the sweep finds nothing.
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { readProc, type ProcInfo } from './proctree.js';

/** The environment variable that carries the session id to the child and its descendants. */
export const MARKER_VAR = 'MCPGUARD_SESSION_ID';

/** A copy of `env` with the marker set (replacing any inherited one). */
export function markedEnv(env: NodeJS.ProcessEnv, sessionId: string): NodeJS.ProcessEnv {
  return { ...env, [MARKER_VAR]: sessionId };
}

/**
 * One buffer for every environ read, grown when an environment does not fit.
 * Byte 0 is always NUL, so that every entry, the first one included, is found
 * as NUL + entry + NUL.
 */
let scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * Living processes of this user (other than mcpguard) whose environment holds
 * `MCPGUARD_SESSION_ID=<sessionId>` exactly; null without procfs.
 */
export function markedProcesses(sessionId: string): ProcInfo[] | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  const uid = process.getuid?.() ?? -1;
  const needle = Buffer.from(`\0${MARKER_VAR}=${sessionId}\0`, 'latin1');
  const found: ProcInfo[] = [];
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 0x30 || c > 0x39) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const length = readEnviron(pid, uid);
    if (length < 0 || scratch.subarray(0, length).indexOf(needle) < 0) continue;
    const info = readProc(pid);
    if (info !== null) found.push(info);
  }
  return found;
}

/**
 * Read /proc/PID/environ into `scratch` after a leading NUL and close it with
 * a NUL; returns the bytes used, or -1 if the process is gone, belongs to
 * another user or cannot be read. Another user's environ cannot be opened
 * unless mcpguard runs as root; the owner check keeps root to its own too.
 */
function readEnviron(pid: number, uid: number): number {
  let fd: number;
  try {
    fd = openSync(`/proc/${pid}/environ`, 'r');
  } catch {
    return -1;
  }
  try {
    if (fstatSync(fd).uid !== uid) return -1;
    scratch[0] = 0;
    let used = 1;
    for (;;) {
      if (used + 1 >= scratch.length) {
        const bigger = Buffer.allocUnsafe(scratch.length * 2);
        scratch.copy(bigger, 0, 0, used);
        scratch = bigger;
      }
      const n = readSync(fd, scratch, used, scratch.length - 1 - used, null);
      if (n === 0) break;
      used += n;
    }
    scratch[used] = 0;
    return used + 1;
  } catch {
    return -1;
  } finally {
    closeSync(fd);
  }
}
