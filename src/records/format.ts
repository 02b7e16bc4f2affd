/**
 * Text for people: aligned tables, times and durations. Record content came
 * from a child process and a client, so control characters are escaped before
 * they reach a terminal (an argument holding ESC sequences must not repaint it).
 */

/** Columns padded to their widest cell, two spaces apart, one row per line. */
export function table(headers: string[], rows: string[][]): string {
  const cells = [headers, ...rows].map((row) => row.map(printable));
  const widths = widthsOf(cells, headers.length);
  return cells.map((row) => layout(row, widths)).join('\n') + '\n';
}

// A loop, not Math.max(...column): spreading 100,000 rows into one call overflows the stack.
function widthsOf(cells: string[][], columns: number): number[] {
  const widths = new Array<number>(columns).fill(0);
  for (const row of cells) {
    for (let i = 0; i < columns; i++) widths[i] = Math.max(widths[i]!, row[i]?.length ?? 0);
  }
  return widths;
}

function layout(row: string[], widths: number[]): string {
  return row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join('  ').trimEnd();
}

/**
 * A table written as its rows come: the widths are those of the header and
 * the first `window` rows, then fixed, so a long table needs no more memory
 * than its first screenful. A later, wider cell pushes the rest of its row
 * right and leaves the columns of other rows alone.
 */
export class StreamingTable {
  private pending: string[][] | null = [];
  private widths: number[] = [];

  constructor(private readonly headers: string[], private readonly window = 1000) {}

  /** Text ready to write after adding this row ('' while the first rows are measured). */
  add(row: string[]): string {
    const cells = row.map(printable);
    if (this.pending === null) return `${layout(cells, this.widths)}\n`;
    this.pending.push(cells);
    return this.pending.length >= this.window ? this.release() : '';
  }

  /** Whatever is still held: the header and measured rows of a short table. */
  end(): string {
    return this.pending === null ? '' : this.release();
  }

  private release(): string {
    const cells = [this.headers.map(printable), ...this.pending!];
    this.widths = widthsOf(cells, this.headers.length);
    this.pending = null;
    return cells.map((row) => `${layout(row, this.widths)}\n`).join('');
  }
}

/** Control characters (C0, DEL, C1) as visible `\xNN` escapes. */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** `12ms`, `3.40s`, `2m05s`, `1h02m`; `-` when unknown. */
export function formatDuration(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
}

/** `2026-11-29 11:22:33Z` (UTC, to the second); `-` when unknown. */
export function formatDate(iso: string | null): string {
  return iso === null ? '-' : iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

/** `11:22:33.123` (UTC) from an ISO time; `-` when unknown. */
export function formatClock(iso: string | null): string {
  return iso === null ? '-' : (/T(\d\d:\d\d:\d\d(\.\d+)?)/.exec(iso)?.[1] ?? iso);
}

/** `text`, cut to `max` characters with a trailing `…`. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
