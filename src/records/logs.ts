/**
 * `mcpguard logs SESSION|CALL [--tail N] [--json]`: what the server wrote on
 * stderr, as the records kept it (masked when it was recorded, within
 * --stderr-call-bytes per call). A call prints its own text; a session prints
 * each call's text in order under a header, then the session tail (what came
 * while no call was in flight). A block that lost bytes keeps mcpguard's
 * truncation marker as its first line, as docker logs and journalctl show
 * only what they kept but say so.
 *
 * SESSION and CALL are ids or unique prefixes of them (`s_…`, `c_…`); a
 * session may also be named by its log file's path. Logs are read a chunk at
 * a time, never whole, so a large directory costs time, not memory.
 *
 * Exit codes: 0 printed (also when there was no stderr); 1 nothing or more
 * than one thing matches; 125 bad options.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { EXIT_USAGE } from '../errors.js';
import { processMasker } from '../mask.js';
import { CAPTURED_LABEL } from '../stderr/excerpt.js';
import { formatDate } from './format.js';
import { describe as describeError, recordDirFor, resolveRecordDir } from './location.js';
import { listLogFiles } from './read.js';
import type { CommandIO } from './commands.js';

const MARKER_START = '[stderr truncated: ';
const CHUNK_BYTES = 1 << 20;

/** One stretch of stderr: a call's, or the session's outside any call. */
interface Block {
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
}

/** Run `logs` with its arguments (after the word `logs`); resolves to the exit code. */
export async function runLogsCommand(argv: string[], io: CommandIO): Promise<number> {
  const fail = (message: string, code: number): number => { io.stderr.write(`mcpguard logs: ${message}\n`); return code; };
  let values: { 'record-dir'?: string; json?: boolean; tail?: string };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv, allowPositionals: true, strict: true,
      options: { 'record-dir': { type: 'string' }, json: { type: 'boolean' }, tail: { type: 'string', short: 'n' } },
    }));
  } catch (error) {
    return fail((error as Error).message.replace(/\. To specify a positional argument.*$/s, ''), EXIT_USAGE);
  }
  if (positionals.length !== 1) return fail(positionals.length === 0 ? 'expects a SESSION or CALL id (or a unique prefix)' : `unexpected argument '${positionals[1]}'`, EXIT_USAGE);
  let tail: number | null = null;
  if (values.tail !== undefined) {
    if (!/^\d+$/.test(values.tail) || !Number.isSafeInteger(Number(values.tail))) return fail(`--tail expects a whole number of lines, got '${values.tail}'`, EXIT_USAGE);
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
  let blocks: Block[];
  let oneCall: boolean;
  try {
    const found = find(dir, wanted);
    if (typeof found === 'string') return fail(found, 1);
    ({ blocks, oneCall } = found);
  } catch (error) {
    return fail(describeError(error), 1);
  }
  const masker = processMasker();
  // Records were masked when written; masking again costs little and covers logs written by anything else.
  for (const b of blocks) if (b.text !== null) b.text = masker.text(b.text);
  if (values.json === true) {
    for (const b of tail === null ? blocks : lastLines(blocks, tail)) io.stdout.write(`${JSON.stringify(b)}\n`);
    return 0;
  }
  // A call's own text needs no header, as `docker logs` prints one container's output bare.
  for (const b of tail === null ? blocks : lastLines(blocks, tail)) io.stdout.write(render(b, !oneCall));
  return 0;
}

/** A call's blocks, or a session's, or why there are none. */
function find(dir: string, wanted: string): { blocks: Block[]; oneCall: boolean } | string {
  if (wanted.endsWith('.jsonl') || wanted.includes('/')) return { blocks: sessionBlocks(wanted), oneCall: false };
  const files = exists(dir) ? listLogFiles(dir) : [];
  const sessions = wanted.startsWith('c_') ? [] : files.filter((f) => basename(f, '.jsonl').startsWith(wanted));
  const calls = wanted.startsWith('s_') ? new Map<string, Block | null>() : findCalls(files, wanted);
  const count = sessions.length + calls.size;
  if (count === 0) return `no session or call '${wanted}' in '${dir}'`;
  if (count > 1) {
    const names = [...sessions.map((f) => basename(f, '.jsonl')), ...calls.keys()];
    return `'${wanted}' matches ${count} sessions and calls (${names.slice(0, 5).join(', ')}${count > 5 ? ', …' : ''}); give more of the id`;
  }
  if (sessions.length === 1) return { blocks: sessionBlocks(sessions[0]!), oneCall: false };
  const [callId, block] = [...calls][0]!;
  return block === null ? `call ${callId} has no final record yet (still running, or its session ended without one): no stderr recorded` : { blocks: [block], oneCall: true };
}

/** Calls whose id starts with `prefix`, with their final record's block (null: attempted, not ended). */
function findCalls(files: string[], prefix: string): Map<string, Block | null> {
  const found = new Map<string, Block | null>();
  const needle = `"call_id":${JSON.stringify(prefix).slice(0, -1)}`;
  // Newest first: a prefix usually names a recent call.
  for (const file of [...files].reverse()) {
    forEachLine(file, needle, (record) => {
      const id = record.call_id;
      if (typeof id !== 'string' || !id.startsWith(prefix)) return;
      if (record.type === 'call_end') found.set(id, callBlock(record, basename(file, '.jsonl')));
      else if (record.type === 'call_attempt' && !found.has(id)) found.set(id, null);
    });
  }
  return found;
}

