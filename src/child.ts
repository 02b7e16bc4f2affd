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
  const members = groupMembers(pgid);
  return members === null ? signalGroup(pgid, 0) : members.length > 0;
}

/** Exit code convention of shells: the code, or 128 + signal number. */
export function exitCodeOf(code: number | null, signal: NodeJS.Signals | null, signals: Record<string, number>): number {
  if (code !== null) return code;
  if (signal !== null) return 128 + (signals[signal] ?? 0);
  return 1;
}
