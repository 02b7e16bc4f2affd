/**
 * Request ids: read from a scanned line, keyed for the call table, and
 * written back exactly as the client wrote them. Also reads the id from the
 * first bytes of a line that could not be classified whole, so that even a
 * refusal of a broken line tells the client which request it was.
 */
import { isUtf8 } from 'node:buffer';
import { scanJson, stringValue, type JsonNode } from './json-scan.js';

/**
 * A request id whose original spelling must be kept because no JS value
 * prints back to it: a string written with escapes (`"\u0061"`), `-0`, or
 * an integer beyond ±2^53−1 (which a JS number would round). mcpguard routes
 * by `key` and answers with `text`, the client's own bytes; records and
 * messages see `value` (a big integer as its decimal digits, a string).
 */
export class RawId {
  constructor(
    /** The id's bytes as the client wrote them (valid JSON). */
    readonly text: string,
    /** The in-flight key: the decoded string, or the integer's digits. */
    readonly key: string,
    readonly value: string | number,
  ) {}

  toJSON(): string | number {
    return this.value;
  }
}

export type RequestId = string | number | RawId;

/** A request id, or why it is not one (with what to answer the refusal with). */
export function readId(frame: Buffer, node: JsonNode): RequestId | IdError {
  if (node.type === 'string') {
    const value = stringValue(frame, node);
    for (let i = node.start + 1; i < node.end - 1; i++) {
      if (frame[i] === BACKSLASH) return new RawId(frame.toString('utf8', node.start, node.end), `s${value}`, value);
    }
    return value;
  }
  if (node.type === 'number') {
    const small = shortInteger(frame, node.start, node.end);
    if (small !== undefined) return small === 0 && frame[node.start] === 0x2d ? new RawId('-0', 'n0', 0) : small;
    // Refused below, but the refusal carries the id as written, so the client can tell which request it was.
    const text = frame.toString('latin1', node.start, node.end);
    const echo = new RawId(text, `n${text}`, text);
    if (!isIntegerText(frame, node)) return new IdError('"id" must be a string or an integer written without fraction or exponent', echo);
    const value = Number(text);
    // A JS peer (the SDKs) would round it, so no request could be matched to its answer.
    if (!Number.isSafeInteger(value)) return new IdError('"id" integer is outside the exactly representable range (±2^53−1)', echo);
    return value;
  }
  return new IdError(`"id" must be a string or an integer, got ${node.type}`);
}

const BACKSLASH = 0x5c;

export class IdError {
  constructor(
    readonly reason: string,
    /** What the refusal answers with: a number the client wrote, as written; null for ids of other types. */
    readonly echo: RawId | null = null,
  ) {}
}

/**
 * The value of a scanned JSON number written as at most 15 digits (an
 * optional minus, no fraction or exponent), or undefined: such a number is
 * always exact, so ids like these need no decoding into text and back.
 */
function shortInteger(frame: Buffer, start: number, end: number): number | undefined {
  let i = start;
  const negative = frame[i] === 0x2d;
  if (negative) i++;
  if (end - i > 15) return undefined;
  let value = 0;
  for (; i < end; i++) {
    const digit = frame[i]! - 0x30;
    if (digit < 0 || digit > 9) return undefined;
    value = value * 10 + digit;
  }
  return negative ? 0 - value : value; // `-0` is 0 here; readId keeps its spelling
}

export function isIntegerText(frame: Buffer, node: JsonNode): boolean {
  for (let i = node.start; i < node.end; i++) {
    const c = frame[i]!;
    if (c === 0x2e || c === 0x65 || c === 0x45) return false;
  }
  return true;
}

/** Canonical in-flight key of an id: `1` and `"1"` are different requests; `"a"` and `"\u0061"` are the same. */
export function idKey(id: RequestId): string {
  return typeof id === 'string' ? `s${id}` : typeof id === 'number' ? `n${id}` : id.key;
}

/** The id as JSON text: the client's own bytes for a RawId. */
export function idJson(id: RequestId | null): string {
  return id instanceof RawId ? id.text : JSON.stringify(id);
}