/** A session's calls that saw stderr, in the order they ended, then its tail. */
function sessionBlocks(file: string): Block[] {
  const blocks: Block[] = [];
  let sessionId = basename(file, '.jsonl');
  forEachLine(file, null, (record) => {
    if (record.type === 'header' && typeof record.log_id === 'string') sessionId = record.log_id;
    else if (record.type === 'call_end' && num(record.stderr_bytes_seen) > 0) blocks.push(callBlock(record, sessionId));
    else if (record.type === 'session_end') {
      const s = record.stderr as Record<string, unknown> | undefined;
      if (s === undefined || typeof s.tail !== 'string' || s.tail === '') return;
      let text = s.tail.startsWith(`${CAPTURED_LABEL}\n`) ? s.tail.slice(CAPTURED_LABEL.length + 1) : s.tail;
      // Older records do not say whether the tail lost bytes; a marker-shaped first line is then taken as the marker.
      const truncated = typeof s.tail_truncated === 'boolean' ? s.tail_truncated : text.startsWith(MARKER_START);
      let marker: string | null = null;
      if (truncated) ({ marker, text } = splitMarker(text));
      blocks.push({
        kind: 'session_tail', session_id: sessionId, call_id: null, method: null, tool: null, state: null, ended_at: str(record.ended_at),
        bytes_seen: typeof s.tail_bytes_seen === 'number' ? s.tail_bytes_seen : Buffer.byteLength(text), bytes_retained: null, truncated, marker, text,
      });
    }
  });
  return blocks;
}

function callBlock(r: Record<string, unknown>, sessionId: string): Block {
  const truncated = r.stderr_truncated === true;
  let text = typeof r.stderr === 'string' ? r.stderr : null;
  let marker: string | null = null;
  // The marker is mcpguard's only when the record says bytes were lost: the child cannot forge one.
  if (truncated && text !== null) ({ marker, text } = splitMarker(text));
  return {
    kind: 'call', session_id: sessionId, call_id: str(r.call_id), method: str(r.method), tool: str(r.tool), state: str(r.state), ended_at: str(r.ended_at),
    bytes_seen: num(r.stderr_bytes_seen), bytes_retained: num(r.stderr_bytes_retained), truncated, marker, text,
  };
}

function splitMarker(text: string): { marker: string | null; text: string } {
  const nl = text.indexOf('\n');
  if (!text.startsWith(MARKER_START) || nl === -1) return { marker: null, text };
  return { marker: text.slice(0, nl), text: text.slice(nl + 1) };
}

/** The last `n` lines over all blocks, blocks left without lines dropped (their headers and markers go with them). */
function lastLines(blocks: Block[], n: number): Block[] {
  const out: Block[] = [];
  let left = n;
  for (let i = blocks.length - 1; i >= 0 && left > 0; i--) {
    const b = blocks[i]!;
    if (b.text === null) { out.push(b); continue; }
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

function render(b: Block, header: boolean): string {
  let out = '';
  if (header) {
    const when = b.ended_at === null ? '' : `  ${formatDate(b.ended_at)}`;
    out += b.kind === 'call'
      ? `==> call ${b.call_id ?? '?'}  ${b.method ?? '-'}${b.tool === null ? '' : ` ${b.tool}`}  ${b.state ?? '-'}${when} <==\n`
      : `==> session ${b.session_id}: stderr outside any call${when} <==\n`;
  }
  if (b.marker !== null) out += `${b.marker}\n`;
  if (b.text === null) return `${out}[stderr text not in the record: ${b.bytes_seen} bytes seen; the record predates stderr text]\n`;
  out += b.text;
  if (b.text.length > 0 && !b.text.endsWith('\n')) out += '\n';
  return terminalSafe(out);
}

/** The child's bytes must not drive the terminal: control characters other than newline and tab are shown escaped. */
function terminalSafe(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * Each complete line of a log, a chunk at a time, as a parsed record; with a
 * needle, only lines holding it are parsed. The file must be a regular file
 * named directly (as readLogFile wants it); an unparsable line is skipped.
 */
function forEachLine(file: string, needle: string | null, visit: (record: Record<string, unknown>) => void): void {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ELOOP' || code === 'EMLINK') throw new Error(`${file}: a symbolic link, not followed`);
    throw error;
  }
  try {
    if (!fstatSync(fd).isFile()) throw new Error(`${file}: not a regular file`);
    const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
    let carry: Buffer = Buffer.alloc(0);
    const needleBytes = needle === null ? null : Buffer.from(needle);
    for (;;) {
      const n = readSync(fd, chunk, 0, CHUNK_BYTES, null);
      if (n === 0) break;
      const data = carry.length === 0 ? chunk.subarray(0, n) : Buffer.concat([carry, chunk.subarray(0, n)]);
      let start = 0;
      for (let nl = data.indexOf(10, start); nl !== -1; nl = data.indexOf(10, start)) {
        const line = data.subarray(start, nl);
        start = nl + 1;
        if (needleBytes !== null && line.indexOf(needleBytes) === -1) continue;
        const record = parse(line);
        if (record !== null) visit(record);
      }
      carry = Buffer.from(data.subarray(start)); // a copy: `chunk` is reused
    }
  } finally {
    closeSync(fd);
  }
}

function parse(line: Buffer): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(line.toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : null;
  } catch {
    return null;
  }
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
