/**
 * Multi-round-trip calls (MCP 2026-07-28). A server that needs something
 * from the user answers `tools/call`, `prompts/get` or `resources/read` with
 * an `input_required` result; the client asks again, with a new id, carrying
 * `inputResponses` and the server's opaque `requestState` echoed back. Each
 * request is a call of its own in the records; this links each retry to the
 * leg before it so the views can show one call with its legs.
 *
 * The link is the `requestState` when the server sent one (kept as a hash,
 * never as text: it is the server's opaque state). Without it, a retry is
 * linked to the latest open leg of the same method and target. Either way a
 * retry must name the same target as its leg: a state echoed on a request
 * for another tool links nothing. The table is bounded: a client that never
 * retries cannot grow it.
 */
import { createHash } from 'node:crypto';
import type { Call } from './call.js';
import { stringValue, type JsonNode } from '../wire/json-scan.js';

/** Open legs remembered at most (oldest forgotten first). */
export const MAX_OPEN_LEGS = 256;

interface OpenLeg {
  callId: string;
  chain: string;
  /** method + target: a retry without requestState goes to the same tool, prompt or resource. */
  target: string;
}

export class LegLinker {
  private readonly byState = new Map<string, OpenLeg>();
  private readonly withoutState: OpenLeg[] = [];

  /** A call was answered `input_required`: remember it as an open leg. */
  inputRequired(call: Call, result: JsonNode, frame: Buffer): void {
    const state = result.members!.get('requestState');
    this.openLeg(call, state?.type === 'string' ? stringValue(frame, state) : null);
  }

  /** A call answered input_required (by the server, or by mcpguard's own approval card) with this state, if any. */
  openLeg(call: Call, state: string | null): void {
    const leg: OpenLeg = { callId: call.callId, chain: call.chain ?? call.callId, target: call.target ?? '' };
    call.chain = leg.chain;
    if (state !== null) {
      call.requestStateHash = hashState(state);
      this.byState.delete(call.requestStateHash);
      this.byState.set(call.requestStateHash, leg);
      if (this.byState.size > MAX_OPEN_LEGS) this.byState.delete(this.byState.keys().next().value!);
    } else {
      this.withoutState.push(leg);
      if (this.withoutState.length > MAX_OPEN_LEGS) this.withoutState.shift();
    }
  }

  /** A new request: if it answers an open leg, link it (sets `continues` and `chain`). */
  retry(call: Call, params: JsonNode | undefined, frame: Buffer): void {
    const m = params?.members;
    if (m === undefined) return;
    const state = m.get('requestState');
    if (state !== undefined) {
      if (state.type !== 'string') return;
      const key = hashState(stringValue(frame, state));
      const leg = this.byState.get(key);
      // A state answers one leg, of one tool, prompt or resource: a request naming another is not its retry (the leg stays open).
      if (leg === undefined || leg.target !== (call.target ?? '')) return;
      this.byState.delete(key);
      return link(call, leg, 'request_state');
    }
    if (!m.has('inputResponses')) return;
    const target = call.target ?? '';
    for (let i = this.withoutState.length - 1; i >= 0; i--) {
      const leg = this.withoutState[i]!;
      if (leg.target !== target) continue;
      this.withoutState.splice(i, 1);
      return link(call, leg, 'same_target');
    }
  }
}

function link(call: Call, leg: OpenLeg, by: 'request_state' | 'same_target'): void {
  call.continues = leg.callId;
  call.chain = leg.chain;
  call.linkedBy = by;
}

/** A short, stable name for an opaque requestState (the records never keep the state itself). */
export function hashState(state: string): string {
  return createHash('sha256').update(state).digest('hex').slice(0, 32);
}
