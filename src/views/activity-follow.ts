/**
 * `activity --follow`: after the table of what the log held when it was
 * opened, a row for each call record written since, as it is written: a
 * call's start (state `open`) and its end (its final state and duration), and
 * each rejected frame. A call that was open in the table gets its row again
 * when it ends. Ends when the session record is written, or when the
 * session's mcpguard is found gone (a crash: no session record will come).
 * The log is read from where the table stopped, with the same line reader as
 * `logs --follow` (read.ts `forEachLine`), polling every FOLLOW_POLL_MS.
 */
import { probeDeclined, rejectRow, type ActivityRow } from './activity.js';
import type { LogRecord } from '../records/chain.js';
import { liveness } from '../records/live.js';
import { FOLLOW_POLL_MS, forEachLine } from '../records/read.js';
import { isCallRecord, num, str, timeOf } from './views.js';
import { approvalOf, type ApprovalFacts } from './approval-facts.js';

/** Checks of the writer's liveness while nothing new comes: every this many polls. */
const LIVENESS_EVERY = 5;

/** How a follow ended: the session record came, the writer is gone, or the reader stopped it. */
export type FollowEnd = 'ended' | 'crashed' | 'stopped';

/**
 * Follow `file` from byte `from`; `emit` gets each new row and resolves to
 * false once output should stop (the reader went away).
 */
export async function followActivity(
  file: string,
  sessionId: string,
  from: number,
  start: LogRecord | undefined,
  emit: (row: ActivityRow) => Promise<boolean>,
): Promise<FollowEnd> {
  let offset = from;
  let idle = 0;
  for (;;) {
    const rows: ActivityRow[] = [];
    let ended = false;
    const read = forEachLine(file, offset, null, (r) => {
      const row = rowOf(r, sessionId);
      if (row !== null) rows.push(row);
      if (r.type === 'session_end' || r.type === 'seal') ended = true;
    });
    offset = read.offset;
    for (const row of rows) if (!(await emit(row))) return 'stopped';
    if (ended) return 'ended';
    if (!read.eof) continue;
    if (rows.length === 0 && ++idle % LIVENESS_EVERY === 0 && liveness(start) !== 'running') {
      // One more read: the session record may have come just before mcpguard exited.
      const last = forEachLine(file, offset, null, (r) => {
        if (r.type === 'session_end') ended = true;
      });
      offset = last.offset;
      if (!ended) return 'crashed';
      continue;
    }
    if (rows.length > 0) idle = 0;
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
  }
}

/** A record's row: a call's start or end, or a rejection; null for anything else (dispatch, session records). */
function rowOf(r: LogRecord, sessionId: string): ActivityRow | null {
  if (r.type === 'reject') {
    return rejectRow(r, sessionId);
  }
  if (!isCallRecord(r) || (r.type !== 'call_attempt' && r.type !== 'call_end')) return null;
  const end = r.type === 'call_end';
  const started = timeOf(r.started_at);
  const ended = timeOf(r.ended_at);
  return {
    kind: 'call',
    session_id: sessionId,
    call_id: r.call_id,
    time: str(end ? r.ended_at : r.ts),
    request_id: r.request_id ?? null,
    method: str(r.method),
    tool: str(r.tool),
    state: end ? (str(r.state) ?? 'unknown') : 'open',
    stderr_bytes_seen: end ? num(r.stderr_bytes_seen) : null,
    stderr_bytes_retained: end ? num(r.stderr_bytes_retained) : null,
    stderr_truncated: end && typeof r.stderr_truncated === 'boolean' ? r.stderr_truncated : null,
    duration_ms: end && started !== null && ended !== null ? ended - started : null,
    chain: str(r.chain),
    leg: null,
    detail: end ? str(r.detail) : null,
    generation: end ? num(r.generation) : null,
    ...withApproval(end ? r.decision : null),
    ...(end && probeDeclined(r.flags) ? { probe_declined: true as const } : {}),
  };
}

function withApproval(decision: unknown): { approval?: ApprovalFacts } {
  const approval = approvalOf(decision);
  return approval === null ? {} : { approval };
}
