/**
 * `activity` rows, streamed: one session's calls in the order they were first
 * recorded, each folded from its attempt/dispatch/end records, and rejections
 * in between, without holding the log or its rows in memory.
 *
 * A call's row is complete only at its final record, which comes after the
 * records of calls that started later. Two passes keep memory to what is in
 * flight: the first notes the calls that never get a final record (their rows
 * are complete at once) and the legs of multi-round calls; the second holds a
 * row back only until the rows before it are complete. A call that hangs
 * while thousands run past it holds back those rows, and only those.
 */
import type { LogRecord } from '../records/chain.js';
import { LineReader, parseRecord } from '../records/read.js';
import { isCallRecord, num, str, timeOf } from './views.js';
import { approvalOf, type ApprovalFacts } from './approval-facts.js';
import { ERA_PROBE_DECLINED } from '../mcp/call.js';

/** One call, or one rejected frame, as a row of `mcpguard activity`. */
export type ActivityRow =
  | {
      kind: 'call';
      session_id: string;
      call_id: string;
      time: string | null;
      request_id: unknown;
      method: string | null;
      tool: string | null;
      state: string;
      stderr_bytes_seen: number | null;
      stderr_bytes_retained: number | null;
      stderr_truncated: boolean | null;
      duration_ms: number | null;
      /** A multi-round call (2026-07-28 input_required): the first leg's call id, and this row's leg number from 1; else null. */
      chain: string | null;
      leg: number | null;
      /** Why it ended, for calls refused before dispatch (rejected, denied) and other endings with a reason. */
      detail: string | null;
      /** The server generation it was dispatched to (1 unless the session ran with --restart and restarted); null: it never reached a server. */
      generation: number | null;
      /** On a chain's first leg: how many legs it has so far, and the state of the latest. */
      legs?: number;
      chain_state?: string;
      /** A card answered, or a session grant that allowed the call without one (approval-facts.ts). */
      approval?: ApprovalFacts;
      /** A `server/discover` a legacy server answered "method not found" (ERA_PROBE_DECLINED): state error, not a failure. */
      probe_declined?: true;
    }
  | {
      kind: 'reject';
      session_id: string;
      time: string | null;
      direction: string | null;
      line: unknown;
      code: unknown;
      reason: string | null;
      fingerprint: unknown;
    };

export type CallRow = Extract<ActivityRow, { kind: 'call' }>;

/** What the first pass learns. */
export interface Plan {
  /** Calls with no final record in the file. */
  unfinished: Set<string>;
  /** Calls whose final record is their only record (refused before dispatch: rejected, denied, an approval card). */
  lone: Set<string>;
  /** A chained call's first leg and leg number (from 1, in the order the legs were first recorded). */
  legOf: Map<string, { chain: string; leg: number }>;
  /** A chain's first leg: how many legs, and the state of the latest. */
  heads: Map<string, { legs: number; state: string }>;
  /** The highest server generation the log names (1: the server was never restarted). */
  generations: number;
}

export function* records(file: string, unreadable: (line: number) => void = () => {}, limit = Infinity): Generator<LogRecord> {
  const reader = new LineReader(file, limit);
  try {
    for (let line = reader.next(); line !== null; line = reader.next()) {
      const record = parseRecord(line);
      if (record !== null) yield record;
      else unreadable(reader.lineNumber);
    }
  } finally {
    reader.close();
  }
}

export function plan(file: string, unreadable: (line: number) => void, limit = Infinity): Plan {
  // Calls seen and not yet ended, with the order they were first recorded in: as many as run at once.
  const open = new Map<string, number>();
  const legs: Array<{ id: string; chain: string; first: number; state: string }> = [];
  const lone = new Set<string>();
  let order = 0;
  let generations = 1;
  for (const r of records(file, unreadable, limit)) {
    if (typeof r.generation === 'number' && r.generation > generations) generations = r.generation;
    if (!isCallRecord(r)) continue;
    if (r.type !== 'call_end') {
      if (!open.has(r.call_id)) open.set(r.call_id, order++);
      continue;
    }
    let first = open.get(r.call_id);
    if (first === undefined) {
      first = order++;
      lone.add(r.call_id);
    }
    open.delete(r.call_id);
    const chain = str(r.chain);
    if (chain !== null) legs.push({ id: r.call_id, chain, first, state: str(r.state) ?? 'unknown' });
  }
  const unfinished = new Set(open.keys());
  const ended = new Set(legs.map((l) => l.id));
  const legOf = new Map<string, { chain: string; leg: number }>();
  const heads = new Map<string, { legs: number; state: string }>();
  legs.sort((a, b) => a.first - b.first);
  for (const leg of legs) {
    // A leg whose first leg is not in this session (chains are per session: it cannot be) is left unnumbered.
    if (!ended.has(leg.chain) && !unfinished.has(leg.chain)) continue;
    const head = heads.get(leg.chain) ?? { legs: 0, state: leg.state };
    head.legs += 1;
    head.state = leg.state;
    heads.set(leg.chain, head);
    legOf.set(leg.id, { chain: leg.chain, leg: head.legs });
  }
  return { unfinished, lone, legOf, heads, generations };
}

/** A row waiting for its final record (and, when legs are grouped, for its later legs). */
interface Slot {
  row: ActivityRow;
  done: boolean;
  /** Later legs of this chain, when grouped under their first leg, and how many there will be. */
  legs?: Slot[];
  legsExpected?: number;
}