/**
 * The top-level `"id"` of a line that could not be classified whole (too
 * long, cut off, or broken later on), read from its first bytes: so the
 * client learns which request failed. Walks members from the start while it
 * can read them with certainty; null if no complete `id` came first, if it
 * is not a string or number, or if a second `id` follows it.
 */
export function peekId(bytes: Buffer): RequestId | null {
  return peek(bytes, false);
}

/**
 * `peekId` for a line from the server: the id only if none of the members
 * read before the line's readable start ran out was `"method"` (a request or
 * notification, whose id is not an answer's). Whatever comes after that point
 * is unknown, so a request that puts its method last reads as an answer:
 * the relay then ends the client's call with that id with an error, which
 * the server could have done anyway by answering it.
 */
export function peekAnswerId(bytes: Buffer): RequestId | null {
  return peek(bytes, true);
}

function peek(bytes: Buffer, answersOnly: boolean): RequestId | null {
  const end = bytes.length;
  let found: RequestId | null = null;
  let i = skipWs(bytes, 0, end);
  if (bytes[i] !== 0x7b) return null;
  i++;
  for (;;) {
    i = skipWs(bytes, i, end);
    if (bytes[i] !== 0x22) return found;
    const keyEnd = stringEnd(bytes, i, end);
    if (keyEnd < 0) return found;
    const scannedKey = scanJson(bytes, i, keyEnd);
    if (!scannedKey.ok || !isUtf8(bytes.subarray(i, keyEnd))) return found;
    const key = stringValue(bytes, scannedKey.value);
    if (answersOnly && key === 'method') return null;
    const isId = key === 'id';
    // A second "id" makes the line ambiguous: two parsers could pick different ones.
    if (isId && found !== null) return null;
    i = skipWs(bytes, keyEnd, end);
    if (bytes[i] !== 0x3a) return found;
    const valueStart = skipWs(bytes, i + 1, end);
    const valueEnd = valueEndAt(bytes, valueStart, end);
    if (valueEnd < 0) return found;
    if (isId) {
      const scanned = scanJson(bytes, valueStart, valueEnd);
      if (!scanned.ok || !isUtf8(bytes.subarray(valueStart, valueEnd))) return null;
      const id = readId(bytes, scanned.value);
      found = id instanceof IdError ? id.echo : id;
      if (found === null) return null;
    }
    i = skipWs(bytes, valueEnd, end);
    if (bytes[i] !== 0x2c) return found;
    i++;
  }
}

function skipWs(bytes: Buffer, i: number, end: number): number {
  while (i < end && (bytes[i] === 0x20 || bytes[i] === 0x09 || bytes[i] === 0x0a || bytes[i] === 0x0d)) i++;
  return i;
}

/** The index after the string literal starting at `i`, or -1 if it does not end within `end`. */
function stringEnd(bytes: Buffer, i: number, end: number): number {
  for (let j = i + 1; j < end; j++) {
    if (bytes[j] === BACKSLASH) j++;
    else if (bytes[j] === 0x22) return j + 1;
  }
  return -1;
}

/**
 * The index after the JSON value starting at `i` (not validated: only its
 * extent), or -1 if it does not end within `end`. A number or literal must be
 * followed by a byte that ends it, or it may continue past what we have.
 */
function valueEndAt(bytes: Buffer, i: number, end: number): number {
  if (i >= end) return -1;
  const c = bytes[i]!;
  if (c === 0x22) return stringEnd(bytes, i, end);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    for (let j = i; j < end; j++) {
      const b = bytes[j]!;
      if (b === 0x22) {
        j = stringEnd(bytes, j, end) - 1;
        if (j < 0) return -1;
      } else if (b === 0x7b || b === 0x5b) depth++;
      else if (b === 0x7d || b === 0x5d) {
        if (--depth === 0) return j + 1;
      }
    }
    return -1;
  }
  let j = i;
  while (j < end && /[-+.0-9a-zA-Z]/.test(String.fromCharCode(bytes[j]!))) j++;
  return j < end && j > i ? j : -1;
}
