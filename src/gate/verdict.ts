/**
 * A policy verdict put together: how strict each decision is, the stricter
 * of two, and what decide() (policy.ts) adds to the deciding rule's verdict
 * once it is known: --secrets-in-args where no rule names `secrets`, the
 * deadline a rule set, the rate windows the call counts in.
 */
import type { ArgsValue } from './tools.js';
import type { Policy, PolicyDecision, PolicyVerdict } from './policy.js';
import { limitText, RateBook, type RateCount } from './rates.js';
import { findSecret, secretText, type SecretFound, type SecretsMode } from './secrets.js';
import { shownText } from '../mask/mask.js';

/** How strict each decision is: where the annotations are unknown, the stricter of two outcomes wins. */
export const STRICTNESS: Readonly<Record<PolicyDecision, number>> = { allow: 0, ask: 1, deny: 2 };

/** `floor` when it is strictly stricter than `verdict`, else `verdict`. */
export function stricter(floor: PolicyVerdict | null, verdict: PolicyVerdict): PolicyVerdict {
  return floor !== null && STRICTNESS[floor.decision] > STRICTNESS[verdict.decision] ? floor : verdict;
}

/** What decide() is told of the session: its rate windows, and --secrets-in-args. */
export interface DecideContext {
  rates?: RateBook | undefined;
  secrets?: SecretsMode | undefined;
}

/** What rules add to a call besides a decision, gathered while decide() walks the rules. */
export interface Extra {
  timeout: PolicyVerdict['timeout'];
  counts: RateCount[] | undefined;
  over: RateCount | undefined;
  /** The arguments' first secret, once looked for (null: none; undefined: not looked for). */
  secret: SecretFound | null | undefined;
}

/** The windows of a session that has dispatched nothing (`policy test`, and decide() called without a session). */
export const FRESH = new RateBook(() => 0);

/**
 * The verdict with --secrets-in-args (where no rule names `secrets`: the
 * stricter of the policy's verdict and the secrets'; `deny-env`: an env value
 * denies, a credential shape asks; one the card could not mask denies; its
 * rule is null and its reason names the option), the deadline and the rate
 * windows.
 */
export function finish(verdict: PolicyVerdict, policy: Policy, args: ArgsValue, context: DecideContext | undefined, extra: Extra): PolicyVerdict {
  const mode = context?.secrets;
  if (mode !== undefined && mode !== 'off' && !policy.namesSecrets && verdict.decision !== 'deny') {
    const found = (extra.secret ??= findSecret(args.value()));
    if (found !== null) {
      const decision: PolicyDecision = mode === 'deny' || found.deep ? 'deny' : mode === 'ask' ? 'ask' : found.env ? 'deny' : 'ask';
      const why = `--secrets-in-args ${mode}: ${secretText(found)}`;
      // As strict as the policy's verdict: that verdict stands, and its reason says the secret too (a card must say what it is about).
      verdict = decision === verdict.decision ? { ...verdict, reason: join(verdict.reason, why) } : stricter({ decision, rule: null, reason: why }, verdict);
    }
  }
  const { timeout, counts, over } = extra;
  // A grant was given for the arguments a person saw; a secret in these is a new question (gate.ts asks it again).
  const secret = extra.secret !== undefined && extra.secret !== null && verdict.decision === 'ask';
  if (timeout === undefined && counts === undefined && over === undefined && !secret) return verdict;
  return {
    ...verdict,
    ...(timeout === undefined ? {} : { timeout }),
    ...(counts === undefined ? {} : { counts }),
    ...(over === undefined ? {} : { over }),
    ...(secret ? { secret: true as const } : {}),
  };
}

/** A limit reached, as the reason says it: `3 calls per 1m to "shell": next allowed in 41 s`. */
export function overText(count: RateCount, waitMs: number): string {
  return `${limitText(count)}: next allowed in ${Math.ceil(waitMs / 1000)} s`;
}

/** Two parts of a reason, either of which may be missing. */
export function join(a: string | null, b: string | null): string | null {
  return a === null ? b : b === null ? a : `${a}; ${b}`;
}

/** For `policy test --json`: the deadline and rate limits the call met, as JSON members (none when it met none). */
export function limitsJson(verdict: PolicyVerdict): Record<string, unknown> {
  return {
    ...(verdict.timeout === undefined ? {} : { timeout_ms: verdict.timeout.ms, timeout_rule: verdict.timeout.rule }),
    // One call in a fresh session: a limit is never reached here, so these are the windows the call would count in.
    ...(verdict.counts === undefined ? {} : { counts_in: verdict.counts.map((c) => ({ rule: c.rule, calls: c.limit.calls, per: c.limit.per })) }),
  };
}

/** For `policy test`: the same, as lines for a person. */
export function limitsText(verdict: PolicyVerdict): string {
  let text = '';
  if (verdict.timeout !== undefined) text += `deadline: ${verdict.timeout.ms} ms, set by policy rule ${verdict.timeout.rule + 1} (instead of --call-timeout)\n`;
  for (const c of verdict.counts ?? [])
    text += `counts in: policy rule ${c.rule + 1}, ${shownText(limitText(c))} (not reached: policy test evaluates one call in a fresh session)\n`;
  return text;
}
