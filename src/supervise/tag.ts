/**
 * Which generation of the server each call was dispatched to (--restart).
 * A field of the call: a WeakMap beside it cost about a microsecond per call
 * and an ephemeron table for the collector to walk.
 */
import type { Call } from '../calls.js';
import type { SessionObserver } from '../observer.js';

/** The generation the call was handed to, or null if it never reached a server. */
export function generationOf(call: Call): number | null {
  return call.generation;
}

/** An observer, first in line, that tags each call with the generation running when it is dispatched. */
export function generationTagger(current: () => number): SessionObserver {
  return {
    callDispatched(call: Call): void {
      call.generation = current();
    },
  };
}
