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
import { attr, attrRun, LastText, OwnKey, RunCache, spaced, type AttrRun } from './interned.js';
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
  const method = METHOD_TEXT.of(masker, f.method);
  const tool = toolOf(f);
  const prompt = promptOf(f);
  const toolText = tool === null ? null : TOOL_TEXT.of(masker, tool);
  const promptText = prompt === null ? null : PROMPT_TEXT.of(masker, prompt);
  const targetText = toolText ?? promptText;
  const version = f.protocolVersion === null ? null : VERSION_TEXT.of(masker, f.protocolVersion);
  const error = errorType(f);
  const status = f.state === 'error' && f.errorCode !== null ? String(f.errorCode) : null;
  const parent = parentOf(s.sessionId, f.traceparent, f.tracestate ?? null);
  out.begin(
    parent.traceId,
    callSpanId(s.sessionId, f.callId),
    parent.parentSpanId,
    parent.traceState === undefined ? undefined : masker.text(parent.traceState),
    targetText === null ? method : spaced(method, targetText),
    SpanKind.server,
    f.startedAt,
    Math.max(f.endedAt, f.startedAt),
  );
  // Pairs that repeat from span to span are shared (interned.ts), and written in runs; ids and durations are the call's own.
  out.attrs(HEAD.find(method, s.sessionId, null, null, null) ?? HEAD.put(method, s.sessionId, null, null, null, headRun(method, s.sessionId)));
  if (f.requestId !== null) out.own(JSONRPC_REQUEST_ID, typeof f.requestId === 'string' ? masker.text(f.requestId) : String(f.requestId));
  const what =
    WHAT.find(toolText, promptText, version, error, status) ??
    WHAT.put(toolText, promptText, version, error, status, whatRun(toolText, promptText, version, error, status));
  if (what.pairs.length > 0) out.attrs(what);
  out.own(MCPGUARD_CALL_ID, f.callId);
  out.attrs(STATE.find(f.state, f.generation, null, null, null) ?? STATE.put(f.state, f.generation, null, null, null, stateRun(f.state, f.generation)));
  if (f.dispatchedAt !== null) out.own(MCPGUARD_GATE_DURATION_MS, f.dispatchedAt - f.startedAt);
  if (f.cancelRequested) out.attr(attr('mcpguard.cancel_requested', true));
  const e = f.stderr;
  if (e !== null && e.seen > 0) {
    out.own(MCPGUARD_STDERR_BYTES_SEEN, e.seen);
    out.own(MCPGUARD_STDERR_BYTES_RETAINED, e.retained);
    out.attr(attr('mcpguard.stderr.truncated', e.truncated));
    if (e.shared) out.attr(attr('mcpguard.stderr.shared', true));
  }
  const c = f.content;
  if (c !== undefined) {
    if (c.arguments !== null) out.own(GEN_AI_TOOL_CALL_ARGUMENTS, contentText(masker, c.arguments, c.argumentsBytes));
    if (c.result !== null) out.own(GEN_AI_TOOL_CALL_RESULT, contentText(masker, c.result, c.resultBytes));
  }
  guardrailEvents(f, s, out);
  out.end(error === null ? 0 : 2, error === null ? undefined : f.state);
  return true;
}

/** The keys of a call span's own attributes, encoded once. */
const JSONRPC_REQUEST_ID = new OwnKey('jsonrpc.request.id');
const MCPGUARD_CALL_ID = new OwnKey('mcpguard.call.id');
const MCPGUARD_GATE_DURATION_MS = new OwnKey('mcpguard.gate.duration_ms');
const MCPGUARD_STDERR_BYTES_SEEN = new OwnKey('mcpguard.stderr.bytes_seen');
const MCPGUARD_STDERR_BYTES_RETAINED = new OwnKey('mcpguard.stderr.bytes_retained');
const GEN_AI_TOOL_CALL_ARGUMENTS = new OwnKey('gen_ai.tool.call.arguments');
const GEN_AI_TOOL_CALL_RESULT = new OwnKey('gen_ai.tool.call.result');
const GEN_AI_GUARDRAIL_TARGET_ID = new OwnKey('gen_ai.guardrail.target.id');
const MCPGUARD_GUARDRAIL_DURATION_MS = new OwnKey('mcpguard.guardrail.duration_ms');

