/**
 * The gate: what a `tools/call` goes through after its frame, its JSON-RPC
 * shape, its era and its MCP shape were checked, and before a byte of it
 * reaches the server:
 *
 *   the tool's arguments against the server's own inputSchema
 *   → the policy (allow, deny, or ask)
 *   → a person's approval, shown by the user's own client
 *   → dispatch.
 *
 * The gate decides; the relay acts on the outcome (forwards, answers, ends
 * the call). While one call waits, nothing else does: other lines keep
 * flowing, and a waiting call can be cancelled, time out, or be withdrawn at
 * the session's end, leaving nothing behind at the client or the server.
 */
import type { Call } from '../mcp/call.js';
import { errorResponse, memberType, resultResponse, INVALID_PARAMS, type Request, type Response } from '../wire/jsonrpc.js';
import type { Delivery } from '../wire/writer.js';
import { processMasker } from '../mask/mask.js';
import { nodeText, stringValue, type JsonNode } from '../wire/json-scan.js';
import type { RequestMeta } from '../mcp/era.js';
import { Approvals } from './approval.js';
import { CardBound } from './card-bound.js';
import { HeldCalls } from './held.js';
import { ownRequestId } from '../wire/own-id.js';
import { alwaysDenied, buildPolicy, decide, verdictWhy, type DecideContext, type Policy, type PolicyVerdict } from './policy.js';
import { CallLimits } from './call-limits.js';
import type { SecretsMode } from './secrets.js';
import { refusal, withdrawn } from './refusal.js';
import { applySplices, type Splice } from '../wire/splice.js';
import { loadEngine, verdictText } from './schema/schema.js';
import { CallArgs, ToolBook, type SchemaVerdict, type Schemas } from './tools.js';
import type { ToolHooks } from '../pins/hooks.js';
import type { Held } from '../pins/guard.js';

export { APPROVAL_KEY } from './approval.js';

export interface GateConfig {
  validateArgs: boolean;
  /** A result whose structuredContent does not match the tool's outputSchema: report it, or turn it into a tool error. */
  validateOutput: 'report' | 'enforce';
  policy: Policy | null;
  approveCmd: string[] | null;
  approvalTimeoutMs: number;
  /** How the server is named on a card (its command line). */
  server: string;
  /** Pins and hidden characters (src/pins); null when both are off. */
  hooks?: ToolHooks | null;
  /** --on-tool-change. */
  onToolChange?: 'warn' | 'ask' | 'block' | 'off';
  /** The rate windows' clock (ms, monotonic); tests drive it. */
  clock?: () => number;
  /** --secrets-in-args: what a call whose arguments carry a secret gets where no policy rule names `secrets` (absent: off). */
  secrets?: SecretsMode;
}

export interface GateIO {
  /** A frame of mcpguard's own to the server (its tools/list); `delivery` hears when it reaches the server's stdin. */
  toChild(frame: Buffer, delivery?: Delivery): void;
  /** A frame of mcpguard's own to the client (an elicitation, or its cancellation). */
  toClient(frame: Buffer): void;
  diag(line: string): void;
  /** The session speaks 2026-07-28. */
  modern(): boolean;
  /** The session's protocol version, when known. */
  version(): string | null;
  /** The client closed its input: a card it would have to answer can no longer be answered. */
  clientClosed(): boolean;
  /** An id key in flight on either side (a client's request, a server's request, or mcpguard's own): no id of mcpguard's may have it. */
  idTaken(key: string): boolean;
}

export type Outcome =
  | { kind: 'dispatch'; frame: Buffer }
  | { kind: 'refuse'; state: 'rejected' | 'denied'; reason: string; answer: Buffer }
  /** 2026-07-28: mcpguard answered the call itself with its approval question (the call ends input_required). */
  | { kind: 'card'; answer: Buffer; state: string };

/** The policy of a gate run without --policy: no rules, every call allowed (but for --secrets-in-args). */
const NO_RULES = buildPolicy({}, '(none)', () => {
  throw new Error('no engine');
});

export class Gate {
  readonly tools: ToolBook;
  /** Calls the gate holds, and how to stop waiting for each. */
  private readonly held = new HeldCalls();
  private readonly approvals: Approvals;
  /** Each card bound to the definition of the tool it showed. */
  private readonly bound: CardBound;
  /** Deadlines and rate windows; the gate lives as long as the session, restarts included. */
  private readonly limits: CallLimits;

