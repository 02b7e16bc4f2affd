/**
 * What a session reports as it runs. Records (the audit log) and stderr
 * accounting subscribe here instead of reaching into the relay. Every method is
 * called synchronously at the moment it names: `callStarted` runs before the
 * frame is forwarded, which is what makes the audit log write-ahead.
 */
import type { Call } from '../mcp/call.js';
import type { ServerInfo } from '../mcp/server-info.js';

export type Direction = 'client' | 'child';

export interface Rejection {
  direction: Direction;
  /** Line number within that direction's stream (1-based). */
  line: number;
  /** JSON-RPC code answered (to the client; to the server for its requests refused over the cap), null for child noise. */
  code: number | null;
  reason: string;
  /** The frame's bytes when they were kept (never for oversize lines). */
  frame: Buffer | null;
  /** The line's length in bytes, without its newline. */
  bytes: number;
  /** The protocol-era rule it broke, when that is why (mcp/era.ts). */
  rule?: string;
  /** What mcpguard did with it: refused (the default), or forwarded and only reported (--era-rules warn, or a rule that only flags). */
  action?: 'refused' | 'forwarded';
}

export interface SessionObserver {
  /** Before the call's frame is forwarded. Returning false vetoes the dispatch (the record could not be written). */
  // biome-ignore lint/suspicious/noConfusingVoidType: most observers return nothing; only one that could not record says false
  callStarted?(call: Call): boolean | void;
  callDispatched?(call: Call): void;
  callEnded?(call: Call): void;
  rejected?(rejection: Rejection): void;
  /** The server named itself (serverInfo in a result): once, the first time. */
  serverInfo?(info: ServerInfo): void;
}
