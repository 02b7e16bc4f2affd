/**
 * A person's approval of one tool call, through the channel the session
 * has: the client's own elicitation UI (legacy era), an `input_required`
 * answer whose retry is sealed to the exact call (2026-07-28), or
 * --approve-cmd. Every card has a wall-clock deadline, and a withdrawn card
 * is withdrawn at the client too.
 */
import type { Call, Decision } from '../mcp/call.js';
import { MAX_OPEN_LEGS } from '../mcp/legs.js';
import { cancellation, membersOf, memberString, requestFrame, resultResponse, type Request } from '../wire/jsonrpc.js';
import type { JsonNode } from '../wire/json-scan.js';
import { META_CLIENT_CAPABILITIES, type RequestMeta } from '../mcp/era.js';
import { approverAction, runApproveCmd } from './approve-cmd.js';
import { elicitationParams, makeCard, type Card } from './card.js';
import type { GateConfig, GateIO, Outcome } from './gate.js';
import type { HeldCalls } from './held.js';
import { applySplices, dropMembers, rebuildObject } from '../wire/splice.js';
import { ApprovalSeal } from './seal.js';
import { withdrawn } from './refusal.js';
import { ownRequestId } from '../wire/own-id.js';
import { answeredScope, ONCE_ONLY, SCOPES, type Scope } from './grants.js';
import { processMasker } from '../mask/mask.js';
import { clip } from '../base/values.js';

/** The key under which mcpguard's own approval question travels in an input_required result. */
export const APPROVAL_KEY = 'io.mcpguard/approval';

export class Approvals {
  private readonly seal = new ApprovalSeal();
  /** mcpguard's own cards open at the client, by id key. */
  private readonly asked = new Map<string, (answer: JsonNode | null, frame: Buffer) => void>();
  /** Ids of cards withdrawn before their answer came (bounded: oldest forgotten first). */
  private readonly retired = new Set<string>();
  private nextId = 1;
  /** The client declared `elicitation` in its initialize (legacy era); form mode is named from 2025-11-25. */
  private legacyElicitation: { form: boolean } | null = null;
  /**
   * Chains (first leg's call id) whose call a person approved: the tool and
   * argument bytes approved, and the leg that may be continued without asking
   * again (the approved leg, then each leg that used the approval). Cleared
   * when the chain ends; bounded like the open legs it serves.
   */
  private readonly approvedChains = new Map<string, { tool: string; args: Buffer; leg: string }>();
  /** 2026-07-28: what each card sent as input_required was (rule, reason, card) and the scopes it offered, by its sealed state, for the retry. */
  private readonly shownCards = new Map<string, { decision: Decision; offered: readonly Scope[] }>();

  constructor(
    private readonly config: Pick<GateConfig, 'approveCmd' | 'approvalTimeoutMs' | 'server'>,
    private readonly io: GateIO,
    private readonly held: HeldCalls,
    private readonly refuse: (call: Call, state: 'rejected' | 'denied', reason: string) => Outcome,
  ) {}

  /** The client's initialize: whether a card can be shown by elicitation in this (legacy) session. */
  clientInitialized(request: Request): void {
    const caps = membersOf(request.frame, request.params?.members?.get('capabilities'));
    const elicitation = caps?.members?.get('elicitation');
    const version = memberString(request.frame, request.params, 'protocolVersion') ?? '';
    // `{}` means form mode (2025-06-18); from 2025-11-25 a client may offer URL mode only, which cannot show a card.
    const modes = elicitation?.type === 'object' ? membersOf(request.frame, elicitation)!.members! : null;
    const form = modes !== null && (modes.size === 0 || modes.has('form'));
    this.legacyElicitation = form ? { form: version >= '2025-11-25' } : null;
  }

  /** Decide a tools/call; resolves once, unless the call is withdrawn first (then its outcome is ignored). */
  /** A client response to one of mcpguard's own cards: consumed here (true), never forwarded. */
  clientAnswered(key: string, result: JsonNode | null, frame: Buffer): boolean {
    if (this.retired.has(key)) {
      // The card was withdrawn (deadline, cancel) just before the person answered: too late, and not the server's business.
      this.retired.delete(key);
      this.io.diag(`an answer to withdrawn approval card ${key.slice(1)} arrived late; ignored`);
      return true;
    }
    const resolve = this.asked.get(key);
    if (resolve === undefined) return false;
    this.asked.delete(key);
    resolve(result, frame);
    return true;
  }