  constructor(
    private readonly config: GateConfig,
    private readonly io: GateIO,
    schemas: Schemas,
  ) {
    this.tools = new ToolBook(
      schemas,
      io,
      (n) => ownRequestId('tools-list', n, io.idTaken),
      () => io.version(),
      config.hooks ? (list, first, last) => config.hooks!.pins.listed(list, first, last) : undefined,
    );
    this.approvals = new Approvals(config, io, this.held, (call, state, reason) => this.refuse(call, state, reason));
    this.bound = new CardBound(this.tools, this.held, (call, reason) => this.refuse(call, 'denied', reason));
    this.limits = new CallLimits(config.policy, config.clock);
    this.context = { rates: this.limits.rates ?? undefined, secrets: config.secrets };
    // --secrets-in-args needs decide() even without a policy: an empty one (every call allowed but for the secrets).
    this.policy = config.policy ?? (config.secrets === undefined || config.secrets === 'off' ? null : NO_RULES);
  }

  /** What decide() is told of this session. */
  private readonly context: DecideContext;
  /** The policy decide() runs: --policy, or no rules when only --secrets-in-args asks for a decision. */
  private readonly policy: Policy | null;

  /** The client's initialize: whether a card can be shown by elicitation in this (legacy) session. */
  clientInitialized(request: Request): void {
    this.approvals.clientInitialized(request);
  }

  /**
   * Decide a tools/call. The outcome is immediate when nothing has to be
   * waited for (the tool and the engine are known, no person is asked): the
   * call then goes out in order with the lines around it. Otherwise it comes
   * once, later, unless the call is withdrawn first (then it is ignored).
   */
  review(call: Call, request: Request, meta: RequestMeta): Outcome | Promise<Outcome> {
    const outcome = this.reviewCall(call, request, meta);
    if (this.limits.rates === null) return outcome;
    const refuse = (c: Call, reason: string): Outcome => this.refuse(c, 'denied', reason);
    return outcome instanceof Promise ? outcome.then((o) => this.limits.admit(call, o, refuse)) : this.limits.admit(call, outcome, refuse);
  }

  private reviewCall(call: Call, request: Request, meta: RequestMeta): Outcome | Promise<Outcome> {
    const { frame, params } = request;
    const name = call.tool!;
    const args = new CallArgs(frame, params!.members!.get('arguments'));
    const state = params!.members!.get('requestState');
    if (this.io.modern() && state?.type === 'string' && this.approvals.isOurs(stringValue(frame, state))) {
      const sealed = stringValue(frame, state);
      // The retry of an approved card is not decided again, but its deadline and rate windows are the policy's.
      const policy = this.config.policy;
      if (policy !== null && (policy.hasLimits || policy.hasTimeouts)) this.retryLimits(call, policy, name, args);
      const retried = this.bound.retried(call, request, meta, sealed, this.approvals.retried(call, request, sealed, args.bytes));
      return retried instanceof Promise ? retried.then((o) => this.pinRetried(sealed, o)) : this.pinRetried(sealed, retried);
    }
    if (!this.config.validateArgs) return this.afterSchema(call, request, meta, args);
    // Timed only for the OpenTelemetry export (call.steps is there only then): two clock reads a step.
    const t0 = call.steps === undefined ? 0 : performance.now();
    const now = this.tools.checkNow(name, args);
    if (now !== null) {
      if (call.steps !== undefined) call.steps.schemaMs = performance.now() - t0;
      return now.ok ? this.afterSchema(call, request, meta, args) : this.schemaRefusal(call, now, name);
    }
    return this.held.waitFor(call, this.tools.check(name, args, meta, frame)).then((verdict) => {
      // Waiting for the server's tools/list (or the engine's load) included: the step took that long.
      if (call.steps !== undefined) call.steps.schemaMs = performance.now() - t0;
      if (verdict === null) return withdrawn();
      if (!verdict.ok) return this.schemaRefusal(call, verdict, name);
      return this.afterSchema(call, request, meta, args);
    });
  }

