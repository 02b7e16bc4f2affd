/**
 * The two hooks the relay calls at fixed points of a line's way, for the
 * layers above it that must see or change what passes without owning it:
 *
 * - a LineTap sees each raw line first, before the relay classifies it (the
 *   session's restart code keeps the handshake, and takes the answers to its
 *   own replayed requests, this way);
 * - a ResponseDecorator may replace the frame of a single response that ends
 *   a call, just before the relay writes it to the client (the stderr
 *   excerpt of a failed tools/call, stderr/decorate.ts).
 *
 * Observers (observer.ts) hear of calls; these see lines and frames.
 */
import type { Call } from '../mcp/call.js';
import type { LineEvent } from '../wire/framing.js';
import type { Response } from '../wire/jsonrpc.js';

/** Sees every line, in each direction, before the relay decides its fate. */
export interface LineTap {
  /** A client line, before the relay's checks: the tap only looks, the relay still decides. */
  clientLine?(event: LineEvent): void;
  /**
   * A server line, before the relay's checks. True: the tap took it (an
   * answer to one of mcpguard's own requests), and neither a later tap nor
   * the relay sees it; it never reaches the client.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a tap that only looks returns nothing; only one that takes a line says true
  serverLine?(event: LineEvent): boolean | void;
}

/** May return a replacement frame for a single response that ends a call (null: the response goes out as it came). */
export type ResponseDecorator = (call: Call, response: Response) => Buffer | null;
