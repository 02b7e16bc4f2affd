/**
 * The calls the gate is holding (waiting for mcpguard's own tools/list, a
 * person, or --approve-cmd), and how to stop waiting for each: a cancel, a
 * deadline or the session's end withdraws a call, and whatever it waited for
 * is then ignored.
 */
import type { Call } from '../mcp/call.js';

export class HeldCalls {
  private readonly stops = new Map<Call, () => void>();

  /** Hold `call` until release(); `stop` undoes the wait if it is withdrawn first. */
  hold(call: Call, stop: () => void): void {
    this.stops.set(call, stop);
  }

  release(call: Call): void {
    this.stops.delete(call);
  }

  /** Stop waiting for `call`: true if it was held. */
  withdraw(call: Call): boolean {
    const stop = this.stops.get(call);
    if (stop === undefined) return false;
    this.stops.delete(call);
    stop();
    return true;
  }

  calls(): Call[] {
    return [...this.stops.keys()];
  }

  /** Wait for `work` unless the call is withdrawn first (then null). */
  waitFor<T>(call: Call, work: Promise<T>): Promise<T | null> {
    return new Promise((resolve) => {
      let done = false;
      this.hold(call, () => {
        done = true;
        resolve(null);
      });
      void work.then((value) => {
        if (done) return;
        this.release(call);
        resolve(value);
      });
    });
  }
}