  /** The policy, and a person when the policy asks. */
  private afterSchema(call: Call, request: Request, meta: RequestMeta, args: CallArgs): Outcome | Promise<Outcome> {
    const { frame } = request;
    const name = call.tool!;
    const policy = this.policy;
    const held = this.config.hooks?.pins.held(name) ?? null;
    if (policy === null) return held === null ? { kind: 'dispatch', frame } : this.heldChange(call, request, meta, args.bytes, held, null, null);
    let verdict: PolicyVerdict;
    const t0 = call.steps === undefined ? 0 : performance.now();
    try {
      verdict = decide(policy, name, args, this.tools.annotations(name), this.context);
    } catch (error) {
      if (call.steps !== undefined) call.steps.policyMs = performance.now() - t0;
      // A `when` that cannot be checked (arguments nested beyond the engine's bound): refusing is the safe answer.
      call.decision = { by: 'policy', rule: null, channel: null, card: null, reason: (error as Error).message };
      return this.refuse(call, 'denied', `the policy could not decide: ${(error as Error).message}`);
    }
    if (call.steps !== undefined) call.steps.policyMs = performance.now() - t0;
    this.limits.decided(call, verdict);
    const why = verdictWhy(verdict);
    // A held change holds whatever the policy says: the policy may add a question, never remove one.
    if (verdict.decision === 'allow') return held === null ? { kind: 'dispatch', frame } : this.heldChange(call, request, meta, args.bytes, held, null, null);
    if (verdict.decision === 'deny') {
      call.decision = { by: 'policy', rule: verdict.rule, channel: null, card: null, reason: why };
      return this.refuse(call, 'denied', `denied by ${why}`);
    }
    if (held !== null) return this.heldChange(call, request, meta, args.bytes, held, verdict.decision === 'ask' ? why : null, verdict.rule);
    // A later leg of a call already approved (the server asked for input of its own) is not asked again.
    if (this.approvals.approvedEarlier(call, args.bytes)) {
      call.decision = { by: 'approval', rule: verdict.rule, channel: null, card: null, reason: 'approved on an earlier leg of this call' };
      return { kind: 'dispatch', frame };
    }
    // A person's session grant answers the question this `ask` would ask (and only that: schema, pins and deny came first),
    // never one about a secret in the arguments: a grant for `echo` is not leave to send a token through it.
    const grant = verdict.secret === true ? null : this.bound.grantFor(call, args.bytes, verdict.rule);
    if (grant !== null) {
      const { callId, scope, channel, grantedAt } = grant;
      call.decision = {
        by: 'grant',
        rule: verdict.rule,
        channel: null,
        card: null,
        reason: `${why}; allowed by the ${scope} grant of call ${callId}`,
        grant: { call_id: callId, scope, channel, granted_at: grantedAt },
      };
      return { kind: 'dispatch', frame };
    }
    return this.bound.asked(call, request, meta, this.approvals.ask(call, request, meta, args.bytes, why, verdict.rule));
  }

  /**
   * A call of a tool whose change since it was pinned is held: refused
   * (block), or shown on an approval card with the change (ask; the card
   * also answers the policy's question, if it had one). Accepting updates the pin.
   */
  private heldChange(
    call: Call,
    request: Request,
    meta: RequestMeta,
    argBytes: Buffer,
    held: Held,
    policyWhy: string | null,
    rule: number | null,
  ): Outcome | Promise<Outcome> {
    const accept = `mcpguard pins accept ${held.pinsId} ${JSON.stringify(held.tool)}`;
    if (this.config.onToolChange === 'block') {
      call.decision = { by: 'pins', rule: null, channel: null, card: null, reason: held.summary };
      return this.refuse(call, 'denied', `${held.summary} (--on-tool-change block): ${held.lines.join('; ')}. A person can accept the change with: ${accept}`);
    }
    const why = `${held.summary} (--on-tool-change ask)${policyWhy === null ? '' : `, and ${policyWhy}`}`;
    const settled = (outcome: Outcome): Outcome => {
      if (outcome.kind === 'dispatch') this.config.hooks!.pins.accept(held.tool, held.sha256, `approved by ${call.decision?.channel ?? 'a person'}`);
      return outcome;
    };
    const outcome = this.bound.asked(call, request, meta, this.approvals.ask(call, request, meta, argBytes, why, rule, held.lines, accept), held.sha256);
    if (outcome instanceof Promise) return outcome.then(settled);
    if (outcome.kind === 'card') {
      this.pinCards.set(outcome.state, held);
      if (this.pinCards.size > 4096) this.pinCards.delete(this.pinCards.keys().next().value!);
    }
    return settled(outcome);
  }

