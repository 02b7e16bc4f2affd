/**
 * One call as an OpenTelemetry SERVER span, by the MCP semantic conventions
 * (open-telemetry/semantic-conventions-genai, docs/gen-ai/mcp.md), with the
 * gate's steps as guardrail events (docs/gen-ai/gen-ai-security.md) and the
 * call's stderr as log records tied to the span. Built from plain facts that
 * both a live `Call` and a `call_end` record provide, so the live export and
 * the backfill from records send the same span.
 *
 * Everything here came from one side or the other (ids, names, stderr): it is
 * masked before it leaves. Arguments and results are read only with
 * --otlp-content on (masked, then cut at CONTENT_BYTES).
 */
import { CONTENT_BYTES, type CallContent, type Decision } from '../mcp/call.js';
import type { Masker } from '../mask/mask.js';
import { callSpanId, sessionSpanId, sessionTraceId } from './ids.js';
import { attr, spaced } from './interned.js';
import { ObjectSpan } from './object-span.js';
import { SpanKind, parseTraceparent, type Attributes, type LogData, type SpanData, type SpanWriter } from './model.js';

/** What a span is built from: the fields of a `Call` that a `call_end` record also keeps. */
export interface CallFacts {
  callId: string;
  requestId: string | number | null;
  method: string | null;
  tool: string | null;
  /** `prompts/get NAME` and the like (live only: records do not keep it). */
  target: string | null;
  state: string;
  startedAt: number;
  dispatchedAt: number | null;
  endedAt: number;
  protocolVersion: string | null;
  traceparent: string | null;
  /** The client's tracestate with it (live only). */
  tracestate?: string | null;
  decision: Decision | null;
  generation: number | null;
  cancelRequested: boolean;
  /** The JSON-RPC error code the server answered with (live only). */
  errorCode: number | null;
  stderr: { seen: number; retained: number; truncated: boolean; shared: boolean; text: string | null } | null;
  /** A tools/call's arguments and result (live, --otlp-content on only). */
  content?: CallContent | undefined;
  /** What the gate's schema and policy steps took, ms (live only: records do not keep them). */
  steps?: { schemaMs: number | null; policyMs: number | null } | undefined;
}

/** The session a call belongs to, and what its gate had switched on. */
export interface SessionFacts {
  sessionId: string;
  /** --validate-args on: every tools/call passed (or failed) the schema step. */
  schema: boolean;
  /** The policy's name (its file's basename), or null without --policy. */
  policy: string | null;
}

/** Where a span hangs: the client's trace context when it sent one, else the session's root span. */
export function parentOf(
  session: string,
  traceparent: string | null,
  tracestate: string | null = null,
): { traceId: string; parentSpanId: string; sampled: boolean | null; traceState?: string } {
  const remote = parseTraceparent(traceparent, tracestate);
  if (remote !== null)
    return {
      traceId: remote.traceId,
      parentSpanId: remote.spanId,
      sampled: remote.sampled,
      ...(remote.traceState === undefined ? {} : { traceState: remote.traceState }),
    };
  if (sessionParent.session !== session)
    sessionParent = { session, parent: { traceId: sessionTraceId(session), parentSpanId: sessionSpanId(session), sampled: null } };
  return sessionParent.parent;
}

/** The session's own parent, made once (a process exports one session at a time); callers only read it. */
let sessionParent = { session: '', parent: { traceId: '', parentSpanId: '', sampled: null as boolean | null } };

/** A call without stderr lines shares this (callers only read it). */
const NO_LOGS: readonly LogData[] = Object.freeze([]);

const ns = (ms: number): bigint => BigInt(Math.round(ms)) * 1_000_000n;

