/**
 * The backfill: a session's records turned back into the spans and logs its
 * live export sends (call-span.ts builds both), for `mcpguard export otlp`.
 * The ids derive from the session and call ids (ids.ts), so a call exported
 * live and again from its records, or twice from its records, is one span in
 * the backend. What the records do not keep is not sent: the server's
 * JSON-RPC error code (error.type is `_OTHER` for a call that ended `error`),
 * the target of a prompts/get, the client's tracestate, and mcpguard's own
 * diagnostic lines.
 */
import { basename } from 'node:path';
import type { Decision } from '../mcp/call.js';
import type { Masker } from '../mask/mask.js';
import { forEachLine } from '../records/read.js';
import type { Exporter, OtlpConfig } from './api.js';
import { callLogs, callSpan, parentOf, tailLogs, type CallFacts, type SessionFacts } from './call-span.js';
import { sessionTraceId } from './ids.js';
import { sample, sessionSpan } from './spans.js';

/** Items handed to one exporter before it is drained (its queue is bounded and drops the oldest: a backfill must not). */
export const BATCH_ITEMS = 1000;

export interface BackfillResult {
  calls: number;
  spans: number;
  logs: number;
  /** The session has no session record yet (running, or crashed): no root span was sent. */
  open: boolean;
}

/**
 * Read one session log and hand its spans and logs to `next()`'s exporter,
 * a new one every BATCH_ITEMS items (the caller drains the one before).
 * Calls that ended before `since` (ms) are skipped.
 */
export async function backfillLog(
  file: string,
  o: { sampler: OtlpConfig['sampler']; masker: Masker; since: number | null; next: () => Promise<Exporter> },
): Promise<BackfillResult> {
  const result: BackfillResult = { calls: 0, spans: 0, logs: 0, open: true };
  let exporter = await o.next();
  let handed = 0;
  const give = async (what: 'span' | 'log', item: unknown): Promise<void> => {
    if (handed >= BATCH_ITEMS) {
      exporter = await o.next();
      handed = 0;
    }
    handed++;
    if (what === 'span') {
      exporter.span(item as never);
      result.spans++;
    } else {
      exporter.log(item as never);
      result.logs++;
    }
  };
  let session: SessionFacts = { sessionId: basename(file, '.jsonl'), schema: true, policy: null };
  let startedAt: number | null = null;
  const pending: Record<string, unknown>[] = [];
  for (let offset = 0, eof = false; !eof; ) {
    ({ offset, eof } = forEachLine(file, offset, null, (r) => {
      if (r.type === 'header' && typeof r.log_id === 'string') session = { ...session, sessionId: r.log_id };
      else if (r.type === 'session_start') {
        const options = (r.options ?? {}) as Record<string, unknown>;
        const policy = options.policy;
        session = {
          ...session,
          schema: options['validate-args'] !== 'off',
          policy: policy === null || policy === undefined ? null : typeof policy === 'string' ? basename(policy) : 'inline',
        };
        startedAt = time(r.started_at);
      } else if (r.type === 'call_end' || r.type === 'session_end') pending.push(r);
    }));
    // Whole batches of lines at a time: what they hold goes out before the next is read.
    for (const r of pending.splice(0)) {
      if (r.type === 'session_end') {
        result.open = false;
        const end = sessionEndOf(r);
        // A session exported live kept its root span's times: the same span again; else the records' own start and end.
        const kept = ((r.otlp ?? {}) as { session_span?: { started_at?: unknown; ended_at?: unknown } }).session_span;
        const start = time(kept?.started_at) ?? startedAt;
        end.endedAt = time(kept?.ended_at) ?? end.endedAt;
        if (start === null) continue;
        if (o.since !== null && end.endedAt < o.since) continue;
        for (const log of tailLogs(session.sessionId, end.endedAt, end.stderrTail)) await give('log', log);
        if (sample(o.sampler, sessionTraceId(session.sessionId), null)) await give('span', sessionSpan(session.sessionId, start, end));
        continue;
      }
      const f = factsOfRecord(r);
      if (f === null || (o.since !== null && f.endedAt < o.since)) continue;
      result.calls++;
      const span = callSpan(f, session, o.masker);
      const parent = parentOf(session.sessionId, f.traceparent);
      const sampled = parent.sampled === null ? sample(o.sampler, parent.traceId, null) : sample(o.sampler, parent.traceId, parent.sampled);
      if (span !== null && sampled) await give('span', span);
      for (const log of callLogs(f, span, session.sessionId)) await give('log', log);
    }
  }
  return result;
}

function time(value: unknown): number | null {
  if (typeof value !== 'string') return null;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : t;
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** A call_end record's facts; null when it lacks what a span needs (an id, a state, its times). */
export function factsOfRecord(r: Record<string, unknown>): CallFacts | null {
  const startedAt = time(r.started_at);
  const endedAt = time(r.ended_at);
  if (typeof r.call_id !== 'string' || typeof r.state !== 'string' || startedAt === null || endedAt === null) return null;
  const seen = num(r.stderr_bytes_seen) ?? 0;
  return {
    callId: r.call_id,
    requestId: typeof r.request_id === 'string' || typeof r.request_id === 'number' ? r.request_id : null,
    method: str(r.method),
    tool: str(r.tool),
    target: null,
    state: r.state,
    startedAt,
    dispatchedAt: time(r.dispatched_at),
    endedAt,
    protocolVersion: str(r.protocol_version),
    traceparent: str(r.traceparent),
    decision: (r.decision ?? null) as Decision | null,
    generation: num(r.generation),
    cancelRequested: r.cancel_requested === true,
    errorCode: null,
    stderr:
      seen === 0
        ? null
        : {
            seen,
            retained: num(r.stderr_bytes_retained) ?? 0,
            truncated: r.stderr_truncated === true,
            shared: r.stderr_shared_window === true,
            text: str(r.stderr),
          },
  };
}

function sessionEndOf(r: Record<string, unknown>): Parameters<typeof sessionSpan>[2] {
  const stderr = (r.stderr ?? {}) as Record<string, unknown>;
  return {
    endedAt: time(r.ended_at) ?? Date.now(),
    endReason: str(r.end_reason) ?? 'unknown',
    protocolVersion: str(r.protocol_version),
    status: num(r.status),
    stderrTail: str(stderr.tail) ?? '',
    stderrSeen: num(stderr.bytes_seen) ?? num(r.stderr_bytes_seen) ?? 0,
    stderrRetained: num(stderr.bytes_retained) ?? 0,
    restarts: num(r.restarts),
  };
}
