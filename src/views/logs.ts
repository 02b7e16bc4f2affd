/**
 * `mcpguard logs SESSION|CALL [--tail N] [--follow] [--utc] [--json]`: what the server wrote on
 * stderr, as the records kept it (masked when it was recorded, within
 * --stderr-call-bytes per call). A call prints its own text; a session prints
 * each byte once, in stream order, each call's under a header (logs-order.ts:
 * calls in flight together share bytes), then the session tail (what came
 * while no call was in flight). A block that lost bytes keeps mcpguard's
 * truncation marker as its first line, as docker logs and journalctl show
 * only what they kept but say so. Every line of the server's text comes after
 * `server| ` (SERVER_PREFIX), so that headers and markers are told apart from
 * lines the server wrote to look like them; --json keeps the text as recorded.
 *
 * SESSION and CALL are ids or unique prefixes of them (`s_…`, `c_…`); a
 * session may also be named by its log file's path, or `last` (the newest).
 * Logs are read a chunk at a time, never whole, so a large directory costs
 * time, not memory.
 *
 * With --follow it goes on printing what the session writes (or waits for
 * the call's final record) until the session record is written, as
 * `tail -f` does. A session whose mcpguard is found gone without one (it
 * crashed) ends the follow with a line on stderr saying so.
 *
 * A block's header shows when it ended in local time with the zone, as the
 * other views do (`--utc`: in UTC); --json keeps the records' ISO UTC times.
 *
 * Exit codes: 0 printed (also when there was no stderr, and when a followed
 * session crashed); 1 nothing or more than one thing matches, or a followed
 * call will never end (its session crashed); 125 bad options.
 */
import { statSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { EXIT_USAGE } from '../base/errors.js';
import { processMasker } from '../mask/mask.js';
import { jsonLine, writeOut } from '../mask/escape.js';
import { serverText } from '../mask/diagnostics.js';
import { Clock } from './when.js';
import { describe as describeError, recordDirFor, resolveRecordDir } from '../records/location.js';
import type { LogRecord } from '../records/chain.js';
import { liveness } from '../records/live.js';
import { FOLLOW_POLL_MS, LineReader, forEachLine, listLogFiles, parseRecord } from '../records/read.js';
import { listLogs, logEnds } from './views.js';
import { NEWEST } from './view-kit.js';
import { nothingHereNote } from './elsewhere.js';
import { inStreamOrder } from './logs-order.js';
import { placedTail, splitMarker, splitTail, stretchLines, tailBlock, type Stretch } from './logs-tail.js';
import type { CommandIO } from './commands.js';
import type { Output } from './output.js';

const SESSION_END = '"type":"session_end"';
/** While a follow sees nothing new, the writer's liveness is checked every this many polls. */
const LIVENESS_EVERY = 5;

/** One stretch of stderr: a call's, or the session's outside any call. */
export interface Block {
  kind: 'call' | 'session_tail';
  session_id: string;
  call_id: string | null;
  method: string | null;
  tool: string | null;
  state: string | null;
  ended_at: string | null;
  bytes_seen: number;
  bytes_retained: number | null;
  truncated: boolean;
  /** mcpguard's truncation marker, apart from the text (null: nothing was lost). */
  marker: string | null;
  /** The retained text; null when the record holds none (written before mcpguard kept stderr text). */
  text: string | null;
  /** Where the call's stderr ends in the session's stream (null: not recorded). */
  stream_end: number | null;
  /** In a session: bytes at the start of the text left out because a block before it printed them (logs-order.ts). */
  shown_above: number;
  /** In a session: the calls with stderr that were in flight with this one. */
  also_open: string[];
  /** A session tail printed as the stretches it came in: which one this is, and where it came (logs-tail.ts); else null. */
  stretch: Stretch | null;
}

/**
 * Run `logs` with its arguments (after the word `logs`), writing through
 * `output` (the caller drains it); resolves to the exit code.
 */
export async function runLogsCommand(argv: string[], io: CommandIO, output: Output): Promise<number> {
  const fail = (message: string, code: number): number => {
    io.stderr.write(`mcpguard logs: ${message}\n`);
    return code;
  };
  let values: { 'record-dir'?: string; json?: boolean; tail?: string; follow?: boolean; utc?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        'record-dir': { type: 'string' },
        json: { type: 'boolean' },
        tail: { type: 'string', short: 'n' },
        follow: { type: 'boolean', short: 'f' },
        utc: { type: 'boolean' },
      },
    }));
  } catch (error) {
    return fail((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''), EXIT_USAGE);
  }
  if (positionals.length !== 1)
    return fail(positionals.length === 0 ? 'expects a SESSION or CALL id (or a unique prefix)' : `unexpected argument '${positionals[1]}'`, EXIT_USAGE);
  let tail: number | null = null;
  if (values.tail !== undefined) {
    if (!/^\d+$/.test(values.tail) || !Number.isSafeInteger(Number(values.tail)))
      return fail(`--tail expects a whole number of lines, got '${values.tail}'`, EXIT_USAGE);
    tail = Number(values.tail);
  }
  if (values['record-dir'] === '') return fail("--record-dir expects a directory, got ''", EXIT_USAGE);
  const wanted = positionals[0]!;
  let dir: string;
  try {
    dir = recordDirFor(resolveRecordDir(values['record-dir']));
  } catch (error) {
    return fail((error as Error).message, EXIT_USAGE);
  }
  let source: Source;
  try {
    const found = find(dir, wanted, values.follow === true);
    if (typeof found === 'string') {
      fail(found, 1);
      // An empty record directory: say why this one, and where this user's sessions are instead.
      if (!exists(dir) || listLogFiles(dir).length === 0) io.stderr.write(nothingHereNote('logs', dir, values['record-dir'], true, [wanted]));
      return 1;
    }
    source = found;
  } catch (error) {
    return fail(describeError(error), 1);
  }
  const masker = processMasker();
  const clock = new Clock(values.utc === true);
  // The reader went away (`logs … | head`): stop quietly, as the other record commands do.
  const stopped = (): boolean => output.closed;
  const write = (b: Block): boolean => {
    // Records were masked when written; masking again costs little and covers logs written by anything else.
    if (b.text !== null) b.text = masker.text(b.text);
    // A call's own text needs no header, as `docker logs` prints one container's output bare.
    return output.write(values.json === true ? `${jsonLine(b)}\n` : render(b, !source.oneCall, clock));
  };
  // With --tail, the first pass keeps only the last N lines it has seen; later (followed) blocks print as they come.
  let kept: Block[] | null = tail === null ? null : [];
  let keptLines = 0;
  let shown = 0;
  const emit = async (blocks: Block[]): Promise<void> => {
    shown += blocks.length;
    if (kept !== null) {
      kept.push(...blocks);
      keptLines += blocks.reduce((n, b) => n + (b.text === null ? 0 : splitKeepingEnds(b.text).length), 0);
      if (keptLines > 2 * tail! + 1000) {
        kept = lastLines(kept, tail!);
        keptLines = tail!;
      }
      return;
    }
    // Output is written as the log is read, never all at once: a slow reader holds the reading back.
    for (const b of blocks) if (!stopped() && write(b)) await output.flush();
    // What is left of the batch goes out now, so that --follow shows it at once.
    await output.flush();
    // A turn of the event loop per batch, so that a closed pipe (EPIPE) is heard of.
    await new Promise((resolve) => setImmediate(resolve));
  };
  try {
    let r = source.read();
    for (;;) {
      await emit(r.blocks);
      if (r.eof || stopped()) break;
      r = source.read();
    }
    if (kept !== null) {
      const last = lastLines(kept, tail!);
      kept = null;
      await emit(last);
    }
    if (source.oneCall && r.done && shown === 0) return fail(`call ${source.name} has no final record: its session ended without one`, 1);
    if (source.oneCall && !r.done && values.follow !== true)
      return fail(`call ${source.name} has no final record yet (still running, or its session crashed): no stderr recorded; --follow waits for it`, 1);
    let idle = 0;
    let writer: LogRecord | undefined;
    while (values.follow === true && !r.done && !stopped()) {
      if (r.eof) await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
      r = source.read();
      await emit(r.blocks);
      idle = r.blocks.length > 0 ? 0 : idle + 1;
      if (idle % LIVENESS_EVERY !== 0 || r.done) continue;
      writer ??= logEnds(source.file).start;
      if (liveness(writer) !== 'crashed') continue;
      // One more read: the session record may have come just before mcpguard exited.
      r = source.read();
      await emit(r.blocks);
      if (r.done) break;
      await emit(source.drain());
      io.stderr.write(
        `mcpguard logs: the session's mcpguard (pid ${String(writer?.mcpguard_pid ?? '?')}) is gone without a session record: it crashed${source.oneCall ? `; call ${source.name} never ended` : ''}\n`,
      );
      return source.oneCall ? 1 : 0;
    }
  } catch (error) {
    return fail(describeError(error), 1);
  }
  return 0;
}

