/**
 * Text for people: aligned tables, times and durations. Record content came
 * from a child process and a client, so control characters are escaped before
 * they reach a terminal (an argument holding ESC sequences must not repaint it).
 */
import { writeOut } from '../mask/escape.js';
import { clip, clipMiddle } from '../base/values.js';

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
  return row
    .map((cell, i) => cell.padEnd(widths[i] ?? 0))
    .join('  ')
    .trimEnd();
}

/** How a column gives way on a narrow terminal. */
export interface Column {
  header: string;
  /**
   * How its cells are cut to fit: `middle` keeps both ends (a command's end
   * names the server's script), `end` keeps the start, `year` drops a
   * date's `YYYY-`. Absent: never narrower than its widest cell.
   */
  clip?: 'middle' | 'end' | 'year';
  /** Narrowest it may be cut to (default 8). */
  min?: number;
  /** Cut to this first, before any column is cut to its `min` (default: `min`). */
  soft?: number;
  /** Columns that may be cut are cut in this order (lowest first; default 0). */
  shrink?: number;
  /** Left out when the table cannot fit otherwise, lowest first; absent: always shown. */
  drop?: number;
  /**
   * Cut only as a last resort: after every droppable column is left out and
   * every other column is at its `min` (a call's state, a session's end
   * reason: `timed_out_after_dis…` hides the very word a person looks for).
   */
  last?: boolean;
}

/** Where a table goes: at most `width` columns (null: no limit), and whether it may be coloured. */
export interface TableStyle {
  width: number | null;
  color: boolean;
}

export type Colour = 'red' | 'yellow' | 'green' | 'dim';
const SGR: Record<Colour, string> = { red: '31', yellow: '33', green: '32', dim: '2' };

/** `text` in `colour` (an ANSI SGR sequence) when `on`. */
export function paint(text: string, colour: Colour | undefined, on: boolean): string {
  return on && colour !== undefined && text !== '' ? `\x1b[${SGR[colour]}m${text}\x1b[0m` : text;
}

/** What `add` takes besides the cells: a colour per cell, and lines shown indented under the row. */
export interface RowExtras {
  colours?: Array<Colour | undefined>;
  notes?: string[];
}

/**
 * The width of each column (-1: left out) that fits `natural` widths into
 * `limit`: first cut the columns that may be cut, down to their minimum, then
 * leave out droppable columns one by one and try again; `last` columns are cut
 * only once nothing else is left to cut or leave out.
 */
export function fitColumns(columns: readonly Column[], natural: readonly number[], limit: number | null): number[] {
  if (limit === null) return [...natural];
  const droppable = columns
    .map((c, i) => [c.drop, i] as const)
    .filter(([d]) => d !== undefined)
    .sort((a, b) => a[0]! - b[0]!)
    .map(([, i]) => i);
  const shrinkable = columns
    .map((c, i) => [c.shrink ?? 0, i] as const)
    .filter(([, i]) => columns[i]!.clip !== undefined)
    .sort((a, b) => a[0] - b[0])
    .map(([, i]) => i);
  for (let k = 0; ; k++) {
    const hidden = new Set(droppable.slice(0, k));
    const widths = natural.map((w, i) => (hidden.has(i) ? -1 : w));
    const total = (): number => {
      const shown = widths.filter((w) => w >= 0);
      return shown.reduce((a, b) => a + b, 0) + 2 * Math.max(0, shown.length - 1);
    };
    // Two rounds: every column down to its soft width, then down to its minimum; then `last` columns, when nothing else is left.
    for (const round of ['soft', 'min', 'last'] as const) {
      if (round === 'last' && k < droppable.length) break;
      for (const i of shrinkable) {
        const over = total() - limit;
        if (over <= 0) break;
        if (widths[i]! < 0) continue;
        const c = columns[i]!;
        if ((c.last === true) !== (round === 'last')) continue;
        // A date loses its whole `YYYY-` or nothing.
        if (c.clip === 'year') widths[i] = Math.max(natural[i]! - 5, c.header.length);
        else widths[i] = Math.max(Math.min(natural[i]!, round === 'soft' ? (c.soft ?? c.min ?? 8) : (c.min ?? 8)), widths[i]! - over);
      }
    }
    if (total() <= limit || k >= droppable.length) return widths;
  }
}