  /** An id mcpguard's own card has (or had) at the client. */
  ownsId(key: string): boolean {
    return this.asked.has(key) || this.retired.has(key);
  }

  private retire(key: string): void {
    this.retired.add(key);
    if (this.retired.size > 256) this.retired.delete(this.retired.values().next().value!);
  }

  /** 2026-07-28: a requestState that is mcpguard's own (the call is the retry of a card). */
  isOurs(state: string): boolean {
    return this.seal.isOurs(state);
  }

  /**
   * The next leg of a call a person already approved (the server asked for
   * input of its own): it continues the leg that holds the approval, and names
   * the same tool with the same argument bytes. The approval passes to this
   * leg: it covers each leg once, and never another tool.
   */
  approvedEarlier(call: Call, argBytes: Buffer): boolean {
    const approved = call.chain === null ? undefined : this.approvedChains.get(call.chain);
    if (approved === undefined || approved.leg !== call.continues || approved.tool !== call.tool || !approved.args.equals(argBytes)) return false;
    approved.leg = call.callId;
    return true;
  }

  /** A person approved this call: its chain's next leg may go on without asking again. */
  private granted(call: Call, argBytes: Buffer): void {
    const chain = call.chain ?? call.callId;
    this.approvedChains.delete(chain);
    this.approvedChains.set(chain, { tool: call.tool!, args: Buffer.from(argBytes), leg: call.callId });
    if (this.approvedChains.size > MAX_OPEN_LEGS) this.approvedChains.delete(this.approvedChains.keys().next().value!);
  }

  /** A call ended: anything but input_required ends its chain, and the approval with it. */
  callEnded(call: Call): void {
    if (this.approvedChains.size === 0 || call.state === 'input_required') return;
    this.approvedChains.delete(call.chain ?? call.callId);
  }

  /**
   * Ask a person about a call, on whatever channel this session has. `change`
   * and `accept` (the `mcpguard pins accept` command) are given for a pinned
   * tool's held change: the card shows the change, and a session that cannot
   * ask says what changed and how a person accepts it.
   */
  ask(
    call: Call,
    request: Request,
    meta: RequestMeta,
    argBytes: Buffer,
    why: string,
    rule: number | null,
    change?: readonly string[],
    accept?: string,
  ): Outcome | Promise<Outcome> {
    const expiresAt = Date.now() + this.config.approvalTimeoutMs;
    // A held change's card updates the pin when accepted: once, never a grant (the next call is asked about as the policy says).
    const offered = change === undefined ? SCOPES : ONCE_ONLY;
    const card = makeCard({ server: this.config.server, tool: call.tool!, argumentsText: argBytes.toString('utf8'), why, expiresAt, change });
    const shown = (channel: Decision['channel']): Decision => ({
      by: channel === 'approve-cmd' ? 'approve-cmd' : 'approval',
      rule,
      channel,
      card: { sha256: card.sha256, bytes: card.bytes, shown_at: new Date().toISOString(), answered_at: null, answer: null },
      reason: why,
    });
    // After the client's EOF no card can be answered (its answer, or its retry, would travel on the closed input).
    if (this.io.clientClosed()) {
      if (this.config.approveCmd === null) return this.clientGone(call, rule, why);
    } else if (this.io.modern()) {
      if (!modernElicitation(request.frame, meta, request.params!)) return this.cannotAsk(call, rule, why, change, accept);
      call.decision = shown('input_required');
      const state = this.seal.seal(call.tool!, argBytes, expiresAt);
      this.shownCards.set(state, { decision: call.decision, offered });
      // Bounded like the seal's open nonces: a client that never retries cannot grow it.
      if (this.shownCards.size > MAX_SHOWN_CARDS) this.shownCards.delete(this.shownCards.keys().next().value!);
      const result = {
        resultType: 'input_required',
        inputRequests: { [APPROVAL_KEY]: { method: 'elicitation/create', params: elicitationParams(card, true, offered) } },
        requestState: state,
      };
      return { kind: 'card', state, answer: resultResponse(call.requestId, result) };
    }
    if (this.legacyElicitation !== null && !this.io.clientClosed()) {
      call.decision = shown('elicitation');
      return this.elicit(call, card, expiresAt, argBytes, request.frame, offered);
    }
    if (this.config.approveCmd !== null) {
      call.decision = shown('approve-cmd');
      const action = approverAction(card, {
        server: this.config.server,
        tool: call.tool!,
        reason: why,
        callId: call.callId,
        expiresAt,
        change,
        scopes: offered,
      });
      return this.held.waitFor(call, runApproveCmd(this.config.approveCmd, action, this.config.approvalTimeoutMs, offered)).then((verdict) => {
        if (verdict === null) return withdrawn();
        answered(call, verdict.approved ? 'approved' : 'denied', verdict.scope);
        return verdict.approved ? { kind: 'dispatch', frame: request.frame } : this.refuse(call, 'denied', `not approved: ${verdict.detail}`);
      });
    }
    return this.cannotAsk(call, rule, why, change, accept);
  }

