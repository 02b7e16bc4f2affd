/**
 * What the views read: session logs summarised from their first and last
 * records (views describe; only verify judges), and the records of one call
 * found by streaming. No view holds a whole log in memory: a sealed log's
 * session record and seal say what `sessions` needs, and only a log without
 * them (a running or crashed session) is read through, line by line.
 */
import { basename } from 'node:path';
import type { LogRecord } from '../records/chain.js';
import { FAILED_STATES } from './filters.js';
import type { Liveness } from '../records/live.js';
import { describe } from '../records/location.js';
import { LineReader, listLogFiles, parseRecord, readLogEdges } from '../records/read.js';

/** A session log known by its header: enough to list, sort and pick sessions. */
export interface LogRef {
  file: string;
  sessionId: string;
  createdAt: string;
}

/** One session file as `sessions` and `show SESSION` see it. */
export interface LogSummary extends LogEnds {
  /** 1-based numbers of the lines read that are not JSON objects (a sealed log's middle is not read). */
  unreadable: number[];
  sealed: boolean;
  records: number;
  calls: number;
  rejected: number;
  /** `restart` records counted, when the log was read through (an unsealed log always is). */
  restartsSeen?: number;
  /** The protocol version of the first call that ended with one (initialize's, when it has one), when the log was read through. */
  protocolSeen?: string | null;
}

// A header, session_start and child_started come first; the session record and the seal last.
// A server_info record (the server's name) comes after the first answer: a few lines later.
const HEAD_LINES = 12;
const TAIL_LINES = 3;

/** A log's header; never throws for bad content, only for I/O (a symlink or a FIFO counts as I/O: see readLogFile). */
export function logRef(file: string): LogRef {
  const header = parseRecord(readLogEdges(file, 1, 0).head[0] ?? Buffer.alloc(0));
  return refOf(file, header?.type === 'header' ? header : undefined);
}

function refOf(file: string, header: LogRecord | undefined): LogRef {
  return {
    file,
    sessionId: typeof header?.log_id === 'string' ? header.log_id : basename(file, '.jsonl'),
    createdAt: typeof header?.created_at === 'string' ? header.created_at : '',
  };
}