/**
 * Where the blocks come from: a session log, or one call's final record.
 * Each read goes on from where the last one stopped, so --follow sees only
 * what was written since; `done` once nothing more can come.
 */
interface Source {
  oneCall: boolean;
  /** The session log the blocks are read from. */
  file: string;
  name: string;
  /** The blocks of the next stretch of the log (about READ_BYTES); `eof`: the log was read to its end. */
  read(): { blocks: Block[]; done: boolean; eof: boolean };
  /** Blocks held back for ordering, now (a followed session crashed: no more will come). */
  drain(): Block[];
}

/** The session or call a name means, or why there is none. */
function find(dir: string, wanted: string, follow: boolean): Source | string {
  if (wanted.endsWith('.jsonl') || wanted.includes('/')) return sessionSource(follow, wanted);
  if (wanted === NEWEST) {
    const newest = exists(dir) ? listLogs(dir).at(-1) : undefined; // by header time, as `sessions` orders them
    return newest === undefined ? `no sessions in '${dir}'` : sessionSource(follow, newest.file);
  }
  const files = exists(dir) ? listLogFiles(dir) : [];
  const sessions = wanted.startsWith('c_') ? [] : files.filter((f) => basename(f, '.jsonl').startsWith(wanted));
  const calls = wanted.startsWith('s_') ? new Map<string, string>() : findCalls(files, wanted);
  const count = sessions.length + calls.size;
  if (count === 0) return `no session or call '${wanted}' in '${dir}'`;
  if (count > 1) {
    const names = [...sessions.map((f) => basename(f, '.jsonl')), ...calls.keys()];
    return `'${wanted}' matches ${count} sessions and calls (${names.slice(0, 5).join(', ')}${count > 5 ? ', …' : ''}); give more of the id`;
  }
  if (sessions.length === 1) return sessionSource(follow, sessions[0]!);
  const [callId, file] = [...calls][0]!;
  return callSource(file, callId);
}

/** Calls whose id starts with `prefix`, and the log each is in. */
function findCalls(files: string[], prefix: string): Map<string, string> {
  const found = new Map<string, string>();
  const needle = Buffer.from(`"call_id":${JSON.stringify(prefix).slice(0, -1)}`);
  for (const file of files) {
    const reader = new LineReader(file);
    try {
      for (let line = reader.nextContaining(needle); line !== null; line = reader.nextContaining(needle)) {
        const id = parseRecord(line)?.call_id;
        if (typeof id === 'string' && id.startsWith(prefix)) found.set(id, file);
      }
    } finally {
      reader.close();
    }
  }
  return found;
}

function callSource(file: string, callId: string): Source {
  let offset = 0;
  let done = false;
  const needles = [Buffer.from(`"call_id":${JSON.stringify(callId)}`), Buffer.from(SESSION_END)];
  return {
    oneCall: true,
    file,
    name: callId,
    drain: () => [],
    read() {
      const blocks: Block[] = [];
      let eof: boolean;
      ({ offset, eof } = forEachLine(file, offset, needles, (record) => {
        if (record.type === 'call_end' && record.call_id === callId) blocks.push(callBlock(record, basename(file, '.jsonl')));
        if (blocks.length > 0 || record.type === 'session_end') done = true;
      }));
      return { blocks, done, eof };
    },
  };
}