  private clientGone(call: Call, rule: number | null, why: string): Outcome {
    call.decision = { by: 'approval', rule, channel: null, card: null, reason: why };
    return this.refuse(call, 'denied', `not approved: ${why} asks for a person's approval, and the client closed its input before a card could be answered`);
  }

  private cannotAsk(call: Call, rule: number | null, why: string, change?: readonly string[], accept?: string): Outcome {
    const noWay = 'there is no way to ask: the client declared no elicitation capability and no --approve-cmd is set';
    if (accept !== undefined) {
      // A held pin change: the pins held it, not the policy; the person needs what changed and the command that accepts it.
      call.decision = { by: 'pins', rule, channel: null, card: null, reason: why };
      const what = change === undefined || change.length === 0 ? '' : `: ${change.join('; ')}`;
      return this.refuse(
        call,
        'denied',
        `${why}${what}. A person must approve the change before the first call, and ${noWay}. A person can accept it with: ${accept}`,
      );
    }
    call.decision = { by: 'policy', rule, channel: null, card: null, reason: why };
    return this.refuse(call, 'denied', `${why} asks for a person's approval, and ${noWay}`);
  }

  /** Legacy era: ask through the client's own elicitation UI, with a wall-clock deadline nothing else moves. */
  private elicit(call: Call, card: Card, expiresAt: number, argBytes: Buffer, frame: Buffer, offered: readonly Scope[]): Promise<Outcome> {
    // Unguessable, and not an id the server has open with the client: else the client's answer to the server's question would answer the card.
    const id = ownRequestId('approval', this.nextId++, this.io.idTaken);
    const key = `s${id}`;
    return new Promise<Outcome>((resolve) => {
      const finish = (outcome: Outcome): void => {
        clearTimeout(timer);
        this.held.release(call);
        this.asked.delete(key);
        resolve(outcome);
      };
      const cancelCard = (reason: string): void => {
        this.retire(key);
        this.io.toClient(cancellation(id, reason));
      };
      const timer = setTimeout(
        () => {
          cancelCard('mcpguard: the approval timed out');
          answered(call, 'timed_out');
          finish(this.refuse(call, 'denied', `not approved: no answer within --approval-timeout ${this.config.approvalTimeoutMs} ms`));
        },
        Math.max(0, expiresAt - Date.now()),
      );
      this.held.hold(call, () => {
        cancelCard('mcpguard: the tool call was cancelled');
        finish(withdrawn());
      });
      this.asked.set(key, (result, answerFrame) => {
        const action = result === null ? 'error' : (memberString(answerFrame, result, 'action') ?? 'unknown');
        const scope = action === 'accept' ? answeredScope(answerFrame, result ?? undefined, offered) : undefined;
        answered(call, action, typeof scope === 'string' ? scope : undefined);
        if (typeof scope === 'object') finish(this.refuse(call, 'denied', `not approved: the answer does not fit the card: ${scope.error}`));
        else if (action === 'accept') {
          this.granted(call, argBytes);
          finish({ kind: 'dispatch', frame });
        } else finish(this.refuse(call, 'denied', `not approved: the person answered ${action}`));
      });
      const params = elicitationParams(card, this.legacyElicitation!.form, offered);
      this.io.toClient(requestFrame(id, 'elicitation/create', JSON.stringify(params)));
    });
  }

