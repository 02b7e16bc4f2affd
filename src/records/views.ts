/**
 * What the views read: session logs loaded leniently (views describe; only
 * verify judges) and turned into rows. A line that does not parse is kept as a
 * line number so the command can say so instead of silently skipping it.
 */
import { basename } from 'node:path';
import type { LogRecord } from './chain.js';
import { describe } from './location.js';
import { listLogFiles, parseRecord, readLogFile, splitLines } from './read.js';

/** One session file as the views see it. */
export interface LoadedLog {
  file: string;
  sessionId: string;
  records: LogRecord[];
  /** 1-based numbers of lines that are not JSON objects. */
  unreadable: number[];
  /** The file ends in a line without `\n`. */
  torn: boolean;
  sealed: boolean;
  createdAt: string;
}

/** Load one session file; never throws for bad content, only for I/O (a symlink or a FIFO counts as I/O: see readLogFile). */
export function loadLog(file: string): LoadedLog {
  const { lines, tail } = splitLines(readLogFile(file));
  const records: LogRecord[] = [];
  const unreadable: number[] = [];
  lines.forEach((line, i) => {
    const record = parseRecord(line);
    if (record === null) unreadable.push(i + 1);
    else records.push(record);
  });
  const header = records[0]?.type === 'header' ? records[0] : undefined;
  return {
    file,
    sessionId: typeof header?.log_id === 'string' ? header.log_id : basename(file, '.jsonl'),
    records,
    unreadable,
    torn: tail !== null,
    sealed: records.at(-1)?.type === 'seal',
    createdAt: typeof header?.created_at === 'string' ? header.created_at : '',
  };
}

/** Every readable session log in `dir`, oldest first (by header time, then id); `skipped` hears of the others. */
export function loadLogs(dir: string, skipped: (file: string, reason: string) => void = () => {}): LoadedLog[] {
  const logs: LoadedLog[] = [];
  for (const file of listLogFiles(dir)) {
    try {
      logs.push(loadLog(file));
    } catch (error) {
      skipped(file, describe(error));
    }
  }
  return logs.sort((a, b) =>
    a.createdAt === b.createdAt ? (a.sessionId < b.sessionId ? -1 : 1) : (a.createdAt < b.createdAt ? -1 : 1));
}

/** A session as one row of `mcpguard sessions`. */
export interface SessionRow {
  session_id: string;
  started_at: string | null;
  duration_ms: number | null;
  command: string[];
  end_reason: string | null;
  /** Present (true) for a probe session: only server/discover, ended by the client, sealed before the child's exit. */
  probe?: true;
  exit_code: number | null;
  signal: string | null;
  calls: number;
  rejected: number;
  /** `legacy`, `modern` or `unknown`, and the protocol version, from the session record; null before it ends. */
  era: string | null;
  protocol_version: string | null;
  sealed: boolean;
  torn: boolean;
  records: number;
}

/** Summarise one session from its start, end and call records; a missing end leaves nulls. */
export function sessionRow(log: LoadedLog): SessionRow {
  const start = find(log, 'session_start');
  const end = find(log, 'session_end');
  const rejected = end?.rejected as { client?: unknown; child?: unknown } | undefined;
  const startedAt = timeOf(start?.started_at) ?? timeOf(log.createdAt);
  const endedAt = timeOf(end?.ended_at);
  return {
    session_id: log.sessionId,
    started_at: startedAt === null ? null : new Date(startedAt).toISOString(),
    duration_ms: startedAt !== null && endedAt !== null ? endedAt - startedAt : null,
    command: [start?.command, ...(Array.isArray(start?.args) ? start.args : [])].filter((part) => part !== undefined).map(String),
    end_reason: typeof end?.end_reason === 'string' ? end.end_reason : null,
    ...(end?.probe === true ? { probe: true as const } : {}),
    exit_code: typeof end?.exit_code === 'number' ? end.exit_code : null,
    signal: typeof end?.signal === 'string' ? end.signal : null,
    calls: new Set(log.records.filter(isCallRecord).map((r) => r.call_id)).size,
    rejected: rejected !== undefined
      ? Number(rejected.client ?? 0) + Number(rejected.child ?? 0)
      : log.records.filter((r) => r.type === 'reject').length,
    era: str(end?.era),
    protocol_version: str(end?.protocol_version),
    sealed: log.sealed,
    torn: log.torn,
    records: log.records.length,
  };
}

