/**
 * Text for people: aligned tables, times and durations. Record content came
 * from a child process and a client, so control characters are escaped before
 * they reach a terminal (an argument holding ESC sequences must not repaint it).
 */

/** Columns padded to their widest cell, two spaces apart, one row per line. */
export function table(headers: string[], rows: string[][]): string {
  const cells = [headers, ...rows].map((row) => row.map(printable));
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells.map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n') + '\n';
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