  /** 2026-07-28: the retry of a call mcpguard answered with its card. */
  retried(call: Call, request: Request, state: string, argBytes: Buffer): Outcome {
    const { frame, params } = request;
    const unsealed = this.seal.unseal(state, call.tool!, argBytes);
    // The card this retry answers (its rule, reason, hash and the time it was shown), when mcpguard still knows it.
    const spent = unsealed.ok || unsealed.spent === true;
    const { decision: shown, offered } = (spent ? this.shownCards.get(state) : undefined) ?? { decision: undefined, offered: ONCE_ONLY };
    if (spent) this.shownCards.delete(state);
    call.decision = {
      by: 'approval',
      rule: shown?.rule ?? null,
      channel: 'input_required',
      reason: shown?.reason ?? null,
      card: shown?.card ? { ...shown.card, answered_at: null, answer: null } : null,
    };
    const responses = membersOf(frame, params!.members!.get('inputResponses'));
    const mine = responses?.members?.get(APPROVAL_KEY);
    const action = mine === undefined ? null : (memberString(frame, membersOf(frame, mine) ?? undefined, 'action') ?? null);
    const scope = action === 'accept' ? answeredScope(frame, mine, offered) : undefined;
    // An answer that came too late is still recorded as given, with when it came.
    if (spent) answered(call, action ?? 'none', typeof scope === 'string' ? scope : undefined);
    if (!unsealed.ok) return this.refuse(call, 'denied', `not approved: ${unsealed.reason}`);
    if (action !== 'accept') return this.refuse(call, 'denied', `not approved: the person answered ${action ?? 'nothing'}`);
    if (typeof scope === 'object') return this.refuse(call, 'denied', `not approved: the answer does not fit the card: ${scope.error}`);
    this.granted(call, argBytes);
    // The server gets the call as it was before mcpguard asked: its own answer and state removed.
    const onlyMine = responses!.members!.size === 1;
    const params2 = rebuildObject(frame, params!, (key) => {
      if (key === 'requestState' || (key === 'inputResponses' && onlyMine)) return null;
      if (key === 'inputResponses') return dropMembers(frame, responses!, new Set([APPROVAL_KEY])).text;
      return undefined;
    });
    return { kind: 'dispatch', frame: applySplices(frame, [params2]) };
  }
}

/** Most 2026-07-28 cards remembered for their retries' records (oldest forgotten first). */
const MAX_SHOWN_CARDS = 4096;

/** Most characters of a client's own word for its answer that the records keep. */
const ANSWER_CHARS = 64;

/**
 * The answer a card got, and when; an approval's reach (`scope`) beside it.
 * The answer may be the client's own text (an action no spec names): masked,
 * then clipped, as everything a peer sends is before the records keep it.
 */
function answered(call: Call, answer: string, scope?: Scope): void {
  if (call.decision?.card) {
    call.decision.card.answered_at = new Date().toISOString();
    call.decision.card.answer = clip(processMasker().text(answer), ANSWER_CHARS);
    if (scope !== undefined) call.decision.scope = scope;
  }
}

/** The client of a 2026-07-28 request said it can show an elicitation. */
function modernElicitation(frame: Buffer, meta: RequestMeta, params: JsonNode): boolean {
  if (!meta.capabilities) return false;
  const caps = membersOf(frame, membersOf(frame, params.members!.get('_meta'))?.members?.get(META_CLIENT_CAPABILITIES));
  const modes = membersOf(frame, caps?.members?.get('elicitation'));
  // Form mode is what shows a card; `{}` means form, a client offering URL mode only cannot show one.
  return modes != null && (modes.members!.size === 0 || modes.members!.has('form'));
}
