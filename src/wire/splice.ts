/**
 * The few places the gate changes a frame: it drops its own approval answer
 * from a 2026-07-28 retry before the server sees it, and drops denied tools
 * from a `tools/list` answer (`hide_denied`). Each keeps every other byte as
 * it came: the object or array is rebuilt from the original text of the
 * members or items that stay, and the rest of the frame is untouched.
 */
import type { JsonNode } from './json-scan.js';

export interface Splice {
  start: number;
  end: number;
  text: Buffer;
}

/** Replace `node` (an object with recorded members) by itself without `drop`'s keys. */
export function dropMembers(frame: Buffer, node: JsonNode, drop: ReadonlySet<string>): Splice {
  return rebuildObject(frame, node, (key) => (drop.has(key) ? null : undefined));
}

/**
 * Replace `node` (an object with recorded members) by a copy in which each
 * member is kept as it is (`undefined`), dropped (`null`), or given a new
 * value text (a Buffer), as `change` says.
 */
export function rebuildObject(frame: Buffer, node: JsonNode, change: (key: string, value: JsonNode) => Buffer | null | undefined): Splice {
  const kept: Buffer[] = [];
  let previousEnd = -1;
  for (const [key, value] of node.members!) {
    const keyStart = previousEnd < 0 ? skipWs(frame, node.start + 1) : skipWs(frame, skipWs(frame, previousEnd) + 1);
    previousEnd = value.end;
    const changed = change(key, value);
    if (changed === null) continue;
    kept.push(changed === undefined ? frame.subarray(keyStart, value.end) : Buffer.concat([frame.subarray(keyStart, value.start), changed]));
  }
  return { start: node.start, end: node.end, text: Buffer.concat([Buffer.from('{'), join(kept), Buffer.from('}')]) };
}

/** Apply splices that do not overlap; the frame's other bytes are copied as they are. */
export function applySplices(frame: Buffer, splices: readonly Splice[]): Buffer {
  const sorted = [...splices].sort((a, b) => a.start - b.start);
  const parts: Buffer[] = [];
  let at = 0;
  for (const s of sorted) {
    parts.push(frame.subarray(at, s.start), s.text);
    at = s.end;
  }
  parts.push(frame.subarray(at));
  return Buffer.concat(parts);
}

function join(parts: Buffer[]): Buffer {
  const out: Buffer[] = [];
  parts.forEach((part, i) => {
    if (i > 0) out.push(Buffer.from(','));
    out.push(part);
  });
  return Buffer.concat(out);
}

function skipWs(frame: Buffer, pos: number): number {
  while (pos < frame.length && (frame[pos] === 0x20 || frame[pos] === 0x09 || frame[pos] === 0x0a || frame[pos] === 0x0d)) pos++;
  return pos;
}
