/**
 * Which generation of the server each call was dispatched to (--restart).
 * Kept beside the call rather than in it: only the records read it.
 */
import type { Call } from '../calls.js';
import type { SessionObserver } from '../observer.js';

const generations = new WeakMap<Call, number>();

/** The generation the call was handed to, or null if it never reached a server. */
export function generationOf(call: Call): number | null {
  return generations.get(call) ?? null;
}

/** An observer, first in line, that tags each call with the generation running when it is dispatched. */
export function generationTagger(current: () => number): SessionObserver {
  return {
    callDispatched(call: Call): void {
      generations.set(call, current());
    },
  };
}