/** The `error.type` of a final state: the JSON-RPC code, `tool_error` for an isError result (mcpguard's refusals are such results), else a low-cardinality name; null when it succeeded. */
export function errorType(f: Pick<CallFacts, 'state' | 'errorCode' | 'decision'>): string | null {
  switch (f.state) {
    case 'completed':
    case 'input_required':
    case 'stream_ended':
      return null;
    case 'error':
      return f.errorCode === null ? '_OTHER' : String(f.errorCode);
    case 'tool_error':
      return 'tool_error';
    case 'denied':
      return 'tool_error';
    case 'rejected':
      return f.decision === null ? 'rejected' : 'tool_error';
    case 'timed_out_after_dispatch':
      return 'timeout';
    case 'cancelled_before_dispatch':
    case 'cancelled_after_dispatch':
      return 'cancelled';
    case 'unknown_after_dispatch':
      return 'server_exited';
    default:
      return '_OTHER';
  }
}

/** Arguments or a result as an attribute: masked, then cut at CONTENT_BYTES (`…(+N bytes)` says what is not shown). */
function contentText(masker: Masker, bytes: Buffer, total: number): string {
  const { text, omitted } = masker.clip(bytes, CONTENT_BYTES, total);
  return omitted > 0 ? `${text}…(+${omitted} bytes)` : text;
}

/** The name a span goes by: `{mcp.method.name} {target}`, the target a tool (tools/call) or a prompt (prompts/get); null for other methods. Two functions, not an object per call. */
function toolOf(f: CallFacts): string | null {
  return f.method === 'tools/call' ? f.tool : null;
}

function promptOf(f: CallFacts): string | null {
  return f.method === 'prompts/get' && f.target !== null && f.target.startsWith('prompts/get ') ? f.target.slice(12) : null;
}

/** The one object writer (callSpan): spans are written one at a time, each taken before the next begins. */
const AS_OBJECT = new ObjectSpan();

/** The call's span; null for a call with no method (nothing to name it by). */
export function callSpan(f: CallFacts, s: SessionFacts, masker: Masker): SpanData | null {
  return writeCallSpan(f, s, masker, AS_OBJECT) ? AS_OBJECT.take() : null;
}

/**
 * The call's span, written field by field into `out`: a SpanData (callSpan),
 * or protobuf bytes in the exporter's batch (arena.ts), so that the live
 * export's default path makes no span object. False, and nothing written, for
 * a call with no method.
 */
export function writeCallSpan(f: CallFacts, s: SessionFacts, masker: Masker, out: SpanWriter): boolean {
  if (f.method === null) return false;
  const method = masker.text(f.method);
  const tool = toolOf(f);
  const prompt = promptOf(f);
  const target = tool ?? prompt;
  const error = errorType(f);
  const parent = parentOf(s.sessionId, f.traceparent, f.tracestate ?? null);
  out.begin(
    parent.traceId,
    callSpanId(s.sessionId, f.callId),
    parent.parentSpanId,
    parent.traceState === undefined ? undefined : masker.text(parent.traceState),
    target === null ? method : spaced(method, masker.text(target)),
    SpanKind.server,
    f.startedAt,
    Math.max(f.endedAt, f.startedAt),
  );
  // Pairs that repeat from span to span are shared (interned.ts); ids and durations are the call's own.
  out.attr(attr('mcp.method.name', method));
  out.attr(attr('mcp.session.id', s.sessionId));
  out.attr(attr('network.transport', 'pipe'));
  if (f.requestId !== null) out.own('jsonrpc.request.id', typeof f.requestId === 'string' ? masker.text(f.requestId) : String(f.requestId));
  if (tool !== null) {
    out.attr(attr('gen_ai.tool.name', masker.text(tool)));
    out.attr(attr('gen_ai.operation.name', 'execute_tool'));
  }
  if (prompt !== null) out.attr(attr('gen_ai.prompt.name', masker.text(prompt)));
  if (f.protocolVersion !== null) out.attr(attr('mcp.protocol.version', masker.text(f.protocolVersion)));
  if (error !== null) out.attr(attr('error.type', error));
  if (f.state === 'error' && f.errorCode !== null) out.attr(attr('rpc.response.status_code', String(f.errorCode)));
  out.own('mcpguard.call.id', f.callId);
  out.attr(attr('mcpguard.call.state', f.state));
  if (f.generation !== null) out.attr(attr('mcpguard.generation', f.generation));
  if (f.dispatchedAt !== null) out.own('mcpguard.gate.duration_ms', f.dispatchedAt - f.startedAt);
  if (f.cancelRequested) out.attr(attr('mcpguard.cancel_requested', true));
  const e = f.stderr;
  if (e !== null && e.seen > 0) {
    out.own('mcpguard.stderr.bytes_seen', e.seen);
    out.own('mcpguard.stderr.bytes_retained', e.retained);
    out.attr(attr('mcpguard.stderr.truncated', e.truncated));
    if (e.shared) out.attr(attr('mcpguard.stderr.shared', true));
  }
  const c = f.content;
  if (c !== undefined) {
    if (c.arguments !== null) out.own('gen_ai.tool.call.arguments', contentText(masker, c.arguments, c.argumentsBytes));
    if (c.result !== null) out.own('gen_ai.tool.call.result', contentText(masker, c.result, c.resultBytes));
  }
  guardrailEvents(f, s, out);
  out.end(error === null ? 0 : 2, error === null ? undefined : f.state);
  return true;
}

