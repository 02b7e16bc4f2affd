/**
 * What became of a forwarded line's bytes, for its calls (one call, or a
 * batch's): handed to the child's stdin (each call is dispatched: its clock
 * starts and the observers hear of it), or never (the stdin closed, or the
 * writer refused the frame): each call ends cancelled_before_dispatch and is
 * answered, since the server never saw it. The writer reports through one
 * small CallDelivery per forwarded line (CallKeeper.delivery).
 */
import type { Call } from '../mcp/call.js';
import { CONNECTION_CLOSED } from '../wire/jsonrpc.js';
import { QueueRefusal, type Delivery } from '../wire/writer.js';
import type { CallKeeper } from './relay-calls.js';

/** A forwarded line's Delivery: what the writer reports, applied to the line's calls. */
export class CallDelivery implements Delivery {
  constructor(
    private readonly keeper: CallKeeper,
    private readonly started: Call | readonly Call[],
  ) {}

  /** The calls' line was handed to the child's stdin. */
  dispatched(): void {
    const started = this.started;
    const now = Date.now();
    if (!Array.isArray(started)) return this.dispatchedAt(started as Call, now);
    for (const call of started as readonly Call[]) this.dispatchedAt(call, now);
  }

  private dispatchedAt(call: Call, now: number): void {
    if (call.state !== null) return;
    call.dispatchedAt = now;
    for (const o of this.keeper.observers) o.callDispatched?.(call);
  }

  /** The child's stdin was closed (EPIPE) before the calls' bytes got in: the server never saw them. */
  undelivered(error: Error): void {
    const started = this.started;
    for (const call of Array.isArray(started) ? (started as readonly Call[]) : [started as Call]) {
      if (call.state !== null) continue;
      this.keeper.counters.undelivered++;
      call.dispatchedAt = null;
      const why =
        error instanceof QueueRefusal
          ? error.message
          : `the server's stdin is closed (${(error as NodeJS.ErrnoException).code ?? error.message}); not delivered`;
      this.keeper.end(call, 'cancelled_before_dispatch', why);
      this.keeper.answer(call, CONNECTION_CLOSED, `mcpguard: ${why}`);
    }
  }
}