/** The runs of a call span's shared pairs, by the values they are made from. */
const HEAD = new RunCache();
const WHAT = new RunCache();
const STATE = new RunCache();
const METHOD_TEXT = new LastText();
const TOOL_TEXT = new LastText();
const PROMPT_TEXT = new LastText();
const VERSION_TEXT = new LastText();

function headRun(method: string, sessionId: string): AttrRun {
  return attrRun([attr('mcp.method.name', method), attr('mcp.session.id', sessionId), attr('network.transport', 'pipe')]);
}

function whatRun(tool: string | null, prompt: string | null, version: string | null, error: string | null, status: string | null): AttrRun {
  const pairs = [];
  if (tool !== null) pairs.push(attr('gen_ai.tool.name', tool), attr('gen_ai.operation.name', 'execute_tool'));
  if (prompt !== null) pairs.push(attr('gen_ai.prompt.name', prompt));
  if (version !== null) pairs.push(attr('mcp.protocol.version', version));
  if (error !== null) pairs.push(attr('error.type', error));
  if (status !== null) pairs.push(attr('rpc.response.status_code', status));
  return attrRun(pairs);
}

function stateRun(state: string, generation: number | null): AttrRun {
  const pairs = [attr('mcpguard.call.state', state)];
  if (generation !== null) pairs.push(attr('mcpguard.generation', generation));
  return attrRun(pairs);
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
/** Each step's event name. */
const EVENT_NAME = {
  schema: 'run_guardrail mcpguard.schema',
  policy: 'run_guardrail mcpguard.policy',
  pins: 'run_guardrail mcpguard.pins',
  approval: 'run_guardrail mcpguard.approval',
} as const;
/** A step event's shared pairs: what it guards, then its verdict. */
const STEP = new RunCache();
const VERDICT = new RunCache();

function stepRun(component: keyof typeof COMPONENT, subtype: 'tool_call' | 'tool_definition'): AttrRun {
  return attrRun([
    attr('gen_ai.operation.name', 'run_guardrail'),
    attr('gen_ai.guardrail.component.name', COMPONENT[component]),
    attr('gen_ai.guardrail.target.type', 'input'),
    attr('gen_ai.guardrail.target.subtype', subtype),
  ]);
}

function verdictRun(verdict: 'allow' | 'deny' | 'escalate', reason: string | null, policy: string | null, rule: number | null): AttrRun {
  const pairs = [attr('gen_ai.guardrail.verdict.type', verdict), attr('gen_ai.guardrail.action.type', verdict === 'deny' ? 'block' : verdict)];
  if (reason !== null) pairs.push(attr('gen_ai.guardrail.verdict.reason', reason));
  if (policy !== null) {
    pairs.push(attr('gen_ai.guardrail.security.policy.id', policy));
    if (rule !== null) pairs.push(attr('gen_ai.guardrail.security.policy.rule.id', String(rule)));
  }
  return attrRun(pairs);
}

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
  out.event(EVENT_NAME[component], Number.isFinite(atMs) ? atMs : f.endedAt);
  out.attrs(STEP.find(component, subtype, null, null, null) ?? STEP.put(component, subtype, null, null, null, stepRun(component, subtype)));
  out.own(GEN_AI_GUARDRAIL_TARGET_ID, f.callId);
  out.attrs(VERDICT.find(verdict, reason, policy, rule, null) ?? VERDICT.put(verdict, reason, policy, rule, null, verdictRun(verdict, reason, policy, rule)));
  if (durationMs !== null) out.own(MCPGUARD_GUARDRAIL_DURATION_MS, Math.max(0, durationMs));
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