  /** 2026-07-28 cards that showed a tool's change, by their sealed state: the retry that accepts one updates the pin. */
  private readonly pinCards = new Map<string, Held>();

  private pinRetried(state: string, outcome: Outcome): Outcome {
    const held = this.pinCards.get(state);
    if (held === undefined) return outcome;
    this.pinCards.delete(state);
    if (outcome.kind === 'dispatch') this.config.hooks!.pins.accept(held.tool, held.sha256, 'approved by input_required');
    return outcome;
  }

  /** An initialize or server/discover answer passing to the client: the server's name and instructions (pins, hidden characters). */
  serverAnnounced(call: Call, response: Response): Buffer | null {
    const hooks = this.config.hooks;
    if (!hooks || response.isError) return null;
    const splices = hooks.announced(response.frame, response.body, call.method!);
    return splices.length === 0 ? null : applySplices(response.frame, splices);
  }

  /** Stop holding a call (cancelled, timed out, session ending): true if the gate was holding it. */
  withdraw(call: Call): boolean {
    return this.held.withdraw(call);
  }

  /** A call ended (any state): an approval its chain held ends with the chain; rate slots of a call never dispatched are given back. */
  callEnded(call: Call): void {
    this.approvals.callEnded(call);
    this.limits.ended(call);
  }

  private retryLimits(call: Call, policy: Policy, name: string, args: CallArgs): void {
    try {
      this.limits.retried(call, decide(policy, name, args, this.tools.annotations(name), this.context));
    } catch {
      // A `when` that cannot be checked: the retry's card was approved on these very bytes; it keeps --call-timeout and counts nothing.
    }
  }

  /** Every call still held (the session is ending). */
  heldCalls(): Call[] {
    return this.held.calls();
  }

  /** A client response to one of mcpguard's own cards: consumed here (true), never forwarded. */
  clientAnswered(key: string, result: JsonNode | null, frame: Buffer): boolean {
    return this.approvals.clientAnswered(key, result, frame);
  }

  /** An id the client must not use, and the server must not send, while mcpguard's own request has it. */
  ownsId(key: string): boolean {
    return this.approvals.ownsId(key) || this.tools.ownsId(key);
  }

  /** A tools/list answer passing to the client: learned, and (hide_denied) stripped of tools that are always denied. */
  toolsListed(call: Call, cursor: boolean, result: JsonNode, frame: Buffer): Buffer | null {
    const tools = this.tools.learnAnswer(result, frame, !cursor);
    // Load the engine now, while the model reads the list, not on the first call.
    if (this.config.validateArgs) loadEngine().catch(() => {});
    const policy = this.config.policy;
    const pinned = tools === null || !this.config.hooks ? null : this.config.hooks.page(frame, result, tools.node, tools.list, !cursor);
    if (pinned !== null && pinned.hide.size > 0) call.flags = [...(call.flags ?? []), `hid ${pinned.hide.size} changed tool(s) (--on-tool-change block)`];
    if (policy === null || !policy.hideDenied || tools === null) return pinned === null ? null : this.withPins(frame, tools!.node, new Set(), pinned);
    const hidden = new Set<number>();
    tools.list.forEach((tool, i) => {
      const name = typeof tool?.name === 'string' ? tool.name : null;
      if (name !== null && alwaysDenied(policy, name, this.tools.annotations(name))) hidden.add(i);
    });
    if (hidden.size > 0) call.flags = [...(call.flags ?? []), `hid ${hidden.size} denied tool(s)`];
    return this.withPins(frame, tools.node, hidden, pinned ?? { hide: new Set(), splices: [] });
  }