/**
 * The gate's steps, as guardrail events: schema, policy, a held pin, and a
 * person's approval with its wait. What the records say decided the call is
 * the step that decided it; the steps before it passed. The reason is a
 * low-cardinality phrase (the conventions forbid user content in it): the
 * rule's number and who answered, never the arguments a rule quoted.
 */
function guardrailEvents(f: CallFacts, s: SessionFacts, events: SpanWriter): void {
  if (f.method !== 'tools/call') return;
  const d = f.decision;
  const decidedAt = f.dispatchedAt ?? f.endedAt;
  const by = d?.by ?? null;
  const passed = by === null && f.dispatchedAt !== null;
  const gateMs = decidedAt - f.startedAt;
  if (s.schema && (by !== null || passed)) {
    const verdict = by === 'schema' ? 'deny' : 'allow';
    step(
      events,
      f,
      'schema',
      verdict,
      by === 'schema' ? f.endedAt : decidedAt,
      f.steps?.schemaMs ?? (by === 'schema' ? gateMs : null),
      'tool_call',
      null,
      null,
      verdict === 'deny' ? 'arguments do not match the inputSchema' : null,
    );
  }
  if (by === 'pins') step(events, f, 'pins', 'deny', f.endedAt, gateMs, 'tool_definition', null, null, 'the tool changed since it was pinned');
  if (s.policy !== null && by !== 'schema' && by !== 'pins' && (by !== null || passed)) {
    const asked = by === 'approval' || by === 'approve-cmd';
    const verdict = by === 'policy' ? 'deny' : asked ? 'escalate' : 'allow';
    // Rules are numbered from 1, as the policy's own messages and `mcpguard policy test` name them.
    const rule = d !== null && (by === 'policy' || asked) && d.rule !== null ? d.rule + 1 : null;
    const which = rule === null ? "the policy's default" : `policy rule ${rule}`;
    const reason = verdict === 'deny' ? `${which} denies` : verdict === 'escalate' ? `${which} asks a person` : null;
    const at = d?.card?.shown_at ? Date.parse(d.card.shown_at) : by === 'policy' ? f.endedAt : decidedAt;
    step(events, f, 'policy', verdict, at, f.steps?.policyMs ?? null, 'tool_call', s.policy, rule, reason);
  }
  if (by === 'approval' || by === 'approve-cmd') {
    const card = d!.card;
    const shown = card?.shown_at ? Date.parse(card.shown_at) : f.startedAt;
    const answered = card?.answered_at ? Date.parse(card.answered_at) : null;
    const dispatched = f.dispatchedAt !== null;
    const verdict = dispatched ? 'allow' : f.state === 'input_required' ? 'escalate' : 'deny';
    const wait = (answered ?? decidedAt) - shown;
    const reason = dispatched ? null : verdict === 'escalate' ? 'a card was shown; the answer comes with the retry' : `not approved (${d!.channel ?? by})`;
    step(events, f, 'approval', verdict, answered ?? decidedAt, wait, 'tool_call', null, null, reason, d!.channel);
  }
}

