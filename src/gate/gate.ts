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
import type { Call } from '../calls.js';
import { idJson, membersOf, memberString, type Request, type Response } from '../jsonrpc.js';
import { processMasker } from '../mask.js';
import { nodeText, stringValue, type JsonNode } from '../json-scan.js';
import { META_CLIENT_CAPABILITIES, type RequestMeta } from '../wire/era.js';
import { runApproveCmd } from './approve-cmd.js';
import { elicitationParams, makeCard, type Card } from './card.js';
import { alwaysDenied, decide, type Policy } from './policy.js';
import { applySplices, dropItems, dropMembers, rebuildObject } from './rewrite.js';
import { ApprovalSeal } from './seal.js';
import { loadEngine, verdictText } from './schema.js';
import { ToolBook, type SchemaVerdict, type Schemas } from './tools.js';

/** The key under which mcpguard's own approval question travels in an input_required result. */
export const APPROVAL_KEY = 'io.mcpguard/approval';

export interface GateConfig {
  validateArgs: boolean;
  /** A result whose structuredContent does not match the tool's outputSchema: report it, or turn it into a tool error. */
  validateOutput: 'report' | 'enforce';
  policy: Policy | null;
  approveCmd: string[] | null;
  approvalTimeoutMs: number;
  /** How the server is named on a card (its command line). */
  server: string;
}

export interface GateIO {
  /** A frame of mcpguard's own to the server (its tools/list). */
  toChild(frame: Buffer): void;
  /** A frame of mcpguard's own to the client (an elicitation, or its cancellation). */
  toClient(frame: Buffer): void;
  diag(line: string): void;
  /** The session speaks 2026-07-28. */
  modern(): boolean;
  /** The session's protocol version, when known. */
  version(): string | null;
}

/** What decided a call, for its records. */
export interface Decision {
  by: 'schema' | 'policy' | 'approval' | 'approve-cmd';
  rule: number | null;
  channel: 'elicitation' | 'input_required' | 'approve-cmd' | null;
  card: { sha256: string; bytes: number; shown_at: string; answered_at: string | null; answer: string | null } | null;
  reason: string | null;
}

export type Outcome =
  | { kind: 'dispatch'; frame: Buffer }
  | { kind: 'refuse'; state: 'rejected' | 'denied'; reason: string; answer: Buffer }
  /** 2026-07-28: mcpguard answered the call itself with its approval question (the call ends input_required). */
  | { kind: 'card'; answer: Buffer; state: string };

export class Gate {
  readonly tools: ToolBook;
  private readonly seal = new ApprovalSeal();
  /** Calls the gate holds, and how to stop waiting for each. */
  private readonly held = new Map<Call, () => void>();
  /** mcpguard's own requests to the client (approval cards), by id key. */
  private readonly asked = new Map<string, (answer: JsonNode | null, frame: Buffer) => void>();
  private nextId = 1;
  /** The client declared `elicitation` in its initialize (legacy era); form mode is named from 2025-11-25. */
  private legacyElicitation: { form: boolean } | null = null;
  /** Chains (first leg's call id) whose call a person approved, with the argument bytes approved. */
  private readonly approvedChains = new Map<string, Buffer>();
  /** 2026-07-28: what each card sent as input_required was (rule, reason, card), by its sealed state, for the retry's record. */
  private readonly shownCards = new Map<string, Decision>();

  constructor(private readonly config: GateConfig, private readonly io: GateIO, schemas: Schemas) {
    this.tools = new ToolBook(schemas, io, (id) => `mcpguard-tools-list-${id}`, () => io.version());
  }

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
  /**
   * Decide a tools/call. The outcome is immediate when nothing has to be
   * waited for (the tool and the engine are known, no person is asked): the
   * call then goes out in order with the lines around it. Otherwise it comes
   * once, later, unless the call is withdrawn first (then it is ignored).
   */
  review(call: Call, request: Request, meta: RequestMeta): Outcome | Promise<Outcome> {
    const { frame, params } = request;
    const name = call.tool!;
    const argsNode = params!.members!.get('arguments');
    const argBytes = argsNode === undefined ? Buffer.from('{}') : frame.subarray(argsNode.start, argsNode.end);
    const state = params!.members!.get('requestState');
    if (this.io.modern() && state?.type === 'string' && this.seal.isOurs(stringValue(frame, state))) {
      return this.retried(call, request, stringValue(frame, state), argBytes);
    }
    let args: unknown;
    const parsed = (): unknown => (args ??= JSON.parse(argBytes.toString('utf8')));
    if (!this.config.validateArgs) return this.afterSchema(call, request, meta, argBytes, parsed);
    const now = this.tools.checkNow(name, parsed);
    if (now !== null) return now.ok ? this.afterSchema(call, request, meta, argBytes, parsed) : this.schemaRefusal(call, now, name);
    return this.waitFor(call, this.tools.check(name, parsed, meta, frame)).then((verdict) => {
      if (verdict === null) return withdrawn();
      if (!verdict.ok) return this.schemaRefusal(call, verdict, name);
      return this.afterSchema(call, request, meta, argBytes, parsed);
    });
  }

