/**
 * `activity` rows newest first, with flat memory on a log of any size.
 *
 * A row's place is its call's first record; its content is complete at the
 * call's final record, which comes later in the file. Read backwards, the
 * final record comes first: the row is held from there until its first
 * record, and then it is complete and every newer row is already out. So
 * memory holds the calls that were in flight at that point of the log, as
 * the forward reading (activity.ts) does. One forward pass comes first, to
 * learn the calls whose final record is their only record and the legs of
 * multi-round calls (plan).
 */
import type { LogRecord } from '../records/chain.js';
import { endCall, openRow, plan, rejectRow, type ActivityRow, type CallRow, type Plan } from './activity.js';
import { BackwardLineReader } from './backwards.js';
import { parseRecord } from '../records/read.js';
import { isCallRecord, num, str } from './views.js';

function* backwardRecords(file: string): Generator<LogRecord> {
  const reader = new BackwardLineReader(file);
  try {
    for (let line = reader.next(); line !== null; line = reader.next()) {
      const record = parseRecord(line);
      if (record !== null) yield record;
    }
  } finally {
    reader.close();
  }
}

/**
 * Stream the rows of one session log, newest first (the reverse of
 * activityRows' order). With `grouped`, a multi-round call's later legs come
 * right under its first leg, in leg order. Unreadable lines are told to
 * `unreadable` by number (from the forward pass).
 */
export function* activityRowsNewestFirst(
  file: string,
  sessionId: string,
  ended: boolean,
  grouped = false,
  unreadable: (line: number) => void = () => {},
  /** Told what the forward pass found, before the first row. */
  planned: (p: Plan) => void = () => {},
): Generator<ActivityRow> {
  const learned = plan(file, unreadable);
  planned(learned);
  const { lone, legOf, heads } = learned;
  // Calls met (at a later record) whose first record is still ahead, and whether their final record was met.
  const held = new Map<string, { row: CallRow; ended: boolean }>();
  // Later legs waiting for their chain's first leg, by the first leg's call id.
  const gathered = new Map<string, CallRow[]>();
  for (const r of backwardRecords(file)) {
    if (r.type === 'reject') {
      yield rejectRow(r, sessionId);
      continue;
    }
    if (!isCallRecord(r)) continue;
    let slot = held.get(r.call_id);
    if (slot === undefined) {
      slot = { row: openRow(r, sessionId), ended: false };
      const head = heads.get(r.call_id);
      if (head !== undefined) Object.assign(slot.row, { legs: head.legs, chain_state: head.state });
      held.set(r.call_id, slot);
    }
    if (r.type === 'call_dispatched') slot.row.generation ??= num(r.generation);
    if (r.type === 'call_end' && !slot.ended) {
      endCall(slot.row, r, legOf.get(r.call_id)?.leg ?? null);
      slot.ended = true;
    }
    if (r.type !== 'call_attempt' && !lone.has(r.call_id)) continue;
    // The call's first record: its row is complete.
    held.delete(r.call_id);
    const row = firstRecord(slot.row, r, slot.ended, ended);
    const leg = grouped ? legOf.get(r.call_id) : undefined;
    if (leg !== undefined && leg.leg > 1) {
      const legs = gathered.get(leg.chain) ?? [];
      legs.push(row);
      gathered.set(leg.chain, legs);
      continue;
    }
    yield row;
    const legs = gathered.get(r.call_id);
    if (legs !== undefined) {
      gathered.delete(r.call_id);
      yield* legs.sort((a, b) => (a.leg ?? 0) - (b.leg ?? 0));
    }
  }
  // A damaged log: calls whose first record was never found, and legs whose first leg was not.
  for (const { row, ended: hasEnd } of held.values()) yield firstRecord(row, null, hasEnd, ended);
  for (const legs of gathered.values()) yield* legs;
}

/** What the call's first record adds: the row's time, and what the later records lacked. */
function firstRecord(row: CallRow, r: LogRecord | null, hasEnd: boolean, sessionEnded: boolean): CallRow {
  if (r !== null) {
    row.time = str(r.ts);
    row.request_id ??= r.request_id ?? null;
    row.method ??= str(r.method);
    row.tool ??= str(r.tool);
  }
  if (!hasEnd) row.state = sessionEnded ? 'no_final_record' : 'open';
  return row;
}