/**
 * How much of a session log one read takes. Its blocks (each call's text) are
 * held until they are written: a small batch keeps them young, so that they
 * die in the young generation instead of piling up in the old one.
 */
const SESSION_BATCH = 64 * 1024;
/** Stderr text held back for ordering (calls in flight together) beyond which it is printed as it stands. */
const HELD_BYTES = 4 * 1024 * 1024;

function sessionSource(follow: boolean, file: string): Source {
  let offset = 0;
  let done = false;
  let sessionId = basename(file, '.jsonl');
  // Calls in flight share stderr: their blocks are held until none is open, then printed in stream order.
  const open = new Set<string>();
  let held: Block[] = [];
  let heldBytes = 0;
  let printed = 0;
  // The tail's stretches, placed between the calls when the session record (read first, at the log's end) says where.
  let outside: Block[] | null = null;
  let placed = false;
  const stretches = (): Block[] => {
    if (outside === null) {
      const tail = placedTail(file);
      placed = tail !== null;
      outside = tail ?? [];
    }
    return outside;
  };
  const release = (): Block[] => {
    const r = inStreamOrder(held, printed, stretches());
    printed = r.printed;
    held = [];
    heldBytes = 0;
    return r.blocks;
  };
  return {
    oneCall: false,
    file,
    name: sessionId,
    drain: release,
    read() {
      const blocks: Block[] = [];
      let eof: boolean;
      ({ offset, eof } = forEachLine(
        file,
        offset,
        null,
        (record) => {
          if (record.type === 'header' && typeof record.log_id === 'string') sessionId = record.log_id;
          if (record.type === 'call_attempt' && typeof record.call_id === 'string') open.add(record.call_id);
          if (record.type === 'call_end' && typeof record.call_id === 'string') open.delete(record.call_id);
          let block = sessionBlock(record, sessionId);
          if (block !== null && record.type === 'session_end') {
            // A session followed live: its tail is placed only now, after every call (in stream order among its stretches).
            stretches();
            const tail = placed ? null : splitTail(block, (record.stderr as Record<string, unknown>).tail_stretches);
            if (tail !== null) [outside, placed] = [tail, true];
            if (placed) block = null;
          }
          if (block !== null) {
            held.push(block);
            heldBytes += block.text?.length ?? 0;
          }
          if (record.type === 'session_end') done = true;
          // A call that never ends (a hang to the end, a crash) must not hold the rest back without bound.
          if (held.length > 0 && (open.size === 0 || heldBytes > HELD_BYTES || done)) blocks.push(...release());
          // What of the tail came after every call block.
          if (done && outside !== null) blocks.push(...outside.splice(0));
        },
        SESSION_BATCH,
      ));
      // Without --follow nothing more will come: calls left open (the session crashed) end the ordering here.
      if (held.length > 0 && (done || (eof && !follow))) blocks.push(...release());
      return { blocks, done, eof };
    },
  };
}

/** A session record's block: a call that saw stderr, or the session tail; null for anything else. */
function sessionBlock(record: Record<string, unknown>, sessionId: string): Block | null {
  if (record.type === 'call_end') return num(record.stderr_bytes_seen) > 0 ? callBlock(record, sessionId) : null;
  return record.type === 'session_end' ? tailBlock(record, sessionId) : null;
}

function callBlock(r: Record<string, unknown>, sessionId: string): Block {
  const truncated = r.stderr_truncated === true;
  let text = typeof r.stderr === 'string' ? r.stderr : null;
  let marker: string | null = null;
  // The marker is mcpguard's only when the record says bytes were lost: the child cannot forge one.
  if (truncated && text !== null) ({ marker, text } = splitMarker(text));
  return {
    kind: 'call',
    session_id: sessionId,
    call_id: str(r.call_id),
    method: str(r.method),
    tool: str(r.tool),
    state: str(r.state),
    ended_at: str(r.ended_at),
    bytes_seen: num(r.stderr_bytes_seen),
    bytes_retained: num(r.stderr_bytes_retained),
    truncated,
    marker,
    text,
    stream_end: typeof r.stderr_stream_end === 'number' ? r.stderr_stream_end : null,
    shown_above: 0,
    also_open: [],
    stretch: null,
  };
}

