/**
 * What a person's approval did for a call, as `mcpguard activity` shows it:
 * read from the call's recorded `decision` (gate/approval.ts, gate/grants.ts).
 * A card answered (by the client's elicitation, its input_required retry, or
 * --approve-cmd), with the answer, its scope and when; or a call a session
 * grant allowed without a card, with the call whose card granted it.
 */
import { isObject } from '../base/values.js';
import { str } from './views.js';

/** A row's approval: who answered, how, how far it reaches; `grant_of` for a call a grant allowed. */
export interface ApprovalFacts {
  by: string;
  channel: string | null;
  answer: string | null;
  scope: string | null;
  answered_at: string | null;
  grant_of: string | null;
}

/** The approval facts of a recorded decision; null when no card and no grant decided the call. */
export function approvalOf(decision: unknown): ApprovalFacts | null {
  if (!isObject(decision)) return null;
  const grant = isObject(decision.grant) ? decision.grant : null;
  const card = isObject(decision.card) ? decision.card : null;
  if (grant === null && card === null) return null;
  return {
    by: str(decision.by) ?? 'unknown',
    channel: str(grant?.channel) ?? str(decision.channel),
    answer: str(card?.answer),
    scope: str(grant?.scope) ?? str(decision.scope),
    answered_at: str(grant?.granted_at) ?? str(card?.answered_at),
    grant_of: str(grant?.call_id),
  };
}

const CHANNELS: Record<string, string> = {
  elicitation: "the client's elicitation",
  input_required: "the client's input_required retry",
  'approve-cmd': '--approve-cmd',
};

/** The facts in words, for the line under a row (the table escapes it). */
export function approvalNote(a: ApprovalFacts): string {
  const channel = a.channel === null ? 'an unknown channel' : (CHANNELS[a.channel] ?? a.channel);
  if (a.grant_of !== null) return `allowed without a card: the ${a.scope ?? '?'} grant of call ${a.grant_of} (answered through ${channel})`;
  return `approval card: ${a.answer ?? 'no answer yet'}${a.scope === null ? '' : ` (${a.scope})`}, through ${channel}`;
}
