/**
 * What every record view shares: where it writes (an Output drained before
 * the command returns), how it shows things to a person (terminal width,
 * colour, local or UTC time), and how it names a session or says that
 * nothing was found.
 */
import { resolve } from 'node:path';
import { clipMiddle, printable, type TableStyle } from './format.js';
import { describe } from '../records/location.js';
import type { Output } from './output.js';
import { logRef, type LogRef } from './views.js';
import type { Clock } from './when.js';

/** Where a command writes; tests pass their own (and, for width and colour, an env). */
export interface CommandIO {
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  stderr: { write(text: string): unknown };
  env?: Record<string, string | undefined>;
}

/** One run of a view: its output, its record directory and logs, and how it shows things. */
export interface ViewContext {
  output: Output;
  io: CommandIO;
  dir: string;
  /** The session logs of the directory, oldest first. */
  logs: LogRef[];
  json: boolean;
  clock: Clock;
  style: TableStyle;
}

/** Narrowest width a table is fitted to: below it, rows wrap rather than lose every column. */
export const MIN_WIDTH = 80;

/**
 * How tables look on this stdout: as wide as the terminal (its width on a
 * TTY, else $COLUMNS if set, else no limit; never under MIN_WIDTH), coloured
 * only on a TTY without NO_COLOR, unless `--color always|never` says otherwise.
 */
export function tableStyle(io: CommandIO, color: string | undefined): TableStyle {
  const env = io.env ?? process.env;
  const tty = io.stdout.isTTY === true;
  const columns =
    tty && typeof io.stdout.columns === 'number' && io.stdout.columns > 0
      ? io.stdout.columns
      : /^\d{1,5}$/.test(env.COLUMNS ?? '') && Number(env.COLUMNS) > 0
        ? Number(env.COLUMNS)
        : null;
  return {
    width: columns === null ? null : Math.max(MIN_WIDTH, columns),
    color: color === 'always' || ((color ?? 'auto') === 'auto' && tty && (env.NO_COLOR ?? '') === ''),
  };
}

/** Queue `text`; wait for the reader when enough is queued. False once the reader has gone: stop producing. */
export async function emit(output: Output, text: string): Promise<boolean> {
  if (output.write(text)) await output.flush();
  return !output.closed;
}

export function skipped(io: CommandIO, file: string, reason: string): void {
  io.stderr.write(`mcpguard: ${file}: skipped: ${reason}\n`);
}

export function notFound(io: CommandIO, message: string): number {
  io.stderr.write(`mcpguard: ${message}\n`);
  return 1;
}

export function warnUnreadable(file: string, unreadable: number[], io: CommandIO): void {
  if (unreadable.length > 0) {
    io.stderr.write(`mcpguard: ${file}: ${unreadable.length} unreadable line(s) (first: line ${unreadable[0]}); run mcpguard verify\n`);
  }
}

/** A path, not an id: ids never hold a `/` nor end in `.jsonl`. */
export function looksLikePath(wanted: string): boolean {
  return wanted.includes('/') || wanted.endsWith('.jsonl');
}

/** The word that names the newest session wherever a SESSION is asked for (no id starts with it: ids start `s_` or `c_`). */
export const NEWEST = 'last';

/** The session a name means: a log file's path, an exact id, else a unique prefix; the latest when none is named, or `last`. */
export function pickSession(logs: LogRef[], wanted: string | undefined, dir: string): LogRef | string {
  if (wanted === undefined || wanted === NEWEST) return logs.at(-1) ?? `no sessions in '${dir}'`;
  if (looksLikePath(wanted)) {
    const file = resolve(wanted);
    const listed = logs.find((l) => l.file === file);
    if (listed !== undefined) return listed;
    try {
      return logRef(file);
    } catch (error) {
      return `cannot read '${printable(wanted)}': ${describe(error)}`;
    }
  }
  const exact = logs.find((l) => l.sessionId === wanted);
  if (exact !== undefined) return exact;
  const prefixed = logs.filter((l) => l.sessionId.startsWith(wanted));
  if (prefixed.length === 1) return prefixed[0]!;
  return prefixed.length === 0
    ? `no session '${printable(wanted)}' in '${dir}'`
    : `'${printable(wanted)}' matches ${prefixed.length} sessions; give more of the id`;
}

/**
 * A view's first line: `text` and the log file it read, on one line when it
 * fits the width, else the file on a line of its own (cut in its middle if
 * even that is too long: the end names the session).
 */
export function titleLine(text: string, file: string, width: number | null): string {
  // The text names a server and a session as their records say: written out, as every cell is.
  const title = printable(text);
  const one = `${title}  ${file}`;
  if (width === null || one.length <= width) return `${one}\n`;
  return `${title}\n  ${clipMiddle(file, width - 2)}\n`;
}