function complete(slot: Slot): boolean {
  return slot.done && (slot.legs === undefined || (slot.legs.length >= slot.legsExpected! && slot.legs.every((l) => l.done)));
}

function* rowsOf(slot: Slot): Generator<ActivityRow> {
  yield slot.row;
  for (const leg of slot.legs ?? []) yield leg.row;
}

/** A `reject` record's row (every activity view reads rejections the same way). */
export function rejectRow(r: LogRecord, sessionId: string): Extract<ActivityRow, { kind: 'reject' }> {
  return {
    kind: 'reject',
    session_id: sessionId,
    time: str(r.ts),
    direction: str(r.direction),
    line: r.line ?? null,
    code: r.code ?? null,
    reason: str(r.reason),
    fingerprint: r.fingerprint ?? null,
  };
}

/**
 * Stream the rows of one session log. A call without a final record shows
 * state `open` while the session runs (or after a crash), and
 * `no_final_record` once the session has `ended`. With `grouped`, a
 * multi-round call's later legs come right under its first leg. Lines that
 * are not records are skipped and told to `unreadable` by number.
 */
export function* activityRows(
  file: string,
  sessionId: string,
  ended: boolean,
  grouped = false,
  unreadable: (line: number) => void = () => {},
  /** Read only this many bytes of the log (`activity --follow` goes on from there). */
  limit = Infinity,
  /** Told what the first pass found, before the first row. */
  planned: (p: Plan) => void = () => {},
): Generator<ActivityRow> {
  const learned = plan(file, unreadable, limit);
  planned(learned);
  const { unfinished, legOf, heads } = learned;
  const waiting: Slot[] = [];
  let first = 0; // waiting[first] is the oldest row not yet given out
  const byCall = new Map<string, Slot>();
  // First legs that gather their later legs, until they are given out.
  const gathering = new Map<string, Slot>();
  for (const r of records(file, undefined, limit)) {
    if (r.type === 'reject') {
      waiting.push({
        row: rejectRow(r, sessionId),
        done: true,
      });
    } else if (isCallRecord(r)) {
      let slot = byCall.get(r.call_id);
      if (slot === undefined) {
        const never = unfinished.has(r.call_id);
        const row: CallRow = { ...openRow(r, sessionId), state: never && ended ? 'no_final_record' : 'open' };
        const head = heads.get(r.call_id);
        if (head !== undefined) Object.assign(row, { legs: head.legs, chain_state: head.state });
        slot = { row, done: never };
        byCall.set(r.call_id, slot);
        if (grouped && head !== undefined && head.legs > 1) {
          Object.assign(slot, { legs: [], legsExpected: head.legs - 1 });
          gathering.set(r.call_id, slot);
        }
        const leg = legOf.get(r.call_id);
        const under = grouped && leg !== undefined && leg.leg > 1 ? gathering.get(leg.chain) : undefined;
        if (under !== undefined) under.legs!.push(slot);
        else waiting.push(slot);
      }
      if (r.type === 'call_dispatched') (slot.row as CallRow).generation ??= num(r.generation);
      if (r.type === 'call_end') {
        endCall(slot.row as CallRow, r, legOf.get(r.call_id)?.leg ?? null);
        slot.done = true;
        byCall.delete(r.call_id);
      }
    }
    while (first < waiting.length && complete(waiting[first]!)) {
      const slot = waiting[first++]!;
      if (slot.legs !== undefined) gathering.delete((slot.row as CallRow).call_id);
      yield* rowsOf(slot);
    }
    if (first > 1024 && first * 2 > waiting.length) {
      waiting.splice(0, first);
      first = 0;
    }
  }
  for (let i = first; i < waiting.length; i++) yield* rowsOf(waiting[i]!);
}

export function endCall(row: CallRow, r: LogRecord, leg: number | null): void {
  const started = timeOf(r.started_at);
  const ended = timeOf(r.ended_at);
  Object.assign(row, {
    method: str(r.method) ?? row.method,
    tool: str(r.tool) ?? row.tool,
    state: str(r.state) ?? 'unknown',
    stderr_bytes_seen: num(r.stderr_bytes_seen),
    stderr_bytes_retained: num(r.stderr_bytes_retained),
    stderr_truncated: typeof r.stderr_truncated === 'boolean' ? r.stderr_truncated : null,
    duration_ms: started !== null && ended !== null ? ended - started : null,
    chain: str(r.chain),
    leg,
    detail: str(r.detail),
    generation: num(r.generation) ?? row.generation,
  });
  const approval = approvalOf(r.decision);
  if (approval !== null) row.approval = approval;
  if (probeDeclined(r.flags)) row.probe_declined = true;
}

/** A final record's `flags` hold ERA_PROBE_DECLINED. */
export function probeDeclined(flags: unknown): boolean {
  return Array.isArray(flags) && flags.includes(ERA_PROBE_DECLINED);
}

/** A call's row from its first record, before anything says how it ended. */
export function openRow(r: LogRecord & { call_id: string }, sessionId: string): CallRow {
  return {
    kind: 'call',
    session_id: sessionId,
    call_id: r.call_id,
    time: str(r.ts),
    request_id: r.request_id ?? null,
    method: str(r.method),
    tool: str(r.tool),
    state: 'open',
    stderr_bytes_seen: null,
    stderr_bytes_retained: null,
    stderr_truncated: null,
    duration_ms: null,
    chain: null,
    leg: null,
    detail: null,
    generation: null,
  };
}
