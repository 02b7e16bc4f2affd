/**
 * A card is valid only for the tool it showed. The person reads the tool's
 * name and the reason; the model chose the call from the tool's definition
 * (description, schemas, annotations) as the server listed it then. A server
 * that changes the tool while the card is open (a list_changed, a restart, a
 * new listing) would otherwise get the accepted call for a tool nobody
 * approved. So each card is bound to the SHA-256 of the tool's pinned part
 * (pins/definition.ts: what the model reads) when it was shown; an accepted
 * card whose tool no longer has that definition is refused, with the reason,
 * and the next call of the tool is asked about as it is now (with pins on,
 * the held change's card shows the diff).
 *
 * A definition the gate no longer knows when the answer comes (the server
 * said its tools changed, or was restarted, and nothing listed them since) is
 * learned again (mcpguard's own tools/list) before it is compared.
 *
 * The same binding holds a session grant (grants.ts): an accepted card that
 * chose a session scope is kept as a grant for the definition it showed, and
 * only once that definition is confirmed; a grant covers a later call only
 * while the tool's definition is still that one.
 */
import type { Call } from '../mcp/call.js';
import type { Request } from '../wire/jsonrpc.js';
import type { RequestMeta } from '../mcp/era.js';
import { digest, pinnedPart } from '../pins/definition.js';
import type { Outcome } from './gate.js';
import type { HeldCalls } from './held.js';
import { withdrawn } from './refusal.js';
import { CallArgs, type ToolBook } from './tools.js';
import { Grants, type Grant } from './grants.js';

/** Most 2026-07-28 cards remembered (as many as the seal keeps open; oldest forgotten first). */
const MAX_CARDS = 4096;

export class CardBound {
  /** 2026-07-28 cards: the definition each showed, by its sealed state. */
  private readonly byState = new Map<string, string | null>();
  /** This session's grants: memory only, gone with the process. */
  private readonly grants = new Grants();

  constructor(
    private readonly tools: ToolBook,
    private readonly held: HeldCalls,
    private readonly refuse: (call: Call, reason: string) => Outcome,
  ) {}

  /**
   * An approval asked just now (`outcome`, from Approvals.ask): bound to the
   * tool's definition as it is now, or to `shown` (a held change's card
   * shows the pending definition, whose hash the pins hold).
   */
  asked(call: Call, request: Request, meta: RequestMeta, outcome: Outcome | Promise<Outcome>, shown = this.hash(call.tool!)): Outcome | Promise<Outcome> {
    if (outcome instanceof Promise) return outcome.then((o) => this.check(call, request, meta, shown, o));
    if (outcome.kind === 'card') {
      this.byState.set(outcome.state, shown);
      if (this.byState.size > MAX_CARDS) this.byState.delete(this.byState.keys().next().value!);
    }
    return outcome;
  }

  /** 2026-07-28: the retry of a card (`outcome`, from Approvals.retried), checked against the definition the card showed. */
  retried(call: Call, request: Request, meta: RequestMeta, state: string, outcome: Outcome): Outcome | Promise<Outcome> {
    const shown = this.byState.get(state);
    this.byState.delete(state);
    return this.check(call, request, meta, shown ?? null, outcome);
  }

  /** The grant that allows this call of a tool whose policy `rule` would ask about (null: none, ask). */
  grantFor(call: Call, argBytes: Buffer, rule: number | null): Grant | null {
    // The definition's hash is computed only for a tool that has a grant (most asked calls have none).
    return this.grants.has(call.tool!) ? this.grants.covering(call.tool!, this.hash(call.tool!), argBytes, rule) : null;
  }

  /** An accepted card (dispatch) whose tool changed since it was shown: refused. `shown` null: the tool was not known then, nothing to bind to. */
  private check(call: Call, request: Request, meta: RequestMeta, shown: string | null, outcome: Outcome): Outcome | Promise<Outcome> {
    if (outcome.kind !== 'dispatch') return outcome;
    const name = call.tool!;
    const args = new CallArgs(request.frame, request.params!.members!.get('arguments'));
    if (shown === null) return this.keep(call, null, args.bytes, outcome);
    const now = this.hash(name);
    if (now !== null) return now === shown ? this.keep(call, shown, args.bytes, outcome) : this.changed(call, shown, now);
    return this.held.waitFor(call, this.tools.check(name, args, meta, request.frame)).then((verdict) => {
      if (verdict === null) return withdrawn();
      const learned = this.hash(name);
      return learned === shown ? this.keep(call, shown, args.bytes, outcome) : this.changed(call, shown, learned);
    });
  }

  /**
   * An accepted card, its definition confirmed: a session scope becomes a
   * grant for that definition. `shown` null (the card's definition was never
   * known, or is forgotten): nothing to bind a grant to, so the approval
   * stays once, and the record says so.
   */
  private keep(call: Call, shown: string | null, argBytes: Buffer, outcome: Outcome): Outcome {
    const d = call.decision;
    if (d?.scope !== 'session-tool' && d?.scope !== 'session-same-arguments') return outcome;
    if (shown === null) {
      d.reason = `${d.reason ?? ''}; the ${d.scope} grant chosen was not kept (the tool's definition was not known when the card was shown), so it was approved once`;
      d.scope = 'once';
      return outcome;
    }
    this.grants.add(
      {
        rule: d.rule,
        tool: call.tool!,
        scope: d.scope,
        definition: shown,
        callId: call.callId,
        channel: d.channel,
        grantedAt: d.card?.answered_at ?? new Date().toISOString(),
      },
      argBytes,
    );
    return outcome;
  }

  private changed(call: Call, shown: string, now: string | null): Outcome {
    const what = now === null ? 'the server no longer lists it' : `its definition is now ${now.slice(0, 16)}`;
    return this.refuse(
      call,
      `the approval card for tool ${JSON.stringify(call.tool)} was answered after the tool changed (it showed definition ${shown.slice(0, 16)}; ${what}); a card is valid only for the definition it showed, so the call was not sent. Call the tool again to be asked about it as it is now`,
    );
  }

  /** The SHA-256 of the tool's pinned part as the gate knows it now (null: not known). */
  private hash(name: string): string | null {
    const definition = this.tools.definition(name);
    return definition === undefined ? null : digest(pinnedPart(definition as Record<string, unknown>));
  }
}
