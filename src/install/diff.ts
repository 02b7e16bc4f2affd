/**
 * The unified diff `--dry-run` prints: built from the edits themselves (they
 * are few and small), so a 2 MB file costs no line-by-line comparison.
 */
import { applyEdits, type Edit } from './wrap.js';

const CONTEXT = 3;

/** Line starts of `text`: index i is where line i begins. */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function lineOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

const lines = (text: string): string[] => (text === '' ? [] : (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n'));

/** `--- a/PATH`, `+++ b/PATH` and one hunk per group of nearby edits. */
export function unifiedDiff(path: string, text: string, edits: readonly Edit[]): string {
  const starts = lineStarts(text);
  const last = text.endsWith('\n') ? starts.length - 2 : starts.length - 1;
  const sorted = [...edits].sort((a, b) => a.offset - b.offset);
  const groups: { from: number; to: number; edits: Edit[] }[] = [];
  for (const e of sorted) {
    const from = Math.max(0, lineOf(starts, e.offset) - CONTEXT);
    const to = Math.min(last, lineOf(starts, e.offset + e.length) + CONTEXT);
    const g = groups[groups.length - 1];
    if (g !== undefined && from <= g.to + 1) {
      g.to = Math.max(g.to, to);
      g.edits.push(e);
    } else groups.push({ from, to, edits: [e] });
  }
  let out = `--- a${path.startsWith('/') ? '' : '/'}${path}\n+++ b${path.startsWith('/') ? '' : '/'}${path}\n`;
  let shift = 0;
  for (const g of groups) {
    const start = starts[g.from]!;
    const end = g.to + 1 < starts.length ? starts[g.to + 1]! : text.length;
    const before = lines(text.slice(start, end));
    const after = lines(
      applyEdits(
        text.slice(start, end),
        g.edits.map((e) => ({ ...e, offset: e.offset - start })),
      ),
    );
    out += `@@ -${g.from + 1},${before.length} +${g.from + 1 + shift},${after.length} @@\n${hunk(before, after)}`;
    shift += after.length - before.length;
  }
  return out;
}

/** The lines of one hunk: a longest common subsequence is context, the rest removed or added. */
function hunk(before: string[], after: string[]): string {
  const n = before.length;
  const m = after.length;
  // A hunk is a few lines around an edit; a huge one (a minified file is one line, so not that) is shown whole.
  if (n * m > 4_000_000) return [...before.map((l) => `-${l}\n`), ...after.map((l) => `+${l}\n`)].join('');
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--) lcs[i]![j] = before[i] === after[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  let out = '';
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && before[i] === after[j]) {
      out += ` ${before[i++]}\n`;
      j++;
    } else if (i < n && (j >= m || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) out += `-${before[i++]}\n`;
    else out += `+${after[j++]}\n`;
  }
  return out;
}
