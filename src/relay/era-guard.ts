/**
 * The relay's era half: what the session's protocol era (era.ts) says about
 * each line, and the reporting of lines that break its rules. The relay asks
 * and then acts (forwards, answers, diverts); this module keeps the era, the
 * links between the legs of multi-round calls, and the counts.
 */
import { contentBytes, type Call, type CallState } from '../mcp/call.js';
import { escapeBytes, type Diagnostics } from '../mask/diagnostics.js';
import { idKey, memberId, membersOf, memberString, type Message, type Notification, type Request, type RequestId, type Response } from '../wire/jsonrpc.js';
import type { Rejection } from './observer.js';
import {
  EraTracker,
  META_SUBSCRIPTION_ID,
  STREAM_METHODS,
  checkServerResult,
  readMeta,
  resultType,
  type EraRules,
  type RequestMeta,
  type RuleKind,
  type Violation,
} from '../mcp/era.js';
import { LegLinker } from '../mcp/legs.js';
import { stringValue } from '../wire/json-scan.js';

const NO_META: RequestMeta = { version: null, claimsModern: false, capabilities: false, capabilitiesNode: null, traceparent: null };

/** A client line checked against the era: each item's `_meta`, and the rule it must be refused for, if any. */
export interface ClientVerdict {
  metas: RequestMeta[];
  refuse: { violation: Violation; culprit: Message } | null;
}

/** How a call's answer ends it, or the rule it was refused for. */
export type Outcome = { readonly state: CallState; readonly detail: string | null } | { refused: Violation };

// The ways an answer ends a call, made once (an outcome is read, never kept or changed).
const ANSWERED: Outcome = Object.freeze({ state: 'completed', detail: null });
const ANSWERED_ERROR: Outcome = Object.freeze({ state: 'error', detail: null });
const ANSWERED_INPUT_REQUIRED: Outcome = Object.freeze({ state: 'input_required', detail: 'the server needs input first; the client retries as a new call' });
const ANSWERED_STREAM_END: Outcome = Object.freeze({ state: 'stream_ended', detail: "closed by the server's response" });

export class EraGuard {
  readonly tracker = new EraTracker();
  private readonly legs = new LegLinker();
  /** Rules already explained on stderr without a refusal (a peer that breaks one on every call would flood stderr). */
  private readonly explained = new Set<RuleKind>();

  constructor(
    private readonly rules: EraRules,
    private readonly counts: Partial<Record<RuleKind, number>>,
    private readonly diag: Diagnostics,
    private readonly notify: (rejection: Rejection) => void,
    /** The call in flight with this id key, if any. */
    private readonly inFlight: (key: string) => Call | undefined,
  ) {}

  get modern(): boolean {
    return this.tracker.era === 'modern';
  }

  /**
   * A one-message line's verdict (nearly every line is one message): the same
   * object and array each time, not two per line. Valid until the next call
   * of clientLine; the relay reads it before the next line.
   */
  private readonly single: ClientVerdict = { metas: [NO_META], refuse: null };

