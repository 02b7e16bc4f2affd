/**
 * Protocol eras. MCP up to 2025-11-25 ("legacy") opens every session with an
 * `initialize` handshake; 2026-07-28 ("modern") has none: every request
 * carries its protocol version and client capabilities in `_meta`, the
 * server may write only responses and notifications, and results say
 * whether they are final (`resultType`). One server process speaks one era.
 *
 * This module learns a session's era from what passes (never by waiting for
 * a `server/discover` that may not come) and says which lines break that
 * era's rules. It keeps state only about the era; the relay decides what to
 * do with a broken rule (refuse it, or forward it and report it).
 */
import { stringValue, type JsonNode } from '../wire/json-scan.js';
import { membersOf } from '../wire/jsonrpc.js';

export const LEGACY_VERSIONS: readonly string[] = ['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25'];
export const MODERN_VERSION = '2026-07-28';

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

export type Era = 'unknown' | 'legacy' | 'modern';
export type EraRules = 'enforce' | 'warn';

/** The kinds of broken rule mcpguard names in diagnostics, records and the session summary. */
export type RuleKind =
  | 'era_switch' // a legacy method in a modern session, or the other way round
  | 'missing_meta' // a modern request without the required _meta fields
  | 'client_response' // a client wrote a JSON-RPC response in a modern session
  | 'server_request' // a server wrote a JSON-RPC request in a modern session
  | 'stray_server_cancel' // a server notifications/cancelled that ends no open subscriptions/listen
  | 'bad_result_type' // resultType that is not a string, or input_required where it may not be
  | 'missing_result_type'; // a modern result without resultType (clients read it as complete)

export interface Violation {
  rule: RuleKind;
  reason: string;
  /** Refused in enforce mode; `flag` rules are always forwarded and only reported. */
  severity: 'refuse' | 'flag';
}

/** Methods (requests and notifications) that exist only up to 2025-11-25. */
const LEGACY_ONLY = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
  'tasks/get',
  'tasks/list',
  'tasks/result',
  'tasks/cancel',
  'notifications/initialized',
  'notifications/roots/list_changed',
  'notifications/elicitation/complete',
  'notifications/tasks/status',
]);
/** Methods that exist only from 2026-07-28. */
const MODERN_ONLY = new Set(['server/discover', 'subscriptions/listen']);
/** The only requests whose answer may be `input_required`. */
export const MULTI_ROUND_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read']);
/** Requests that open a stream rather than ask for one answer. */
export const STREAM_METHODS = new Set(['subscriptions/listen']);

/** What a request's `_meta` says about the era; read once per request. */
export interface RequestMeta {
  /** The protocol version claimed in `_meta` (a string), else null. */
  version: string | null;
  /** `_meta` names a protocol version at all (even a malformed one): only modern clients do. */
  claimsModern: boolean;
  /** `_meta` carries client capabilities as an object. */
  capabilities: boolean;
  /** That object's node (in the request's frame), for the few who need its text. */
  capabilitiesNode: JsonNode | null;
  /** W3C trace context, when the request carries it (for the records). */
  traceparent: string | null;
  /** Its W3C tracestate, when it carries one too (for the OpenTelemetry export, passed on unchanged). */
  tracestate?: string | null;
}

const NO_META: RequestMeta = { version: null, claimsModern: false, capabilities: false, capabilitiesNode: null, traceparent: null };
/** Longest traceparent kept: the W3C format is 55 characters; anything far longer is not one. */
const MAX_TRACEPARENT = 128;
/** Longest tracestate kept (parseTraceparent in otel/model.ts keeps at most 512 characters). */
const MAX_TRACESTATE = 512;

/** Read a request's or notification's `params._meta` (rescanning only that object). */
export function readMeta(frame: Buffer, params: JsonNode | undefined): RequestMeta {
  const meta = membersOf(frame, params?.members?.get('_meta'));
  if (meta === undefined || meta === null) return NO_META;
  const m = meta.members!;
  const version = m.get(META_PROTOCOL_VERSION);
  const trace = m.get('traceparent');
  const state = m.get('tracestate');
  const caps = m.get(META_CLIENT_CAPABILITIES);
  return {
    version: version?.type === 'string' ? stringValue(frame, version) : null,
    claimsModern: version !== undefined,
    capabilities: caps?.type === 'object',
    capabilitiesNode: caps?.type === 'object' ? caps : null,
    traceparent: trace?.type === 'string' && trace.end - trace.start <= MAX_TRACEPARENT + 2 ? stringValue(frame, trace) : null,
    // W3C allows 32 list members of up to 256 characters; 512 is what OpenTelemetry keeps.
    tracestate: state?.type === 'string' && state.end - state.start <= MAX_TRACESTATE + 2 ? stringValue(frame, state) : null,
  };
}

/** The era of one session, learned from the requests that pass and the answers to two of them. */
export class EraTracker {
  era: Era = 'unknown';
  /** The protocol version: negotiated by initialize, or claimed in `_meta`. */
  version: string | null = null;
  /** How the era was learned, in words, for the records. */
  decidedBy: string | null = null;
  /** The id key of a `server/discover` or `initialize` whose answer settles the era. */
  private pending: { idKey: string; method: string; version: string | null } | null = null;

