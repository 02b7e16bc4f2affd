/**
 * Where hidden characters are rewritten in a frame: string values only, each
 * replaced in place by its visible form (sanitize.ts) as a JSON string, every
 * other byte of the frame kept as it came. A frame with nothing hidden is not
 * touched at all.
 *
 * In a tools/list answer: each tool's `name`, and every `title` and
 * `description` in the tool (its own, its annotations' title, and those in
 * its input and output schemas, which the model reads too). In an initialize
 * or server/discover answer: `instructions`. In a tools/call result (with
 * --sanitize-results): the `text` of each content item of type `text`.
 */
import { scanJson, stringValue, type JsonNode } from '../wire/json-scan.js';
import type { Splice } from '../wire/splice.js';
import { addCounts, noCounts, reveal, type HiddenCounts } from './sanitize.js';

export interface Found {
  splices: Splice[];
  counts: HiddenCounts;
  /** Where hidden characters were found, e.g. `tool "x" description`. */
  places: string[];
}

export function emptyFound(): Found {
  return { splices: [], counts: noCounts(), places: [] };
}

// The bytes that can start a hidden character in JSON text: a raw control (not JSON whitespace), a \u, \b, \f or \r
// escape, or the UTF-8 of C1 controls, zero-width and bidi characters, separators and the BOM (read as latin1: one char a byte).
const MAY_HIDE =
  /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\\[ubfr]|\xc2[\x80-\x9f]|\xe2\x80[\x8b-\x8f\xa8-\xae]|\xe2\x81[\xa0-\xa9]|\xef\xbb\xbf|\xe1\xa0\x8e|\xd8\x9c/;

/** False when the bytes of `node` cannot hold a hidden character (then nothing need be walked). */
export function mayHide(frame: Buffer, node: JsonNode): boolean {
  return MAY_HIDE.test(frame.toString('latin1', node.start, node.end));
}

/** A node whose members (object) or items (array) are recorded: rescanned when the scanner did not record them. */
export function recorded(frame: Buffer, node: JsonNode): JsonNode {
  if ((node.type === 'object' && node.members === undefined) || (node.type === 'array' && node.items === undefined)) {
    const again = scanJson(frame, node.start, node.end);
    if (again.ok) return again.value;
  }
  return node;
}

/** A string node made visible, if it holds hidden characters. */
export function revealString(frame: Buffer, node: JsonNode | undefined, place: string, found: Found): void {
  if (node?.type !== 'string') return;
  const { text, counts } = reveal(stringValue(frame, node));
  if (counts === null) return;
  found.splices.push({ start: node.start, end: node.end, text: Buffer.from(JSON.stringify(text)) });
  addCounts(found.counts, counts);
  found.places.push(place);
}

/** One tool of a tools/list answer: its name, and every title and description in it. */
export function revealTool(frame: Buffer, tool: JsonNode, found: Found): void {
  const node = recorded(frame, tool);
  if (node.type !== 'object') return;
  const nameNode = node.members!.get('name');
  const label = `tool ${nameNode?.type === 'string' ? JSON.stringify(stringValue(frame, nameNode)) : '(unnamed)'}`;
  revealString(frame, nameNode, `${label} name`, found);
  walk(frame, node, label, found, 0);
}

// Schemas nest; a bound keeps a hostile one from costing more than its size allows anyway.
const MAX_WALK_DEPTH = 64;

function walk(frame: Buffer, node: JsonNode, place: string, found: Found, depth: number): void {
  if (depth > MAX_WALK_DEPTH) return;
  const full = recorded(frame, node);
  if (full.type === 'object') {
    for (const [key, value] of full.members!) {
      if ((key === 'description' || key === 'title') && value.type === 'string') revealString(frame, value, `${place} ${key}`, found);
      else if (value.type === 'object' || value.type === 'array') walk(frame, value, `${place}${depth === 0 ? ' ' : '.'}${key}`, found, depth + 1);
    }
  } else if (full.type === 'array') {
    for (const item of full.items!) if (item.type === 'object' || item.type === 'array') walk(frame, item, place, found, depth + 1);
  }
}

/** The text content of a tools/call result. */
export function revealResult(frame: Buffer, result: JsonNode, found: Found): void {
  const content = result.members?.get('content');
  if (content?.type !== 'array') return;
  const items = recorded(frame, content).items ?? [];
  items.forEach((item, i) => {
    const full = recorded(frame, item);
    if (full.type !== 'object') return;
    const type = full.members!.get('type');
    if (type?.type === 'string' && stringValue(frame, type) === 'text') revealString(frame, full.members!.get('text'), `result content[${i}] text`, found);
  });
}