  /** The policy, and a person when the policy asks. */
  private afterSchema(call: Call, request: Request, meta: RequestMeta, argBytes: Buffer, parsed: () => unknown): Outcome | Promise<Outcome> {
    const { frame } = request;
    const name = call.tool!;
    const policy = this.config.policy;
    if (policy === null) return { kind: 'dispatch', frame };
    let verdict;
    try {
      verdict = decide(policy, name, parsed, this.tools.annotations(name));
    } catch (error) {
      // A `when` that cannot be checked (arguments nested beyond the engine's bound): refusing is the safe answer.
      call.decision = { by: 'policy', rule: null, channel: null, card: null, reason: (error as Error).message };
      return this.refuse(call, 'denied', `the policy could not decide: ${(error as Error).message}`);
    }
    const why = verdict.rule === null ? `the policy's default is ${verdict.decision}` : `policy rule ${verdict.rule}${verdict.reason === null ? '' : ` (${verdict.reason})`}`;
    if (verdict.decision === 'allow') return { kind: 'dispatch', frame };
    if (verdict.decision === 'deny') {
      call.decision = { by: 'policy', rule: verdict.rule, channel: null, card: null, reason: why };
      return this.refuse(call, 'denied', `denied by ${why}`);
    }
    // A later leg of a call already approved (the server asked for input of its own) is not asked again.
    const approved = call.chain === null ? undefined : this.approvedChains.get(call.chain);
    if (approved !== undefined && approved.equals(argBytes)) {
      call.decision = { by: 'approval', rule: verdict.rule, channel: null, card: null, reason: 'approved on an earlier leg of this call' };
      return { kind: 'dispatch', frame };
    }
    return this.ask(call, request, meta, argBytes, why, verdict.rule);
  }

  /** Stop holding a call (cancelled, timed out, session ending): true if the gate was holding it. */
  withdraw(call: Call): boolean {
    const stop = this.held.get(call);
    if (stop === undefined) return false;
    this.held.delete(call);
    stop();
    return true;
  }

  /** Every call still held (the session is ending). */
  heldCalls(): Call[] {
    return [...this.held.keys()];
  }

  /** A client response to one of mcpguard's own questions: consumed here (true), never forwarded. */
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

  /** An id the client must not use, and the server must not send, while mcpguard's own request has it. */
  ownsId(key: string): boolean {
    return this.asked.has(key) || this.retired.has(key) || this.tools.ownsId(key);
  }

  /** Ids of cards withdrawn before their answer came (bounded: oldest forgotten first). */
  private readonly retired = new Set<string>();

  private retire(key: string): void {
    this.retired.add(key);
    if (this.retired.size > 256) this.retired.delete(this.retired.values().next().value!);
  }

  /** A tools/list answer passing to the client: learned, and (hide_denied) stripped of tools that are always denied. */
  toolsListed(call: Call, cursor: boolean, result: JsonNode, frame: Buffer): Buffer | null {
    const tools = this.tools.learnAnswer(result, frame, !cursor);
    // Load the engine now, while the model reads the list, not on the first call.
    if (this.config.validateArgs) loadEngine().catch(() => {});
    const policy = this.config.policy;
    if (policy === null || !policy.hideDenied || tools === null) return null;
    const hidden = new Set<number>();
    tools.list.forEach((tool, i) => {
      const name = typeof tool?.name === 'string' ? tool.name : null;
      if (name !== null && alwaysDenied(policy, name, this.tools.annotations(name))) hidden.add(i);
    });
    if (hidden.size === 0) return null;
    call.flags = [...(call.flags ?? []), `hid ${hidden.size} denied tool(s)`];
    return applySplices(frame, [dropItems(frame, tools.node, hidden)]);
  }

  /**
   * A tools/call result on its way to the client: its structuredContent
   * against the tool's outputSchema (when the tool has one and the engine is
   * loaded, which it is once the call's arguments were checked). A mismatch
   * is flagged on the call and said once per tool; under enforce the client
   * gets a tool error instead (returned as the replacement frame).
   */
  checkOutput(call: Call, response: Response): Buffer | null {
    if (!this.config.validateArgs || response.isError || call.tool === null) return null;
    const definition = this.tools.definition(call.tool);
    if (definition === undefined || !Object.hasOwn(definition, 'outputSchema')) return null;
    const node = response.body.members!.get('structuredContent');
    const verdict = this.tools.checkOutputNow(call.tool, node === undefined ? undefined : JSON.parse(nodeText(response.frame, node)) as unknown);
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
    return Buffer.from(`{"jsonrpc":"2.0","id":${idJson(call.requestId)},"result":${JSON.stringify(result)}}\n`);
  }