  /**
   * Check a client line, item by item, before any of it is applied; rules
   * forwarded anyway are reported here. The verdict (and its `metas`) may be
   * reused by the next line: read it, keep the metas you need, not the array.
   */
  clientLine(line: number, frame: Buffer, items: readonly Message[]): ClientVerdict {
    // Slots are overwritten, never cut: setting length to 0 would give the array a fresh store each line.
    const verdict: ClientVerdict = items.length === 1 ? this.single : { metas: new Array<RequestMeta>(items.length), refuse: null };
    const metas = verdict.metas;
    let refuse: ClientVerdict['refuse'] = null;
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      let meta = NO_META;
      let violation: Violation | null = null;
      if (item.kind === 'response') {
        if (this.modern)
          violation = {
            rule: 'client_response',
            reason: 'a client must not write JSON-RPC responses in 2026-07-28 (servers send it no requests)',
            severity: 'refuse',
          };
      } else {
        if (item.params?.members?.has('_meta')) meta = readMeta(frame, item.params);
        violation = this.tracker.checkClient(item.method, meta, item.kind === 'request');
      }
      metas[i] = meta;
      if (violation === null || refuse !== null) continue;
      if (this.rules === 'warn' || violation.severity === 'flag') this.report('client', line, violation, frame, 'forwarded');
      else refuse = { violation, culprit: item };
    }
    verdict.refuse = refuse;
    return verdict;
  }

  /** A request about to be forwarded: it may settle the era; its call learns its version, trace and earlier leg. */
  callStarted(call: Call, item: Request, meta: RequestMeta): void {
    const { method, frame, params } = item;
    this.tracker.clientRequest(method, item.idKey, meta, params, frame);
    call.protocolVersion = meta.version ?? this.tracker.version;
    call.traceparent = meta.traceparent;
    if (meta.tracestate) call.tracestate = meta.tracestate;
    const args = call.content === undefined ? undefined : params?.members?.get('arguments');
    if (args !== undefined) {
      call.content!.arguments = contentBytes(frame, args.start, args.end);
      call.content!.argumentsBytes = args.end - args.start;
    }
    if (method === 'tools/call' || method === 'prompts/get' || method === 'resources/read') {
      call.target = this.targetOf(method, call.tool ?? memberString(frame, params, method === 'resources/read' ? 'uri' : 'name') ?? '');
      this.legs.retry(call, params, frame);
    }
  }

  /** The last target named, kept: a session calling the same tool again and again makes its target string once. */
  private lastTarget = { method: '', name: '', target: '' };

  private targetOf(method: string, name: string): string {
    const last = this.lastTarget;
    if (last.method !== method || last.name !== name) {
      last.method = method;
      last.name = name;
      last.target = `${method} ${name}`;
    }
    return last.target;
  }

  /** mcpguard answered a call with its own approval card: the retry will echo `state`, and is linked by it. */
  cardShown(call: Call, state: string): void {
    this.legs.openLeg(call, state);
  }

  /**
   * A server request or notification in a modern session: the rule it
   * breaks, if any. A modern server writes responses and notifications only,
   * and cancels nothing but an open listen.
   */
  serverMessage(item: Request | Notification): Violation | null {
    if (!this.modern) return null;
    if (item.kind === 'request') {
      return {
        rule: 'server_request',
        reason: 'a 2026-07-28 server must not write JSON-RPC requests (they travel inside an input_required result)',
        severity: 'refuse',
      };
    }
    if (item.method !== 'notifications/cancelled' || this.openListen(item) !== undefined) return null;
    return {
      rule: 'stray_server_cancel',
      reason: 'a 2026-07-28 server may send notifications/cancelled only to end an open subscriptions/listen',
      severity: 'refuse',
    };
  }

  /**
   * A modern server's notification tagged with a subscription id: why it may
   * not reach the client, else null. It belongs to the subscriptions/listen
   * with that request id, and only while that listen is open; for one that
   * ended, or never was, no client is listening and its SDK could take it for
   * another stream. `late`: the client closed that listen and the server has
   * not answered the cancel yet, so it may have written this before it read
   * the cancel (a race, like a late response, not the server's fault).
   */
  strayNotification(item: Notification): { reason: string; late: boolean } | null {
    if (!this.modern || item.params?.members?.has('_meta') !== true) return null;
    const meta = membersOf(item.frame, item.params.members.get('_meta'));
    const tag = meta?.members?.get(META_SUBSCRIPTION_ID);
    if (tag === undefined) return null;
    const id = memberId(item.frame, meta!, META_SUBSCRIPTION_ID);
    const call = id === undefined ? undefined : this.inFlight(idKey(id));
    const listen = call !== undefined && STREAM_METHODS.has(call.method!) ? call : undefined;
    if (listen?.state === null) return null;
    // A string id shown quoted and escaped, a number as written: "7" and 7 are different ids.
    const shown =
      tag.type === 'string'
        ? escapeBytes(Buffer.from(stringValue(item.frame, tag)))
        : tag.type === 'number' && tag.end - tag.start <= 32
          ? item.frame.toString('latin1', tag.start, tag.end)
          : `(a ${tag.type})`;
    if (listen?.cancelRequested === true)
      return { late: true, reason: `a notification for subscription id ${shown}, which the client closed before the server read its cancel` };
    return { late: false, reason: `notification for subscription id ${shown}, which no open subscriptions/listen has (it ended, or never was)` };
  }

  /** The listen a modern server's notifications/cancelled ends (no response follows it), if any. */
  endedListen(item: Notification): Call | undefined {
    return this.modern && item.method === 'notifications/cancelled' ? this.openListen(item) : undefined;
  }

  /** The state a response leaves its call in; a result that breaks the era's rules is refused under enforce. */
  outcome(line: number, call: Call, response: Response): Outcome {
    this.tracker.answered(response.idKey, !response.isError, response.isError ? undefined : response.body, response.frame);
    if (call.content !== undefined && !response.isError) {
      // --otlp-content on: the result as the server sent it (masked and capped by the export, never here).
      call.content.result = contentBytes(response.frame, response.body.start, response.body.end);
      call.content.resultBytes = response.body.end - response.body.start;
    }
    if (response.isError) {
      // The code the server answered, for the call's OpenTelemetry span (error.type); a string "code" is no code.
      const code = memberId(response.frame, response.body, 'code');
      if (typeof code === 'number') call.errorCode = code;
      return ANSWERED_ERROR;
    }
    if (this.modern) {
      const violation = checkServerResult(call.method, response.body, response.frame);
      if (violation !== null) {
        if (violation.severity === 'refuse' && this.rules === 'enforce') {
          this.report('child', line, violation, response.frame, 'refused');
          return { refused: violation };
        }
        this.report('child', line, violation, response.frame, 'forwarded');
        (call.flags ??= []).push(violation.rule);
      }
    }
    if (response.body.members!.has('resultType') && resultType(response.body, response.frame) === 'input_required') {
      this.legs.inputRequired(call, response.body, response.frame);
      return ANSWERED_INPUT_REQUIRED;
    }
    if (STREAM_METHODS.has(call.method!)) return ANSWERED_STREAM_END;
    return ANSWERED;
  }

  /**
   * A line that broke its era's rules: counted, said on stderr (a forwarded
   * one once per rule and session), and recorded unless the rule only flags
   * (those are recorded on the call).
   */
  report(direction: 'client' | 'child', line: number, v: Violation, frame: Buffer, action: 'refused' | 'forwarded'): void {
    this.counts[v.rule] = (this.counts[v.rule] ?? 0) + 1;
    const first = !this.explained.has(v.rule);
    this.explained.add(v.rule);
    const shown = frame.subarray(0, frame.length - 1);
    if (action === 'refused' || first) {
      const what = action === 'refused' ? (direction === 'client' ? 'refused client line' : 'diverted child line') : `forwarded ${direction} line`;
      const later = action === 'forwarded' ? ' (further lines breaking this rule are only counted)' : '';
      this.diag.line(`${what} ${line}: ${v.rule}: ${v.reason}: ${escapeBytes(shown)}${later}`);
    }
    if (v.severity === 'refuse') this.notify({ direction, line, code: null, reason: v.reason, frame: shown, bytes: shown.length, rule: v.rule, action });
  }

  private openListen(item: Notification): Call | undefined {
    const requestId = memberId(item.frame, item.params, 'requestId');
    return requestId === undefined ? undefined : this.listen(requestId);
  }

  /** The open subscriptions/listen with this request id (known, not yet ended), if any. */
  private listen(id: RequestId): Call | undefined {
    const call = this.inFlight(idKey(id));
    return call !== undefined && call.state === null && STREAM_METHODS.has(call.method!) ? call : undefined;
  }
}