/** The last `n` lines over all blocks, blocks left without lines dropped (their headers and markers go with them). */
function lastLines(blocks: Block[], n: number): Block[] {
  const out: Block[] = [];
  let left = n;
  for (let i = blocks.length - 1; i >= 0 && left > 0; i--) {
    const b = blocks[i]!;
    if (b.text === null) {
      out.push(b);
      continue;
    }
    const lines = splitKeepingEnds(b.text);
    const kept = lines.slice(Math.max(0, lines.length - left));
    left -= kept.length;
    if (kept.length > 0) out.push({ ...b, text: kept.join('') });
  }
  return out.reverse();
}

function splitKeepingEnds(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function render(b: Block, header: boolean, clock: Clock): string {
  let out = b.stretch === null ? '' : stretchLines(b);
  if (header && b.stretch === null) {
    const when = b.ended_at === null ? '' : `  ${clock.full(b.ended_at)}`;
    out +=
      b.kind === 'call'
        ? `==> call ${b.call_id ?? '?'}  ${b.method ?? '-'}${b.tool === null ? '' : ` ${b.tool}`}  ${b.state ?? '-'}${when}${b.also_open.length === 0 ? '' : `  (with ${b.also_open.join(', ')})`} <==\n`
        : `==> session ${b.session_id}: stderr outside any call${when} <==\n`;
    // What overlapping calls share is printed once, under the first of them.
    if (b.shown_above > 0) out += `[${b.shown_above} bytes shown above${b.text === '' ? ", all of this call's" : ''}]\n`;
  }
  if (b.marker !== null && b.stretch === null) out += `${b.marker}\n`;
  if (b.text === null) return `${out}[stderr text not in the record: ${b.bytes_seen} bytes seen; the record predates stderr text]\n`;
  // The server's lines behind a prefix: a header or marker of its own making cannot pass for mcpguard's.
  // A stretch's text holds no omission line (logs-tail.ts put it above, as mcpguard's): every line is the server's.
  out += shownText(b.text, b.stretch === null ? b.marker : null);
  if (b.text.length > 0 && !b.text.endsWith('\n')) out += '\n';
  return terminalSafe(out);
}

const OMITTED = /, omitted (\d+)/;

/**
 * A block's text with each of the server's lines behind SERVER_PREFIX. In
 * head+tail retention mcpguard's omission line stands inside the text: it is
 * the line that reads as the marker's count says, shown bare only when exactly
 * one line does (a second one is the server's, and then neither is taken for
 * mcpguard's: the marker above still states what was omitted).
 */
function shownText(text: string, marker: string | null): string {
  const omitted = marker === null ? null : OMITTED.exec(marker);
  if (omitted !== null) {
    const line = `[... ${omitted[1]} bytes omitted ...]\n`;
    const at = lineAt(text, line, 0);
    if (at !== -1 && lineAt(text, line, at + line.length) === -1) return serverText(text.slice(0, at)) + line + serverText(text.slice(at + line.length));
  }
  return serverText(text);
}

/** Where `line` stands as a whole line of `text`, at or after `from` (a line start), or -1. */
function lineAt(text: string, line: string, from: number): number {
  if (text.startsWith(line, from)) return from;
  const at = text.indexOf(`\n${line}`, from);
  return at === -1 ? -1 : at + 1;
}

/** The child's bytes must not drive the terminal: control characters other than newline and tab, bidi and zero-width ones are shown escaped. */
function terminalSafe(text: string): string {
  return writeOut(text, true);
}

function exists(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function num(value: unknown): number {
  return typeof value === 'number' ? value : 0;
}
