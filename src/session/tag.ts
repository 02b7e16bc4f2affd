/**
 * Which generation of the server each call was dispatched to (--restart),
 * set in the call's `generation` field (a WeakMap beside the call cost about
 * a microsecond per call and an ephemeron table for the collector to walk).
 */
import type { Call } from '../mcp/call.js';
import type { SessionObserver } from '../relay/observer.js';

/** An observer, first in line, that tags each call with the generation running when it is dispatched. */
export function generationTagger(current: () => number): SessionObserver {
  return {
    callDispatched(call: Call): void {
      call.generation = current();
    },
  };
}
