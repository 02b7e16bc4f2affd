/**
 * The hook the relay calls at a fixed point of a line's way, for the layers
 * above it that must change what passes without owning it: a
 * ResponseDecorator may replace the frame of a single response that ends a
 * call, just before the relay writes it to the client (the stderr excerpt of
 * a failed tools/call, stderr/decorate.ts).
 *
 * Observers (observer.ts) hear of calls; this sees frames.
 */
import type { Call } from '../mcp/call.js';
import type { Response } from '../wire/jsonrpc.js';

/** May return a replacement frame for a single response that ends a call (null: the response goes out as it came). */
export type ResponseDecorator = (call: Call, response: Response) => Buffer | null;
