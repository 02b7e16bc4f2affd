/**
 * What a policy's verdict does to a call besides deciding it: the deadline a
 * rule set (carried on the call for the relay to arm at dispatch), and the
 * session's rate windows. The gate (gate.ts) tells this class what the
 * policy decided, lets it admit a call it is about to let go (taking the
 * call's slots, or denying it when a window filled while it waited), and
 * tells it when a call ended (a call that never reached the server gives its
 * slots back). One per gate, so one per session: restarts keep the windows.
 */
import type { Call } from '../mcp/call.js';
import type { Outcome } from './gate.js';
import type { Policy, PolicyVerdict } from './policy.js';
import { RateBook, type RateCount } from './rates.js';
import { overText } from './verdict.js';

export class CallLimits {
  /** The session's rate windows; null when no rule has a `limit` (then nothing here costs a call anything). */
  readonly rates: RateBook | null;
  /** Windows each call counts in if it is let go (from its verdict), then the slots it took, until it ends. */
  private readonly counted = new Map<Call, { counts: RateCount[]; taken: Array<[string, number]> }>();

  constructor(policy: Policy | null, clock?: () => number) {
    this.rates = policy?.hasLimits ? new RateBook(clock) : null;
  }

  /** The policy's verdict for a call: its deadline, and the windows it counts in. */
  decided(call: Call, verdict: PolicyVerdict): void {
    if (verdict.timeout !== undefined) call.deadline = verdict.timeout;
    if (verdict.counts !== undefined && this.rates !== null) this.counted.set(call, { counts: verdict.counts, taken: [] });
  }

  /**
   * The verdict for a 2026-07-28 card's retry, which is not decided again:
   * its deadline and windows, and a `deny` limit that filled while the card
   * waited (admit() then denies it, as it does a legacy call). A limit that
   * asks was what the person approved: a call approved past the limit is
   * not counted.
   */
  retried(call: Call, verdict: PolicyVerdict): void {
    this.decided(call, verdict);
    if (this.rates !== null && verdict.over !== undefined && verdict.decision === 'deny' && verdict.rule === verdict.over.rule)
      this.counted.set(call, { counts: [verdict.over, ...(verdict.counts ?? [])], taken: [] });
  }

  /**
   * A call the gate lets go takes its slots in the windows it counts in; if
   * one filled up while it waited (for a person, or a tools/list), it is
   * denied by that limit instead (`refuse` words the refusal).
   */
  admit(call: Call, outcome: Outcome, refuse: (call: Call, reason: string) => Outcome): Outcome {
    const entry = this.counted.get(call);
    if (outcome.kind !== 'dispatch' || entry === undefined) return outcome;
    const full = this.rates!.take(entry.counts, entry.taken);
    if (full === null) return outcome;
    const why = `policy rule ${full.count.rule + 1} (${overText(full.count, full.waitMs)}; reached while the call waited)`;
    call.decision = { by: 'policy', rule: full.count.rule, channel: call.decision?.channel ?? null, card: call.decision?.card ?? null, reason: why };
    return refuse(call, `denied by ${why}`);
  }

  /** A call ended (any state): if it never reached the server, its slots are free again. */
  ended(call: Call): void {
    const entry = this.counted.get(call);
    if (entry === undefined) return;
    this.counted.delete(call);
    if (call.dispatchedAt === null) this.rates!.release(entry.taken);
  }
}