  private readonly outputReported = new Set<string>();

  // ---- approval ----

  private ask(call: Call, request: Request, meta: RequestMeta, argBytes: Buffer, why: string, rule: number | null): Outcome | Promise<Outcome> {
    const expiresAt = Date.now() + this.config.approvalTimeoutMs;
    const card = makeCard({ server: this.config.server, tool: call.tool!, argumentsText: argBytes.toString('utf8'), why, expiresAt });
    const shown = (channel: Decision['channel']): Decision => ({
      by: channel === 'approve-cmd' ? 'approve-cmd' : 'approval', rule, channel,
      card: { sha256: card.sha256, bytes: card.bytes, shown_at: new Date().toISOString(), answered_at: null, answer: null }, reason: why,
    });
    if (this.io.modern()) {
      if (!modernElicitation(request.frame, meta, request.params!)) return this.cannotAsk(call, rule, why);
      call.decision = shown('input_required');
      const state = this.seal.seal(call.tool!, argBytes, expiresAt);
      this.shownCards.set(state, call.decision);
      // Bounded like the seal's open nonces: a client that never retries cannot grow it.
      if (this.shownCards.size > MAX_SHOWN_CARDS) this.shownCards.delete(this.shownCards.keys().next().value!);
      const result = { resultType: 'input_required', inputRequests: { [APPROVAL_KEY]: { method: 'elicitation/create', params: elicitationParams(card, true) } }, requestState: state };
      return { kind: 'card', state, answer: Buffer.from(`{"jsonrpc":"2.0","id":${idJson(call.requestId)},"result":${JSON.stringify(result)}}\n`) };
    }
    if (this.legacyElicitation !== null) {
      call.decision = shown('elicitation');
      return this.elicit(call, card, expiresAt, argBytes, request.frame);
    }
    if (this.config.approveCmd !== null) {
      call.decision = shown('approve-cmd');
      const action = { server: this.config.server, tool: call.tool, arguments: JSON.parse(argBytes.toString('utf8')) as unknown, reason: why, call_id: call.callId, expires_at: new Date(expiresAt).toISOString() };
      return this.waitFor(call, runApproveCmd(this.config.approveCmd, action, this.config.approvalTimeoutMs)).then((verdict) => {
        if (verdict === null) return withdrawn();
        answered(call, verdict.approved ? 'approved' : 'denied');
        return verdict.approved ? { kind: 'dispatch', frame: request.frame } : this.refuse(call, 'denied', `not approved: ${verdict.detail}`);
      });
    }
    return this.cannotAsk(call, rule, why);
  }

  private cannotAsk(call: Call, rule: number | null, why: string): Outcome {
    call.decision = { by: 'policy', rule, channel: null, card: null, reason: why };
    return this.refuse(call, 'denied', `${why} asks for a person's approval, and there is no way to ask: the client declared no elicitation capability and no --approve-cmd is set`);
  }