/** Every readable session log in `dir`, oldest first (by header time, then id); `skipped` hears of the others. */
export function listLogs(dir: string, skipped: (file: string, reason: string) => void = () => {}): LogRef[] {
  const logs: LogRef[] = [];
  for (const file of listLogFiles(dir)) {
    try {
      logs.push(logRef(file));
    } catch (error) {
      skipped(file, describe(error));
    }
  }
  return logs.sort((a, b) => (a.createdAt === b.createdAt ? (a.sessionId < b.sessionId ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1));
}

/** A log's first and last records: its header and session_start, its session_end and seal (those it has). */
export interface LogEnds extends LogRef {
  start: LogRecord | undefined;
  /** The server_info record, when it is among the first lines (it is, unless the client sent much before initialize). */
  serverInfo?: LogRecord | undefined;
  end: LogRecord | undefined;
  seal: LogRecord | undefined;
  torn: boolean;
}

/** Read a log's two ends only (a small log whole); `all` holds every line when it was read whole. */
function readEnds(file: string): LogEnds & { all: Buffer[] | null } {
  const edges = readLogEdges(file, HEAD_LINES, TAIL_LINES);
  const head = edges.head.map(parseRecord);
  const tail = edges.tail.map(parseRecord);
  const last = tail.at(-1);
  const seal = last?.type === 'seal' ? last : undefined;
  // The session record is the last record, or the one before the seal.
  const end = [tail.at(-2), last].find((r) => r?.type === 'session_end') ?? undefined;
  return {
    ...refOf(file, head[0]?.type === 'header' ? head[0] : undefined),
    start: head.find((r) => r?.type === 'session_start') ?? undefined,
    end,
    seal,
    torn: edges.torn,
    all: edges.all,
    serverInfo: head.find((r) => r?.type === 'server_info') ?? undefined,
  };
}

/** A log's first and last records, without reading what lies between. */
export function logEnds(file: string): LogEnds {
  const { all: _all, ...ends } = readEnds(file);
  return ends;
}

/**
 * Summarise one log. A sealed log whose session record counts its calls and
 * rejections is read at its two ends only; any other log is read through.
 */
export function summarizeLog(file: string): LogSummary {
  const ends = readEnds(file);
  if (ends.all !== null) return scan(file, ends.all, ends.torn);
  const counts = ends.end === undefined ? null : countsOf(ends.end);
  const seal = ends.seal;
  if (seal === undefined || typeof seal.records !== 'number' || counts === null || counts.rejected === null) {
    const reader = new LineReader(file);
    const lines = (function* () {
      for (let line = reader.next(); line !== null; line = reader.next()) yield line;
    })();
    try {
      return scan(file, lines, () => reader.torn);
    } finally {
      reader.close();
    }
  }
  const { all: _all, ...rest } = ends;
  return { ...rest, unreadable: [], sealed: true, records: seal.records, calls: counts.calls, rejected: counts.rejected };
}

/** What a session record says about its calls (the sum of its per-state counts) and rejections; null where it says nothing. */
function countsOf(end: LogRecord): { calls: number; rejected: number | null } | null {
  const calls = end.calls;
  if (typeof calls !== 'object' || calls === null || Array.isArray(calls)) return null;
  let sum = 0;
  for (const n of Object.values(calls)) sum += typeof n === 'number' ? n : 0;
  const rejected = end.rejected as { client?: unknown; child?: unknown } | undefined;
  return { calls: sum, rejected: rejected === undefined ? null : Number(rejected.client ?? 0) + Number(rejected.child ?? 0) };
}

/** Read every line: counts, the first session_start and session_end, and whether the last record is the seal. */
function scan(file: string, lines: Iterable<Buffer>, torn: boolean | (() => boolean)): LogSummary {
  let header: LogRecord | undefined;
  let start: LogRecord | undefined;
  let end: LogRecord | undefined;
  let last: LogRecord | undefined;
  let serverInfo: LogRecord | undefined;
  const unreadable: number[] = [];
  // Calls are counted as they are first seen; only those in flight are remembered (a set of every id of a
  // 200,000-call crashed log was most of `sessions`' memory). A call has one final record, and none after it.
  const inFlight = new Set<string>();
  let callCount = 0;
  let records = 0;
  let rejects = 0;
  let restarts = 0;
  let protocol: string | null = null;
  let negotiated = false;
  let number = 0;
  for (const line of lines) {
    number++;
    const r = parseRecord(line);
    if (r === null) {
      unreadable.push(number);
      continue;
    }
    if (records === 0 && r.type === 'header') header = r;
    records++;
    last = r;
    if (isCallRecord(r)) {
      if (!inFlight.has(r.call_id)) callCount++;
      if (r.type === 'call_end') inFlight.delete(r.call_id);
      else inFlight.add(r.call_id);
      // A running session has no session record yet: the protocol it negotiated is on its calls' final records.
      if (r.type === 'call_end' && typeof r.protocol_version === 'string' && !negotiated) {
        protocol = r.protocol_version;
        negotiated = r.method === 'initialize'; // initialize's answer settles it; any other call's only stands in until then
      }
    } else if (r.type === 'reject') rejects++;
    else if (r.type === 'restart') restarts++;
    else if (r.type === 'session_start') start ??= r;
    else if (r.type === 'session_end') end ??= r;
    else if (r.type === 'server_info') serverInfo ??= r;
  }
  const counts = end === undefined ? null : countsOf(end);
  return {
    ...refOf(file, header),
    start,
    end,
    serverInfo,
    seal: last?.type === 'seal' ? last : undefined,
    unreadable,
    torn: typeof torn === 'function' ? torn() : torn,
    sealed: last?.type === 'seal',
    records,
    calls: counts?.calls ?? callCount,
    rejected: counts?.rejected ?? rejects,
    restartsSeen: restarts,
    protocolSeen: protocol,
  };
}

/** A session as one row of `mcpguard sessions`. */
export interface SessionRow {
  session_id: string;
  /** --name, else the server's serverInfo.name, else the command's basename. */
  name: string;
  /** Where the name came from: `option`, `server` or `command`. */
  name_source: 'option' | 'server' | 'command';
  started_at: string | null;
  duration_ms: number | null;
  command: string[];
  end_reason: string | null;
  /** Present (true) for a probe session: only server/discover, ended by the client, sealed before the child's exit. */
  probe?: true;
  exit_code: number | null;
  signal: string | null;
  /** From the session record's per-state counts when it has them (calls with a final record), else the calls seen (each once). */
  calls: number;
  rejected: number;
  /**
   * `legacy`, `modern` or `unknown`, and the protocol version, from the session
   * record; before it (running, crashed) the era is null and the version the
   * one its calls' final records carry, if any has ended yet.
   */
  era: string | null;
  protocol_version: string | null;
  sealed: boolean;
  torn: boolean;
  records: number;
  /** The server had to be killed (SIGKILL after the grace steps); null before the session record. */
  forced_kill: boolean | null;
  /** The command could not be started. */
  spawn_failed: boolean;
  /** Calls that ended in a failed state (filters.ts FAILED_STATES), from the session record; null before it. */
  failed_calls: number | null;
  /** How many times the server was started again (--restart): from the session record, else (running, crashed) the restart records so far; null without --restart. */
  restarts: number | null;
  /** Whether the mcpguard of an unsealed log runs (live.ts); null for a sealed log. Set by the views that check it, last. */
  liveness?: Liveness | null;
}

/** Summarise one session from its start and end records; a missing end leaves nulls. */
export function sessionRow(log: LogSummary): SessionRow {
  const { start, end } = log;
  const startedAt = timeOf(start?.started_at) ?? timeOf(log.createdAt);
  const endedAt = timeOf(end?.ended_at);
  const named = sessionName(log);
  return {
    session_id: log.sessionId,
    name: named.name,
    name_source: named.source,
    started_at: startedAt === null ? null : new Date(startedAt).toISOString(),
    duration_ms: startedAt !== null && endedAt !== null ? endedAt - startedAt : null,
    command: commandOf(start),
    end_reason: typeof end?.end_reason === 'string' ? end.end_reason : null,
    ...(end?.probe === true ? { probe: true as const } : {}),
    exit_code: typeof end?.exit_code === 'number' ? end.exit_code : null,
    signal: typeof end?.signal === 'string' ? end.signal : null,
    calls: log.calls,
    rejected: log.rejected,
    era: str(end?.era),
    protocol_version: end === undefined ? (log.protocolSeen ?? null) : str(end.protocol_version),
    sealed: log.sealed,
    torn: log.torn,
    records: log.records,
    forced_kill: typeof end?.forced_kill === 'boolean' ? end.forced_kill || end.unkillable === true : null,
    spawn_failed: typeof end?.spawn_error === 'string',
    failed_calls: failedCalls(end?.calls, end?.era_probes_declined),
    restarts: end !== undefined ? num(end.restarts) : restartsSoFar(log),
  };
}

/** A session without its session record (running, or crashed): the restarts its log shows, when it ran with --restart. */
function restartsSoFar(log: LogSummary): number | null {
  const restart = (log.start?.options as Record<string, unknown> | undefined)?.restart;
  if (restart !== 'on-failure' && restart !== 'always') return null;
  return log.restartsSeen ?? null;
}

/**
 * A session's name: the --name it was given (in session_start), else the
 * server's own (serverInfo.name, as the session record or the server_info
 * record holds it), else the basename of its command.
 */
export function sessionName(log: Pick<LogEnds, 'start' | 'end' | 'serverInfo'>): { name: string; source: SessionRow['name_source'] } {
  const given = str(log.start?.name) ?? str(log.end?.name_source === 'option' ? log.end.name : null);
  if (given !== null) return { name: given, source: 'option' };
  const server = str(log.end?.server_name) ?? str(log.serverInfo?.name);
  if (server !== null && server !== '') return { name: server, source: 'server' };
  const command = str(log.start?.command) ?? '';
  return { name: basename(command) || '-', source: 'command' };
}

/**
 * How many calls a session record counts in failed states; null without one.
 * A `server/discover` answered "method not found" (`declined`) is a legacy
 * server telling a probing client its era, not a failure: it is not counted.
 */
function failedCalls(calls: unknown, declined: unknown): number | null {
  if (typeof calls !== 'object' || calls === null || Array.isArray(calls)) return null;
  let n = 0;
  for (const [state, count] of Object.entries(calls)) if (FAILED_STATES.has(state) && typeof count === 'number') n += count;
  return Math.max(0, n - (typeof declined === 'number' ? declined : 0));
}

/** The command and its arguments from a session_start record. */
export function commandOf(start: LogRecord | undefined): string[] {
  return [start?.command, ...(Array.isArray(start?.args) ? start.args : [])].filter((part) => part !== undefined).map(String);
}

/** What a call id prefix names: one call's records in file order with its log, or why not. */
export type CallLookup = { log: LogRef; callId: string; records: LogRecord[] } | { none: true } | { ambiguous: string[] };

/**
 * Stream every log for records of the call(s) whose id starts with `prefix`.
 * Only lines that hold the prefix's text are parsed, and records are kept for
 * one call only: a prefix that matches many calls costs their ids, no more.
 */
export function findCall(logs: LogRef[], prefix: string): CallLookup {
  const needle = Buffer.from(JSON.stringify(prefix).slice(0, -1)); // `"c_ab` as canonical JSON writes it
  let found: { log: LogRef; callId: string; records: LogRecord[] } | null = null;
  const others = new Set<string>();
  for (const log of logs) {
    const reader = new LineReader(log.file);
    try {
      for (let line = reader.nextContaining(needle); line !== null; line = reader.nextContaining(needle)) {
        const r = parseRecord(line);
        if (r === null || typeof r.call_id !== 'string' || !r.call_id.startsWith(prefix)) continue;
        if (found === null) found = { log, callId: r.call_id, records: [] };
        if (r.call_id === found.callId && log.file === found.log.file) found.records.push(r);
        else if (others.size < 20) others.add(r.call_id === found.callId ? `${r.call_id} (in ${log.sessionId})` : r.call_id);
      }
    } finally {
      reader.close();
    }
  }
  if (found === null) return { none: true };
  return others.size > 0 ? { ambiguous: [found.callId, ...others] } : found;
}

/** A call record: any `call_*` type with a string `call_id`. */
export function isCallRecord(r: LogRecord): r is LogRecord & { call_id: string } {
  return typeof r.call_id === 'string' && typeof r.type === 'string' && r.type.startsWith('call_');
}

/** Milliseconds since the epoch from an ISO string or a number; null if neither. */
export function timeOf(value: unknown): number | null {
  const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isFinite(ms) ? ms : null;
}

export function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function num(value: unknown): number | null {
  return typeof value === 'number' ? value : null;
}
