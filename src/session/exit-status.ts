/**
 * How a session's ending reads: the exit status mcpguard gives, a server's
 * exit in words, and the summary of a session whose server never started.
 */
import { constants } from 'node:os';
import { exitCodeOf, type ExitInfo } from '../process/child.js';
import { explainSpawnFailure } from '../process/spawn-failure.js';
import { emptyCounters } from '../relay/counters.js';
import type { SessionSummary } from './session-types.js';

/**
 * What mcpguard exits with: the last generation's status; but when a restart
 * could not bring a usable server back (restart_failed, restart_incompatible),
 * the status of the crash it could not recover from, never 0 (1 if that
 * generation exited 0: --restart always, or a server stopped for closing a pipe).
 */
export function sessionStatus(reason: string | null, exit: ExitInfo, crashed: ExitInfo | null): number {
  const signals = constants.signals as unknown as Record<string, number>;
  if (crashed === null || (reason !== 'restart_failed' && reason !== 'restart_incompatible')) return exitCodeOf(exit.code, exit.signal, signals);
  return exitCodeOf(crashed.code, crashed.signal, signals) || 1;
}

export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `killed by ${signal}` : `exit code ${code}`;
}

/** The summary of a session whose server could not be started: its status and reason from the spawn's error. */
export function spawnFailedSummary(command: string, error: Error | null, startedAt: number): SessionSummary {
  const { status, why: message } = explainSpawnFailure(command, error);
  return {
    endReason: 'spawn_failed',
    pid: null,
    exitCode: null,
    signal: null,
    status,
    spawnError: message,
    forcedKill: false,
    unkillable: false,
    signalsSent: [],
    survivors: [],
    foundByMarker: null,
    triggerToExitMs: null,
    streamEnd: { stdout: 'not_started', stderr: 'not_started' },
    stderrBytes: 0,
    counters: emptyCounters(),
    protocol: { era: 'unknown', version: null, decidedBy: null },
    outputDropped: 0,
    outputUnflushedBytes: 0,
    startedAt,
    endedAt: Date.now(),
  };
}
