/**
 * What changed between a pinned tool definition and the one listed now, in
 * words a person can check on an approval card: the description as a word
 * diff (`[-old-]{+new+}`), the schema paths (JSON Pointers) added, removed or
 * changed, the annotations and the title changed.
 */
import { canonical } from '../records/canonical.js';
import type { ToolDefinition } from './definition.js';
import { isObject } from '../base/values.js';

export interface ToolDiff {
  title: { before: unknown; after: unknown } | null;
  /** The description as a word diff, or null when it is unchanged. */
  description: string | null;
  inputSchema: PathDiff | null;
  outputSchema: PathDiff | null;
  /** Annotation keys whose values changed (added and removed included). */
  annotations: Array<{ key: string; before: unknown; after: unknown }>;
}

export interface PathDiff {
  added: string[];
  removed: string[];
  changed: string[];
}

export function diffTool(before: ToolDefinition, after: ToolDefinition): ToolDiff {
  return {
    title: same(before.title, after.title) ? null : { before: before.title, after: after.title },
    description: same(before.description, after.description) ? null : wordDiff(textOf(before.description), textOf(after.description)),
    inputSchema: pathDiff(before.inputSchema, after.inputSchema),
    outputSchema: pathDiff(before.outputSchema, after.outputSchema),
    annotations: annotationDiff(before.annotations, after.annotations),
  };
}

/** The diff as lines for a card, a diagnostic or `mcpguard pins diff`. */
export function diffLines(diff: ToolDiff, maxPaths = 20): string[] {
  const lines: string[] = [];
  if (diff.title !== null) lines.push(`title: ${show(diff.title.before)} -> ${show(diff.title.after)}`);
  if (diff.description !== null) lines.push(`description: ${diff.description}`);
  for (const key of ['inputSchema', 'outputSchema'] as const) {
    const d = diff[key];
    if (d === null) continue;
    for (const [what, paths] of [
      ['added', d.added],
      ['removed', d.removed],
      ['changed', d.changed],
    ] as const) {
      if (paths.length === 0) continue;
      const shown = paths.slice(0, maxPaths).join(', ');
      lines.push(`${key} paths ${what}: ${shown}${paths.length > maxPaths ? ` (and ${paths.length - maxPaths} more)` : ''}`);
    }
  }
  for (const a of diff.annotations) lines.push(`annotations.${a.key}: ${show(a.before)} -> ${show(a.after)}`);
  if (lines.length === 0) lines.push('the definition changed in member order or encoding only');
  return lines;
}

function same(a: unknown, b: unknown): boolean {
  if (a === undefined || b === undefined) return a === b;
  return canonical(a) === canonical(b);
}

function show(value: unknown): string {
  return value === undefined ? '(none)' : JSON.stringify(value);
}

function textOf(value: unknown): string {
  return value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
}

function annotationDiff(before: unknown, after: unknown): ToolDiff['annotations'] {
  const a = isObject(before) ? before : {};
  const b = isObject(after) ? after : {};
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.filter((k) => !same(a[k], b[k])).map((key) => ({ key, before: a[key], after: b[key] }));
}

/** Leaf paths of two JSON values compared: what only one has, and where both have a different value. */
function pathDiff(before: unknown, after: unknown): PathDiff | null {
  if (same(before, after)) return null;
  const a = leaves(before);
  const b = leaves(after);
  const diff: PathDiff = { added: [], removed: [], changed: [] };
  for (const [path, value] of b) {
    if (!a.has(path)) diff.added.push(path);
    else if (a.get(path) !== value) diff.changed.push(path);
  }
  for (const path of a.keys()) if (!b.has(path)) diff.removed.push(path);
  return diff;
}

/** Each leaf (scalar, empty object or array) by its JSON Pointer, as canonical text. */
function leaves(value: unknown, path = '', out = new Map<string, string>()): Map<string, string> {
  if (value === undefined) return out;
  if (Array.isArray(value) && value.length > 0) for (const [i, v] of value.entries()) leaves(v, `${path}/${i}`, out);
  else if (isObject(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) leaves(v, `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`, out);
  } else out.set(path === '' ? '/' : path, canonical(value));
  return out;
}

/** Most words compared one by one; longer texts are shown whole, before and after. */
const MAX_WORDS = 2000;

/** A word diff: unchanged words as they are, removed ones in [-…-], added ones in {+…+}. */
export function wordDiff(before: string, after: string): string {
  const a = before.split(/(\s+)/);
  const b = after.split(/(\s+)/);
  if (a.length > MAX_WORDS || b.length > MAX_WORDS) return `[-${before}-]{+${after}+}`;
  // Longest common subsequence table, from the end.
  const rows = a.length + 1;
  const cols = b.length + 1;
  const lcs = new Uint16Array(rows * cols);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * cols + j] = a[i] === b[j] ? lcs[(i + 1) * cols + j + 1]! + 1 : Math.max(lcs[(i + 1) * cols + j]!, lcs[i * cols + j + 1]!);
    }
  }
  const parts: string[] = [];
  let removed: string[] = [];
  let added: string[] = [];
  const flush = (): void => {
    if (removed.join('').trim() !== '') parts.push(`[-${removed.join('')}-]`);
    if (added.join('').trim() !== '') parts.push(`{+${added.join('')}+}`);
    removed = [];
    added = [];
  };
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      flush();
      parts.push(a[i]!);
      i++;
      j++;
    } else if (j < b.length && (i === a.length || lcs[i * cols + j + 1]! >= lcs[(i + 1) * cols + j]!)) added.push(b[j++]!);
    else removed.push(a[i++]!);
  }
  flush();
  return parts.join('');
}
