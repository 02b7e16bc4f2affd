/**
 * A strict, validating JSON scanner over UTF-8 bytes (RFC 8259 grammar, one
 * value per input). It builds no values: it checks the grammar, rejects
 * duplicate keys in every object (two parsers may keep different copies of a
 * duplicated `id` or `method`: a smuggling vector), and records the byte spans
 * of the members near the top, which is all the JSON-RPC shape check needs.
 * Payloads deep inside `params` or `result` are only walked, never copied.
 *
 * The caller must have checked that the bytes are valid UTF-8 (`isUtf8`):
 * the scanner then only has to look at ASCII structure.
 */

import { EMPTY_BUFFER, RECORD_OBJECT_LEVELS, Scanner } from './json-scanner.js';
import { describe, ScanError } from './json-strings.js';
import { decodeString } from './json-strings.js';

export { readMember } from './json-members.js';
export { MAX_DEPTH } from './json-scanner.js';

export type JsonType = 'object' | 'array' | 'string' | 'number' | 'true' | 'false' | 'null';

/** A scanned value: its type and byte span; `members` for recorded objects, `items` for recorded arrays. */
export interface JsonNode {
  type: JsonType;
  start: number;
  end: number;
  members?: MemberMap;
  items?: JsonNode[];
}

/**
 * A recorded object's members in source order: the read side of a Map (a
 * real Map for large objects, smaller containers for small ones: see
 * json-members.ts). Never changed once handed out.
 */
export interface MemberMap {
  readonly size: number;
  get(key: string): JsonNode | undefined;
  has(key: string): boolean;
  keys(): IterableIterator<string>;
  [Symbol.iterator](): IterableIterator<[string, JsonNode]>;
}

export type ScanResult = { ok: true; value: JsonNode } | { ok: false; reason: string; offset: number };

/**
 * The scanner scanJson lends itself between scans (its key-range and member
 * stacks keep their capacity); taken while a scan runs, so that a scan
 * started inside another (none is today) makes its own instead of sharing.
 */
let idleScanner: Scanner | undefined;

/** Scan `buf[start, end)` as exactly one JSON value surrounded by optional whitespace. */
export function scanJson(buf: Buffer, start = 0, end = buf.length): ScanResult {
  const scanned = scanValue(buf, start, end);
  return isScanError(scanned) ? { ok: false, reason: scanned.reason, offset: scanned.offset } : { ok: true, value: scanned };
}

/** Why and where a scan failed (what `scanValue` returns instead of a node). */
export interface ScanFailure {
  readonly reason: string;
  readonly offset: number;
}

/**
 * `scanJson` without the result object around the value: the root node, or
 * the failure (tell them apart with `isScanError`). For callers that only
 * look at the value at once; a small call scans two frames.
 */
export function scanValue(buf: Buffer, start = 0, end = buf.length): JsonNode | ScanFailure {
  return scanLent(buf, start, end, undefined);
}

/**
 * `scanValue` for a caller done with the root node before it scans again
 * (the JSON-RPC classifier: a message keeps its params or result, never the
 * root): the root's type, span, members and items are written into `root`,
 * the caller's own node with all five fields, and `root` is returned.
 *
 * `buf[start, end)` is a whole line without its `\n`, so a CR is whitespace
 * only as the line's last byte (its CRLF). Anywhere else it is refused: a
 * reader with universal newlines (the Python SDK's text stdin) ends the line
 * at a bare CR, and what follows it would be a second message that mcpguard
 * never checked. Inside strings a raw CR is already a control character.
 */
export function scanRootInto(buf: Buffer, start: number, end: number, root: JsonNode): JsonNode | ScanFailure {
  return scanLent(buf, start, end, root);
}

function scanLent(buf: Buffer, start: number, end: number, root: JsonNode | undefined): JsonNode | ScanFailure {
  const scanner = idleScanner ?? new Scanner(EMPTY_BUFFER, 0, undefined);
  idleScanner = undefined;
  scanner.reset(buf, end, end - start >= HINTED_MIN_BYTES ? HINTS.get(buf) : undefined);
  if (root !== undefined) scanner.crOnlyAt = end - 1;
  try {
    return scanWith(scanner, buf, start, end, root);
  } finally {
    scanner.release();
    idleScanner = scanner;
  }
}

function scanWith(scanner: Scanner, buf: Buffer, start: number, end: number, root: JsonNode | undefined): JsonNode | ScanError {
  try {
    let pos = scanner.skipWs(start);
    if (pos >= end) return new ScanError('empty line, expected a JSON value', pos);
    const value = root === undefined ? scanner.value(pos, 0, RECORD_OBJECT_LEVELS) : scanner.rootInto(pos, root);
    pos = scanner.skipWs(value.end);
    if (pos < end) return new ScanError(`unexpected ${describe(buf[pos]!)} after the JSON value`, pos);
    return value;
  } catch (error) {
    if (error instanceof ScanError) return error;
    throw error;
  }
}

/**
 * Long strings already found valid while their frame was still arriving
 * (json-prescan.ts): `starts[k]` is a string's opening quote, `ends[k]` the
 * offset past its closing quote. Sorted by start. Only string *values* are
 * looked up (never keys, whose escapes the duplicate check needs to know). Whether a string starting at a given offset is valid, and where it
 * ends, depends on the bytes from that offset on only, so a hint is right
 * whatever the rest of the frame holds; a scan that never reaches a hinted
 * offset simply does not use it.
 */
export interface ScanHints {
  starts: number[];
  ends: number[];
  /** The whole frame was found to be valid UTF-8 (its newline included) as it arrived. */
  utf8: boolean;
}

/** Frames this short are never looked up (the lookup would cost more than it saves). */
export const HINTED_MIN_BYTES = 16 * 1024;
const HINTS = new WeakMap<Buffer, ScanHints>();

/**
 * Hints for `frame` (the exact Buffer object later scanned), valid for its
 * bytes as they are now: the frame must not change afterwards.
 */
export function attachScanHints(frame: Buffer, hints: ScanHints): void {
  if ((hints.starts.length > 0 || hints.utf8) && frame.length >= HINTED_MIN_BYTES) HINTS.set(frame, hints);
}

/** True when `frame` was found valid UTF-8 while it arrived (false: not known, check it). */
export function knownUtf8(frame: Buffer): boolean {
  return frame.length >= HINTED_MIN_BYTES && HINTS.get(frame)?.utf8 === true;
}

/**
 * `string()`'s loop over a string body that may not have fully arrived:
 * `buf[i, end)` is what there is so far. Returns the offset past the closing
 * quote, or `-(k + 1)` where `k` is the offset to resume from once more bytes
 * are there (the end, or an escape not yet whole). Throws (a ScanError) where
 * `string()` would fail.
 * Bytes used are always inside [i, end), so a verdict never depends on bytes
 * that have not arrived.
 */
export class StringResume {
  private readonly scanner: Scanner;
  constructor(buf: Buffer, end: number) {
    this.scanner = new Scanner(buf, end, undefined);
  }

  /** See the class comment. */
  resume(i: number): number {
    return this.scanner.resumeString(i);
  }
}

/** True for the errors `StringResume.resume` throws (a string that can never be valid), and for `scanValue`'s failures. */
export function isScanError(error: unknown): error is ScanFailure {
  return error instanceof ScanError;
}

/** Decode a scanned string node. */
export function stringValue(buf: Buffer, node: JsonNode): string {
  return decodeString(buf, node.start, node.end);
}

/** The source text of a scanned node. */
export function nodeText(buf: Buffer, node: JsonNode): string {
  return buf.toString('utf8', node.start, node.end);
}
