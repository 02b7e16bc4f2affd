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
    if (starts[mid]! <= offset) lo = mid; else hi = mid - 1;
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
    if (g !== undefined && from <= g.to + 1) { g.to = Math.max(g.to, to); g.edits.push(e); } else groups.push({ from, to, edits: [e] });
  }
  let out = `--- a${path.startsWith('/') ? '' : '/'}${path}\n+++ b${path.startsWith('/') ? '' : '/'}${path}\n`;
  let shift = 0;
  for (const g of groups) {
    const start = starts[g.from]!;
    const end = g.to + 1 < starts.length ? starts[g.to + 1]! : text.length;
    const before = lines(text.slice(start, end));
    const after = lines(applyEdits(text.slice(start, end), g.edits.map((e) => ({ ...e, offset: e.offset - start }))));
    // Common lines at both ends are context; the middle is what changed.
    let head = 0;
    while (head < before.length && head < after.length && before[head] === after[head]) head++;
    let tail = 0;
    while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) tail++;
    out += `@@ -${g.from + 1},${before.length} +${g.from + 1 + shift},${after.length} @@\n`;
    out += before.slice(0, head).map((l) => ` ${l}\n`).join('');
    out += before.slice(head, before.length - tail).map((l) => `-${l}\n`).join('');
    out += after.slice(head, after.length - tail).map((l) => `+${l}\n`).join('');
    out += before.slice(before.length - tail).map((l) => ` ${l}\n`).join('');
    shift += after.length - before.length;
  }
  return out;
}
