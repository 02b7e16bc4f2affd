/** What a relay counts for the session's summary. */
import type { CallState } from '../mcp/call.js';
import type { RuleKind } from '../mcp/era.js';

export interface RelayCounters {
  clientFrames: number;
  childFrames: number;
  rejectedClient: number;
  noiseLines: number;
  noiseBytes: number;
  lateResponses: number;
  ignoredClientBytes: number;
  /** Requests handed toward the child that it could never receive (its stdin was closed). */
  undelivered: number;
  /** Calls per final state. */
  states: Partial<Record<CallState, number>>;
  /** Client lines refused because an MCP method's params had the wrong shape. */
  shapeRejections: number;
  /** Lines that broke their era's rules, per rule (refused or, with --era-rules warn, forwarded). */
  eraViolations: Partial<Record<RuleKind, number>>;
  /**
   * `server/discover` answered "method not found": a legacy server telling a
   * probing client its era. Counted in `states.error` (the server did answer
   * with an error), and apart here so that no view calls the session failed for it.
   */
  eraProbesDeclined: number;
}

/** Counters at zero: a relay's start, or a session whose server never started. */
export function emptyCounters(): RelayCounters {
  return {
    clientFrames: 0,
    childFrames: 0,
    rejectedClient: 0,
    noiseLines: 0,
    noiseBytes: 0,
    lateResponses: 0,
    ignoredClientBytes: 0,
    undelivered: 0,
    states: {},
    shapeRejections: 0,
    eraViolations: {},
    eraProbesDeclined: 0,
  };
}
