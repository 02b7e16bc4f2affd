/**
 * How a session's ending reads: the exit status mcpguard gives, and a
 * server's exit in words.
 */
import { constants } from 'node:os';
import { exitCodeOf, type ExitInfo } from '../process/child.js';

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