/** One call, or one rejected frame, as a row of `mcpguard activity`. */
export type ActivityRow =
  | { kind: 'call'; session_id: string; call_id: string; time: string | null; request_id: unknown; method: string | null; tool: string | null;
      state: string; stderr_bytes_seen: number | null; stderr_bytes_retained: number | null; stderr_truncated: boolean | null; duration_ms: number | null;
      /** A multi-round call (2026-07-28 input_required): the first leg's call id, and this row's leg number from 1; else null. */
      chain: string | null; leg: number | null;
      /** Why it ended, for calls refused before dispatch (rejected, denied) and other endings with a reason. */
      detail: string | null;
      /** On a chain's first leg: how many legs it has so far, and the state of the latest. */
      legs?: number; chain_state?: string }
  | { kind: 'reject'; session_id: string; time: string | null; direction: string | null; line: unknown; code: unknown; reason: string | null; fingerprint: unknown };

/**
 * Calls in the order they were first recorded, each folded from its
 * attempt/dispatch/end records, and rejections in between. A call without a
 * final record shows state `open` while the session runs (or after a crash), and
 * `no_final_record` once the session has ended.
 */
export function activityRows(log: LoadedLog): ActivityRow[] {
  const rows: ActivityRow[] = [];
  const calls = new Map<string, Extract<ActivityRow, { kind: 'call' }>>();
  for (const r of log.records) {
    if (r.type === 'reject') {
      rows.push({ kind: 'reject', session_id: log.sessionId, time: str(r.ts), direction: str(r.direction), line: r.line ?? null,
        code: r.code ?? null, reason: str(r.reason), fingerprint: r.fingerprint ?? null });
      continue;
    }
    if (!isCallRecord(r)) continue;
    let row = calls.get(r.call_id);
    if (row === undefined) {
      row = { kind: 'call', session_id: log.sessionId, call_id: r.call_id, time: str(r.ts), request_id: r.request_id ?? null,
        method: str(r.method), tool: str(r.tool), state: 'open', stderr_bytes_seen: null, stderr_bytes_retained: null,
        stderr_truncated: null, duration_ms: null, chain: null, leg: null, detail: null };
      calls.set(r.call_id, row);
      rows.push(row);
    }
    if (r.type === 'call_end') {
      const started = timeOf(r.started_at);
      const ended = timeOf(r.ended_at);
      Object.assign(row, {
        method: str(r.method) ?? row.method, tool: str(r.tool) ?? row.tool, state: str(r.state) ?? 'unknown',
        stderr_bytes_seen: num(r.stderr_bytes_seen), stderr_bytes_retained: num(r.stderr_bytes_retained),
        stderr_truncated: typeof r.stderr_truncated === 'boolean' ? r.stderr_truncated : null,
        duration_ms: started !== null && ended !== null ? ended - started : null,
        chain: str(r.chain),
        detail: str(r.detail),
      });
    }
  }
  foldLegs(calls);
  // Once the session has ended, a call without a final record broke the "one final record per call" promise.
  if (log.sealed || find(log, 'session_end') !== undefined) {
    for (const row of calls.values()) if (row.state === 'open') row.state = 'no_final_record';
  }
  return rows;
}

/**
 * Number the legs of each multi-round call and give its first leg the
 * chain's size and latest state. A leg whose head is not in this session
 * (it cannot be: chains are per session) is left as it is.
 */
function foldLegs(calls: Map<string, Extract<ActivityRow, { kind: 'call' }>>): void {
  for (const row of calls.values()) {
    if (row.chain === null) continue;
    const head = calls.get(row.chain);
    if (head === undefined) continue;
    head.legs = (head.legs ?? 0) + 1;
    head.chain_state = row.state;
    row.leg = head.legs;
  }
}

/** Every record that names `callId`, in file order, with the log that holds them; null if none does. */
export function callRecords(logs: LoadedLog[], callId: string): { log: LoadedLog; records: LogRecord[] } | null {
  for (const log of logs) {
    const records = log.records.filter((r) => r.call_id === callId);
    if (records.length > 0) return { log, records };
  }
  return null;
}

function isCallRecord(r: LogRecord): r is LogRecord & { call_id: string } {
  return typeof r.call_id === 'string' && typeof r.type === 'string' && r.type.startsWith('call_');
}

function find(log: LoadedLog, type: string): LogRecord | undefined {
  return log.records.find((r) => r.type === type);
}

/** Milliseconds since the epoch from an ISO string or a number; null if neither. */
export function timeOf(value: unknown): number | null {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isFinite(ms) ? ms : null;
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown): number | null {
  return typeof value === 'number' ? value : null;
}
