/**
 * Spawning the child in its own process group and signalling that group.
 * Node's `detached: true` makes the child a session and group leader (setsid),
 * so `kill(-pid)` reaches it and every descendant that stayed in its group.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { groupMembers } from './proctree.js';

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

/** Start `command` with three pipes, as the leader of a new process group. */
export function spawnInGroup(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcessWithoutNullStreams {
  return spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    windowsHide: true,
  });
}

/** Send `signal` to the whole group led by `pgid`; false if the group is gone. */
export function signalGroup(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** True while any process of the group is alive (not counting zombies where procfs can tell). */
export function groupAlive(pgid: number): boolean {
  // The signal is cheap (µs); the procfs scan (ms) only tells live members from zombies.
  if (!signalGroup(pgid, 0)) return false;
  const members = groupMembers(pgid);
  return members === null || members.length > 0;
}

/** Exit code convention of shells: the code, or 128 + signal number. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null, signals: Record<string, number>): number {
  if (code !== null) return code;
  if (signal !== null) return 128 + (signals[signal] ?? 0);
  return 1;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** When the exit was observed (ms since the epoch). */
  at: number;
}

/** A child whose `spawn`/`error` and `exit` are already being watched. */
export interface StartedChild {
  /** null if spawn threw (e.g. an empty command): `spawned` then holds the error. */
  child: ChildProcessWithoutNullStreams | null;
  /** null once running; the error if it could not start (then `exit` never comes). */
  spawned: Promise<Error | null>;
  exited: Promise<ExitInfo>;
  /** Stop holding the output streams; call after attaching the real readers. */
  release(): void;
}

/**
 * Spawn and attach the lifecycle listeners in the same tick: an `error` with no
 * listener would crash mcpguard, and an `exit` emitted before anyone listens
 * would be lost. Until the session reads them, the output streams are held by
 * a 'readable' listener that reads nothing: without any listener, Node
 * discards a stream's unread bytes when the child exits ("flushStdio"); with
 * one, they wait (up to the stream's buffer, then in the pipe: backpressure).
 */
export function startChild(command: string, args: readonly string[], options: SpawnOptions = {}): StartedChild {
  let child: ChildProcessWithoutNullStreams;
  try {
    child = spawnInGroup(command, args, options);
  } catch (error) {
    // Node throws for some failures (an empty command, ENOTDIR) and emits 'error' for others: one path for both.
    return { child: null, spawned: Promise.resolve(error as Error), exited: new Promise<ExitInfo>(() => {}), release: () => {} };
  }
  const spawned = new Promise<Error | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', (error) => resolve(error));
  });
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal, at: Date.now() }));
  });
  const hold = (): void => {};
  child.stdout.on('readable', hold);
  child.stderr.on('readable', hold);
  const release = (): void => {
    // With 'data' listeners attached, removing the last 'readable' one resumes the flow.
    child.stdout.off('readable', hold);
    child.stderr.off('readable', hold);
  };
  return { child, spawned, exited, release };
}
