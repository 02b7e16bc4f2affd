/**
 * Probe sessions. A client that speaks MCP 2026-07-28 may learn the server's
 * era on an extra, short-lived copy of the command before the session proper
 * (the SDK v2 client in `auto` or pinned mode does): it sends
 * `server/discover`, reads the answer, then ends that copy with stdin EOF and
 * SIGTERM at once, and SIGKILL a second later. mcpguard's normal ending waits
 * for the child before it writes the session record and the seal; a server
 * slower to exit than that second would leave the log unsealed, which
 * `verify` must call a crash.
 *
 * So a session whose client sent nothing but `server/discover` requests,
 * every one answered by the server, and which the client then ended (stdin
 * EOF or a signal), is a probe: its record is written and sealed before the
 * child is waited for (run.ts), and the watchdog still covers the child if
 * mcpguard is killed while shutting it down.
 */
import type { Call } from '../mcp/call.js';
import type { Rejection, SessionObserver } from '../relay/observer.js';

const DISCOVER = 'server/discover';

/** Watches the calls of a session to tell, at its end, whether it was a probe. */
export class ProbeWatch implements SessionObserver {
  private discovers = 0;
  /** Anything that rules a probe out: another method, an unanswered or refused request, a refused client line. */
  private disqualified = false;
  private readonly open = new Set<string>();

  // Once ruled out, a session stays ruled out: the calls of an ordinary session cost one check each.
  callStarted(call: Call): void {
    if (this.disqualified) return;
    if (call.method === DISCOVER) this.discovers++;
    else this.disqualified = true;
    this.open.add(call.callId);
  }

  callEnded(call: Call): void {
    if (this.disqualified) return;
    // Ended without an attempt (a refused line with a readable id), or not by the server's answer.
    if (!this.open.delete(call.callId) || (call.state !== 'completed' && call.state !== 'error')) this.disqualified = true;
  }

  rejected(rejection: Rejection): void {
    if (rejection.direction === 'client') this.disqualified = true;
  }

  /** Whether a session ending for `reason` is a probe session (see the module comment). */
  isProbe(reason: string): boolean {
    const byClient = reason === 'client_eof' || reason.startsWith('signal_');
    return byClient && this.discovers > 0 && this.open.size === 0 && !this.disqualified;
  }
}