  /** Legacy era: ask through the client's own elicitation UI, with a wall-clock deadline nothing else moves. */
  private elicit(call: Call, card: Card, expiresAt: number, argBytes: Buffer, frame: Buffer): Promise<Outcome> {
    const id = `mcpguard-approval-${this.nextId++}`;
    const key = `s${id}`;
    return new Promise<Outcome>((resolve) => {
      const finish = (outcome: Outcome): void => {
        clearTimeout(timer);
        this.held.delete(call);
        this.asked.delete(key);
        resolve(outcome);
      };
      const cancelCard = (reason: string): void => {
        this.retire(key);
        this.io.toClient(Buffer.from(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${JSON.stringify(id)},"reason":${JSON.stringify(reason)}}}\n`));
      };
      const timer = setTimeout(() => {
        cancelCard('mcpguard: the approval timed out');
        answered(call, 'timed_out');
        finish(this.refuse(call, 'denied', `not approved: no answer within --approval-timeout ${this.config.approvalTimeoutMs} ms`));
      }, Math.max(0, expiresAt - Date.now()));
      this.held.set(call, () => {
        cancelCard('mcpguard: the tool call was cancelled');
        finish(withdrawn());
      });
      this.asked.set(key, (result, answerFrame) => {
        const action = result === null ? 'error' : memberString(answerFrame, result, 'action') ?? 'unknown';
        answered(call, action);
        if (action === 'accept') {
          if (call.chain !== null) this.approvedChains.set(call.chain, argBytes);
          finish({ kind: 'dispatch', frame });
        } else finish(this.refuse(call, 'denied', `not approved: the person answered ${action}`));
      });
      const params = elicitationParams(card, this.legacyElicitation!.form);
      this.io.toClient(Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":"elicitation/create","params":${JSON.stringify(params)}}\n`));
    });
  }

  /** 2026-07-28: the retry of a call mcpguard answered with its card. */
  private retried(call: Call, request: Request, state: string, argBytes: Buffer): Outcome {
    const { frame, params } = request;
    const unsealed = this.seal.unseal(state, call.tool!, argBytes);
    // The card this retry answers (its rule, reason, hash and the time it was shown), when mcpguard still knows it.
    const spent = unsealed.ok || unsealed.spent === true;
    const shown = spent ? this.shownCards.get(state) : undefined;
    if (spent) this.shownCards.delete(state);
    call.decision = {
      by: 'approval', rule: shown?.rule ?? null, channel: 'input_required', reason: shown?.reason ?? null,
      card: shown?.card ? { ...shown.card, answered_at: null, answer: null } : null,
    };
    const responses = membersOf(frame, params!.members!.get('inputResponses'));
    const mine = responses?.members?.get(APPROVAL_KEY);
    const action = mine === undefined ? null : memberString(frame, membersOf(frame, mine) ?? undefined, 'action') ?? null;
    // An answer that came too late is still recorded as given, with when it came.
    if (spent) answered(call, action ?? 'none');
    if (!unsealed.ok) return this.refuse(call, 'denied', `not approved: ${unsealed.reason}`);
    if (action !== 'accept') return this.refuse(call, 'denied', `not approved: the person answered ${action ?? 'nothing'}`);
    if (call.chain !== null) this.approvedChains.set(call.chain, Buffer.from(argBytes));
    // The server gets the call as it was before mcpguard asked: its own answer and state removed.
    const onlyMine = responses!.members!.size === 1;
    const params2 = rebuildObject(frame, params!, (key) => {
      if (key === 'requestState' || (key === 'inputResponses' && onlyMine)) return null;
      if (key === 'inputResponses') return dropMembers(frame, responses!, new Set([APPROVAL_KEY])).text;
      return undefined;
    });
    return { kind: 'dispatch', frame: applySplices(frame, [params2]) };
  }

  // ---- refusals ----

  private schemaRefusal(call: Call, verdict: Exclude<SchemaVerdict, { ok: true }>, name: string): Outcome {
    call.decision = { by: 'schema', rule: null, channel: null, card: null, reason: verdict.reason };
    if (verdict.kind === 'unknown_tool') {
      const answer = Buffer.from(`{"jsonrpc":"2.0","id":${idJson(call.requestId)},"error":${JSON.stringify({ code: -32602, message: `mcpguard: unknown tool ${JSON.stringify(name)}: ${verdict.reason}`, data: { source: 'mcpguard', state: 'rejected', rule: 'unknown_tool' } })}}\n`);
      return { kind: 'refuse', state: 'rejected', reason: `unknown tool: ${verdict.reason}`, answer };
    }
    return this.refuse(call, 'rejected', verdict.reason);
  }

  /** A tool execution error (isError: true): the model reads it and can correct itself. */
  private refuse(call: Call, state: 'rejected' | 'denied', reason: string): Outcome {
    const text = `mcpguard ${state === 'denied' ? 'denied' : 'refused'} this call before it reached the server: ${processMasker().text(reason)}`;
    // `_meta` first: whoever reads only the start of the line still sees that mcpguard answered.
    const result = {
      ...(this.io.modern() ? { resultType: 'complete' } : {}),
      _meta: { 'io.mcpguard/refused': { source: 'mcpguard', state, by: call.decision?.by ?? null, rule: call.decision?.rule ?? null } },
      content: [{ type: 'text', text }],
      isError: true,
    };
    return { kind: 'refuse', state, reason, answer: Buffer.from(`{"jsonrpc":"2.0","id":${idJson(call.requestId)},"result":${JSON.stringify(result)}}\n`) };
  }

  /** Wait for `work` unless the call is withdrawn first (then null). */
  private waitFor<T>(call: Call, work: Promise<T>): Promise<T | null> {
    return new Promise((resolve) => {
      let done = false;
      this.held.set(call, () => {
        done = true;
        resolve(null);
      });
      void work.then((value) => {
        if (done) return;
        this.held.delete(call);
        resolve(value);
      });
    });
  }
}

/** Most 2026-07-28 cards remembered for their retries' records (oldest forgotten first). */
const MAX_SHOWN_CARDS = 4096;

function withdrawn(): Outcome {
  return { kind: 'refuse', state: 'denied', reason: 'withdrawn', answer: Buffer.alloc(0) };
}

function answered(call: Call, answer: string): void {
  if (call.decision?.card) {
    call.decision.card.answered_at = new Date().toISOString();
    call.decision.card.answer = answer;
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