  /** The tools/list page without the denied and held tools, hidden characters written out in the rest (null: unchanged). */
  private withPins(frame: Buffer, node: JsonNode, denied: Set<number>, pinned: { hide: Set<number>; splices: readonly Splice[] }): Buffer | null {
    const drop = new Set([...denied, ...pinned.hide]);
    if (drop.size === 0 && pinned.splices.length === 0) return null;
    if (drop.size === 0) return applySplices(frame, pinned.splices);
    // The array is rebuilt from its kept items' bytes, each with its own splices applied.
    const kept = node
      .items!.filter((_, i) => !drop.has(i))
      .map((item) => {
        const inside = pinned.splices
          .filter((s) => s.start >= item.start && s.end <= item.end)
          .map((s) => ({ ...s, start: s.start - item.start, end: s.end - item.start }));
        return applySplices(frame.subarray(item.start, item.end), inside);
      });
    const text = Buffer.concat([Buffer.from('['), ...kept.flatMap((b, i) => (i === 0 ? [b] : [Buffer.from(','), b])), Buffer.from(']')]);
    return applySplices(frame, [{ start: node.start, end: node.end, text }]);
  }

  /**
   * A tools/call result on its way to the client: its structuredContent
   * against the tool's outputSchema (when the tool has one and the engine is
   * loaded, which it is once the call's arguments were checked). A mismatch
   * is flagged on the call and said once per tool; under enforce the client
   * gets a tool error instead (returned as the replacement frame).
   */
  checkOutput(call: Call, response: Response): Buffer | null {
    const checked = this.checkOutputSchema(call, response);
    if (checked !== null || response.isError || !this.config.hooks) return checked;
    const splices = this.config.hooks.result(response.frame, response.body, call.tool);
    return splices.length === 0 ? null : applySplices(response.frame, splices);
  }

  private checkOutputSchema(call: Call, response: Response): Buffer | null {
    // A tool error (result isError: true) carries no structuredContent to check: the spec exempts it,
    // and the model must see the server's own words for what went wrong.
    if (!this.config.validateArgs || response.isError || call.tool === null || memberType(response.body, 'isError') === 'true') return null;
    const definition = this.tools.definition(call.tool);
    if (definition === undefined || !Object.hasOwn(definition, 'outputSchema')) return null;
    const node = response.body.members!.get('structuredContent');
    const verdict = this.tools.checkOutputNow(call.tool, node === undefined ? undefined : (JSON.parse(nodeText(response.frame, node)) as unknown));
    if (verdict === null || verdict.ok) return null;
    call.flags = [...(call.flags ?? []), 'output_schema_mismatch'];
    const text = verdictText(verdict, call.tool, 'output');
    if (!this.outputReported.has(call.tool)) {
      this.outputReported.add(call.tool);
      this.io.diag(`${text.split('\n').join(' ')} (tool ${JSON.stringify(call.tool)}; said once per tool; --validate-output ${this.config.validateOutput})`);
    }
    if (this.config.validateOutput !== 'enforce') return null;
    const result = {
      ...(this.io.modern() ? { resultType: 'complete' } : {}),
      _meta: { 'io.mcpguard/refused': { source: 'mcpguard', state: 'completed', by: 'output_schema', rule: null } },
      content: [{ type: 'text', text: `mcpguard replaced this result: the tool ran, but ${processMasker().text(text)}` }],
      isError: true,
    };
    return resultResponse(call.requestId, result);
  }

  private readonly outputReported = new Set<string>();

  // ---- approval ----

  // ---- refusals ----

  private schemaRefusal(call: Call, verdict: Exclude<SchemaVerdict, { ok: true }>, name: string): Outcome {
    call.decision = { by: 'schema', rule: null, channel: null, card: null, reason: verdict.reason };
    if (verdict.kind === 'unknown_tool') {
      const answer = errorResponse(call.requestId, INVALID_PARAMS, `mcpguard: unknown tool ${JSON.stringify(name)}: ${verdict.reason}`, {
        state: 'rejected',
        rule: 'unknown_tool',
      });
      return { kind: 'refuse', state: 'rejected', reason: `unknown tool: ${verdict.reason}`, answer };
    }
    return this.refuse(call, 'rejected', verdict.reason);
  }

  /** A tool execution error (isError: true): the model reads it and can correct itself. */
  private refuse(call: Call, state: 'rejected' | 'denied', reason: string): Outcome {
    return refusal(call, state, reason, this.io.modern());
  }
}