/** A cell cut to `width` the way its column is cut (a cell of a column that is not cut is left whole). */
export function cut(text: string, width: number, how: Column['clip']): string {
  if (how === undefined || text.length <= width) return text;
  if (how === 'year') return /^\d{4}-/.test(text) ? text.slice(5) : text; // width 0: always
  if (how === 'middle') return clipMiddle(text, width);
  return clip(text, width);
}

/**
 * A table written as its rows come: the widths are those of the header and
 * the first `window` rows (fitted to the style's width), then fixed, so a
 * long table needs no more memory than its first screenful. A later, wider
 * cell is cut if its column may be cut, else it pushes the rest of its row
 * right and leaves the columns of other rows alone.
 */
export class StreamingTable {
  private pending: Array<{ cells: string[]; extras: RowExtras | undefined }> | null = [];
  private widths: number[] = [];
  /** Columns narrower than their widest cell: a `year` column then drops the year of every row. */
  private cutColumns: boolean[] = [];
  private readonly columns: Column[];

  constructor(
    headers: ReadonlyArray<string | Column>,
    private readonly style: TableStyle = { width: null, color: false },
    private readonly window = 1000,
  ) {
    this.columns = headers.map((h) => (typeof h === 'string' ? { header: h } : h));
  }

  /** Text ready to write after adding this row ('' while the first rows are measured). */
  add(row: string[], extras?: RowExtras): string {
    const cells = row.map(printable);
    if (this.pending === null) return this.render(cells, extras);
    this.pending.push({ cells, extras });
    return this.pending.length >= this.window ? this.release() : '';
  }

  /** Whatever is still held: the header and measured rows of a short table. */
  end(): string {
    return this.pending === null ? '' : this.release();
  }

  private release(): string {
    const headers = this.columns.map((c) => printable(c.header));
    const natural = widthsOf([headers, ...this.pending!.map((p) => p.cells)], this.columns.length);
    this.widths = fitColumns(this.columns, natural, this.style.width);
    this.cutColumns = this.widths.map((w, i) => w >= 0 && w < natural[i]!);
    const rows = this.pending!;
    this.pending = null;
    let text = this.render(
      headers.map((h, i) => clip(h, Math.max(1, this.widths[i]!))),
      undefined,
    );
    for (const r of rows) text += this.render(r.cells, r.extras);
    return text;
  }

  private render(cells: string[], extras: RowExtras | undefined): string {
    const shown: string[] = [];
    const last = this.widths.reduce((at, w, i) => (w >= 0 ? i : at), -1);
    for (let i = 0; i < this.columns.length; i++) {
      const width = this.widths[i]!;
      if (width < 0) continue;
      const how = this.columns[i]!.clip;
      const cell = cut(cells[i] ?? '', how === 'year' && this.cutColumns[i] ? 0 : width, how);
      shown.push(paint(i === last ? cell : cell.padEnd(width), extras?.colours?.[i], this.style.color));
    }
    let text = `${shown.join('  ').trimEnd()}\n`;
    for (const note of extras?.notes ?? []) {
      const line = `    ${printable(note)}`;
      text += `${this.style.width === null ? line : clip(line, this.style.width)}\n`;
    }
    return text;
  }
}

/** Control characters (C0, DEL, C1) as visible `\xNN` escapes, bidi and zero-width characters as `\uXXXX` (escape.ts). */
export function printable(text: string): string {
  return writeOut(text);
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

/** `text`, cut to `max` characters with a trailing `…`. */
export { clip, clipMiddle };

/**
 * `  name   value` with the name padded to `pad`; a value too long for the
 * width goes on lines of its own under the name, wrapped at spaces.
 */
export function fieldLine(name: string, pad: number, value: string, width: number | null): string {
  const text = printable(value);
  if (width === null || 4 + pad + text.length <= width) return `  ${name.padEnd(pad)}  ${text}\n`;
  return `  ${name}\n${wrap(text, width - 6)
    .map((line) => `      ${line}\n`)
    .join('')}`;
}

/** `text` in lines of at most `width` characters, broken after a space where there is one. */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let rest = text;
  while (rest.length > width) {
    const space = rest.lastIndexOf(' ', width);
    const at = space > width / 2 ? space + 1 : width;
    lines.push(rest.slice(0, at).trimEnd());
    rest = rest.slice(at);
  }
  if (rest !== '') lines.push(rest);
  return lines;
}
