/**
 * Parent-death cover. If mcpguard itself is SIGKILLed it runs no shutdown, so
 * a tiny `sh` keeps watch: it blocks reading a pipe whose only writer is
 * mcpguard. When mcpguard dies the pipe reaches EOF and the watchdog signals
 * the child's group: SIGTERM (+SIGCONT), then SIGKILL after the grace time.
 * On a normal end mcpguard kills the watchdog first, so it never fires at a
 * process group id that could since have been reused.
 * (The child also sees EOF on its stdin, which ends a cooperative server.)
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface Watchdog {
  /** Stop watching (normal shutdown). */
  disarm(): void;
}

export function armWatchdog(pgid: number, graceMs: number): Watchdog {
  const seconds = Math.max(1, Math.ceil(graceMs / 1000));
  const script = `read _ignored; kill -TERM -${pgid} 2>/dev/null; kill -CONT -${pgid} 2>/dev/null; sleep ${seconds}; kill -KILL -${pgid} 2>/dev/null`;
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