  /** Whether a client request or notification fits the session's era; does not change it. */
  checkClient(method: string, meta: RequestMeta, isRequest: boolean): Violation | null {
    if (this.era === 'modern') {
      if (LEGACY_ONLY.has(method)) {
        return refuse('era_switch', `${method} belongs to MCP ${LEGACY_VERSIONS.at(-1)} and earlier; this session speaks ${this.version ?? MODERN_VERSION}`);
      }
      if (isRequest && (meta.version === null || !meta.capabilities)) {
        const missing = [meta.version === null ? META_PROTOCOL_VERSION : null, meta.capabilities ? null : META_CLIENT_CAPABILITIES].filter((k) => k !== null);
        return refuse('missing_meta', `a ${MODERN_VERSION} request must carry params._meta[${missing.map((k) => JSON.stringify(k)).join('] and [')}]`);
      }
      return null;
    }
    if (this.era === 'legacy' && (MODERN_ONLY.has(method) || meta.claimsModern)) {
      const what = MODERN_ONLY.has(method) ? method : `a request with _meta[${JSON.stringify(META_PROTOCOL_VERSION)}]`;
      return refuse('era_switch', `${what} belongs to MCP ${MODERN_VERSION}; this session negotiated ${this.version ?? 'a legacy version'} with initialize`);
    }
    return null;
  }

  /** A client request is being forwarded: it may decide the era, or open the question. */
  clientRequest(method: string, idKey: string, meta: RequestMeta, params: JsonNode | undefined, frame: Buffer): void {
    if (this.era !== 'unknown') return;
    if (method === 'initialize') {
      // Legacy from here; the version is the server's answer (the request only proposes one).
      const proposed = params?.members?.get('protocolVersion');
      this.settle('legacy', proposed?.type === 'string' ? stringValue(frame, proposed) : null, 'initialize');
      this.pending = { idKey, method, version: this.version };
    } else if (method === 'server/discover') {
      // A dual-era client probes first; a legacy server's error sends it on to initialize.
      this.pending = { idKey, method, version: meta.version };
    } else if (meta.claimsModern) {
      this.settle('modern', meta.version, `_meta on ${method}`);
    }
  }

  /** The answer to a client request: settles the era after initialize or server/discover. */
  answered(idKey: string | null, ok: boolean, result: JsonNode | undefined, frame: Buffer): void {
    const pending = this.pending;
    if (pending === null || pending.idKey !== idKey) return;
    this.pending = null;
    if (pending.method === 'initialize') {
      if (!ok) return this.settle('unknown', null, null);
      const agreed = result?.members?.get('protocolVersion');
      if (agreed?.type === 'string') this.version = stringValue(frame, agreed);
      this.decidedBy = 'initialize';
    } else if (this.era === 'unknown') {
      if (ok) this.settle('modern', pending.version ?? MODERN_VERSION, 'server/discover');
    }
  }

  /** Batches exist only in 2025-03-26; with the version unknown, --allow-batch decides. */
  batchesAllowed(allowBatch: boolean): boolean {
    if (this.era === 'modern') return false;
    return allowBatch || this.version === '2025-03-26';
  }

  private settle(era: Era, version: string | null, decidedBy: string | null): void {
    this.era = era;
    this.version = version;
    this.decidedBy = decidedBy;
  }
}

/** The rules a server's line must keep in a modern session; null when it keeps them. */
export function checkServerResult(method: string | null, result: JsonNode, frame: Buffer): Violation | null {
  const m = result.members!;
  const type = m.get('resultType');
  if (type === undefined)
    return { rule: 'missing_result_type', reason: `a ${MODERN_VERSION} result must carry "resultType" (read as "complete")`, severity: 'flag' };
  if (type.type !== 'string') return refuse('bad_result_type', `"resultType" must be a string, got ${type.type}`);
  const value = stringValue(frame, type);
  if (value === 'complete') return null;
  if (value !== 'input_required')
    return {
      rule: 'bad_result_type',
      reason: `"resultType" ${JSON.stringify(value)} is not defined by ${MODERN_VERSION} (an extension may define it)`,
      severity: 'flag',
    };
  if (method === null || !MULTI_ROUND_METHODS.has(method))
    return refuse('bad_result_type', `"input_required" answers only tools/call, prompts/get and resources/read, not ${method ?? 'this request'}`);
  if (!m.has('inputRequests') && !m.has('requestState')) return refuse('bad_result_type', '"input_required" without "inputRequests" or "requestState"');
  return null;
}

/** The `resultType` of a result, when it is a string. */
export function resultType(result: JsonNode, frame: Buffer): string | null {
  const type = result.members?.get('resultType');
  return type?.type === 'string' ? stringValue(frame, type) : null;
}

function refuse(rule: RuleKind, reason: string): Violation {
  return { rule, reason, severity: 'refuse' };
}
