/**
 * Parent-death cover. If mcpguard itself is SIGKILLed it runs no shutdown, so
 * a tiny `sh` keeps watch: it blocks reading a pipe whose only writer is
 * mcpguard. When mcpguard dies the pipe reaches EOF and the watchdog signals
 * the child's group: SIGTERM (+SIGCONT), then SIGKILL after the grace time.
 * On a normal end mcpguard kills the watchdog first, so it never fires at a
 * process group id that could since have been reused.
 * (The child also sees EOF on its stdin, which ends a cooperative server.)
 *
 * With a session marker it also signals, with each of the two signals, every
 * process whose /proc/PID/environ holds `MCPGUARD_SESSION_ID=<id>` (one
 * `grep -lzxF` over /proc; see marker.ts): a double-forked daemon left the
 * group. The processes are looked up afresh for each signal, so no pid is
 * kept across the grace time. Like mcpguard's own sweep it keeps to the
 * processes of its own user (`[ -O file ]`: another user's environ cannot be
 * read anyway unless the watchdog runs as root). The watchdog's own
 * environment is mcpguard's, which never carries the marker. No procfs or no
 * `grep -z`: the sweep signals nothing and the group is still covered.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { MARKER_VAR } from './marker.js';

export interface Watchdog {
  /** Stop watching (normal shutdown). */
  disarm(): void;
}

/** Arm the watchdog for group `pgid`; `marker` is the session id the child's environment carries (isSessionId-safe). */
export function armWatchdog(pgid: number, graceMs: number, marker: string | null = null): Watchdog {
  const seconds = Math.max(1, Math.ceil(graceMs / 1000));
  const script = `read _ignored; ${sweeper(marker)}kill -TERM -${pgid} 2>/dev/null; kill -CONT -${pgid} 2>/dev/null; sweep TERM CONT; sleep ${seconds}; kill -KILL -${pgid} 2>/dev/null; sweep KILL`;
  let dog: ChildProcess | null = null;
  try {
    dog = spawn('/bin/sh', ['-c', script], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    dog.on('error', () => {}); // no /bin/sh: no parent-death cover, nothing else changes
    dog.stdin?.on('error', () => {});
    dog.unref();
    (dog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  } catch {
    dog = null;
  }
  return {
    disarm() {
      if (dog === null || dog.exitCode !== null || dog.pid === undefined) return;
      try {
        process.kill(dog.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      dog = null;
    },
  };
}

/** The `sweep SIGNAL...` shell function: signal every process marked with `marker` (none without one). */
function sweeper(marker: string | null): string {
  // The id is restricted to [A-Za-z0-9_.-] (isSessionId): safe inside single quotes, and -F makes '.' literal.
  if (marker === null || !/^[A-Za-z0-9_.-]+$/.test(marker)) return 'sweep() { :; }; ';
  return `sweep() { for f in $(grep -lzxF '${MARKER_VAR}=${marker}' /proc/[0-9]*/environ 2>/dev/null); do [ -O "$f" ] || continue; f=\${f%/environ}; for s in "$@"; do kill -$s \${f#/proc/} 2>/dev/null; done; done; }; `;
}