/** The gate's steps by their component names (no string made per event). */
const COMPONENT = { schema: 'mcpguard.schema', policy: 'mcpguard.policy', pins: 'mcpguard.pins', approval: 'mcpguard.approval' } as const;

function step(
  out: SpanWriter,
  f: CallFacts,
  component: keyof typeof COMPONENT,
  verdict: 'allow' | 'deny' | 'escalate',
  atMs: number,
  durationMs: number | null,
  subtype: 'tool_call' | 'tool_definition',
  policy: string | null,
  rule: number | null,
  reason: string | null,
  channel: string | null = null,
): void {
  out.event(spaced('run_guardrail', COMPONENT[component]), Number.isFinite(atMs) ? atMs : f.endedAt);
  out.attr(attr('gen_ai.operation.name', 'run_guardrail'));
  out.attr(attr('gen_ai.guardrail.component.name', COMPONENT[component]));
  out.attr(attr('gen_ai.guardrail.target.type', 'input'));
  out.attr(attr('gen_ai.guardrail.target.subtype', subtype));
  out.own('gen_ai.guardrail.target.id', f.callId);
  out.attr(attr('gen_ai.guardrail.verdict.type', verdict));
  out.attr(attr('gen_ai.guardrail.action.type', verdict === 'deny' ? 'block' : verdict));
  if (reason !== null) out.attr(attr('gen_ai.guardrail.verdict.reason', reason));
  if (policy !== null) {
    out.attr(attr('gen_ai.guardrail.security.policy.id', policy));
    if (rule !== null) out.attr(attr('gen_ai.guardrail.security.policy.rule.id', String(rule)));
  }
  if (durationMs !== null) out.own('mcpguard.guardrail.duration_ms', Math.max(0, durationMs));
  if (channel !== null) out.attr(attr('mcpguard.approval.channel', channel));
}

/**
 * The call's retained stderr (already masked, within --stderr-call-bytes) as
 * one log record a line, tied to the call's span. Timed at the call's end:
 * the ring keeps bytes, not when each arrived.
 */
export function callLogs(f: CallFacts, span: Pick<SpanData, 'traceId' | 'spanId'> | null, sessionId: string): readonly LogData[] {
  const text = f.stderr?.text ?? null;
  if (text === null || text === '') return NO_LOGS;
  const parent = span ?? { traceId: parentOf(sessionId, f.traceparent).traceId, spanId: callSpanId(sessionId, f.callId) };
  const attributes: Attributes = [
    ['log.iostream', 'stderr'],
    ['mcp.session.id', sessionId],
    ['mcpguard.call.id', f.callId],
  ];
  return stderrLines(text).map((body) => ({
    timeNs: ns(f.endedAt),
    severityNumber: 9,
    severityText: 'INFO',
    body,
    attributes,
    traceId: parent.traceId,
    spanId: parent.spanId,
  }));
}

/** Lines of retained stderr text, the last one without its newline; blank lines dropped. */
export function stderrLines(text: string): string[] {
  return text.split('\n').filter((line) => line.trim() !== '');
}

/** The session's stderr outside any call (its label line dropped), as the live export sends it. */
export function tailLogs(sessionId: string, endedAt: number, tail: string): LogData[] {
  const lines = stderrLines(tail);
  if (lines[0]?.startsWith('[')) lines.shift();
  return lines.map((body) => ({
    timeNs: BigInt(Math.round(endedAt)) * 1_000_000n,
    severityNumber: 9,
    severityText: 'INFO',
    body,
    attributes: [
      ['mcp.session.id', sessionId],
      ['log.iostream', 'stderr'],
    ],
    traceId: sessionTraceId(sessionId),
    spanId: sessionSpanId(sessionId),
  }));
}
