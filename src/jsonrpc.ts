/**
 * JSON-RPC 2.0 as mcpguard accepts it on the wire: one line in, one typed
 * message (or a typed rejection) out. Stateless: whether a response matches a
 * request in flight is the call table's job (calls.ts).
 *
 * Deliberately stricter than JSON-RPC in places where two parsers could read
 * the same bytes differently: duplicate keys, members outside the message's
 * shape, ids that are not exact integers in the safe range, invalid UTF-8.
 */
import { isUtf8 } from 'node:buffer';
import { scanJson, stringValue, type JsonNode } from './json-scan.js';

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** The code the MCP SDKs use when the connection closes with a request pending. */
export const CONNECTION_CLOSED = -32000;
/** The code the MCP SDKs use for a request that timed out. */
export const REQUEST_TIMEOUT = -32001;

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

interface Base {
  /** The line's bytes including its trailing `\n`: what is forwarded, never re-serialised. */
  frame: Buffer;
}
export interface Request extends Base {
  kind: 'request';
  id: RequestId;
  /** A canonical key for the id: strings and numbers never collide. */
  idKey: string;
  method: string;
  params: JsonNode | undefined;
}
export interface Notification extends Base {
  kind: 'notification';
  method: string;
  params: JsonNode | undefined;
}
export interface Response extends Base {
  kind: 'response';
  id: RequestId;
  idKey: string;
  isError: boolean;
  /** The `result` or `error` node. */
  body: JsonNode;
}
export interface Batch extends Base {
  kind: 'batch';
  items: Array<Request | Notification | Response>;
}
export interface Invalid {
  kind: 'invalid';
  code: number;
  reason: string;
  /** The request's id when it could be read, else null. */
  id: RequestId | null;
  /** The method when it could be read (for the rejected call's record). */
  method: string | null;
}
export type Message = Request | Notification | Response;
export type Classified = Message | Batch | Invalid;

export interface ClassifyOptions {
  /** Accept JSON arrays (JSON-RPC batches, protocol 2025-03-26 only). */
  allowBatch: boolean;
}

/** Classify one line (`frame` ends with `\n`). */
export function classifyFrame(frame: Buffer, options: ClassifyOptions): Classified {
  const end = frame.length - 1;
  if (!isUtf8(frame)) return invalid(PARSE_ERROR, 'not valid UTF-8');
  const scanned = scanJson(frame, 0, end);
  if (!scanned.ok) return invalid(PARSE_ERROR, `not JSON: ${scanned.reason} at byte ${scanned.offset}`);
  const root = scanned.value;
  if (root.type === 'array') {
    if (!options.allowBatch) return invalid(INVALID_REQUEST, 'batch (JSON array) not allowed; batches exist only in protocol 2025-03-26 (see --allow-batch)');
    const items = root.items!;
    if (items.length === 0) return invalid(INVALID_REQUEST, 'empty batch');
    const messages: Message[] = [];
    for (const [index, item] of items.entries()) {
      const message = classifyNode(frame, item);
      if (message.kind === 'invalid') return { ...message, reason: `batch item ${index}: ${message.reason}`, id: null, method: null };
      messages.push(message);
    }
    return { kind: 'batch', frame, items: messages };
  }
  return classifyNode(frame, root);
}

const REQUEST_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const RESPONSE_KEYS = new Set(['jsonrpc', 'id', 'result', 'error']);

function classifyNode(frame: Buffer, node: JsonNode): Message | Invalid {
  if (node.type !== 'object') return invalid(INVALID_REQUEST, `a JSON-RPC message must be an object, got ${node.type}`);
  const m = node.members!;
  // Read the id first so that every later rejection can carry it.
  const idNode = m.get('id');
  const idRead = idNode === undefined ? undefined : readId(frame, idNode);
  const id = idRead === undefined ? null : idRead instanceof IdError ? idRead.echo : idRead;
  const methodNode = m.get('method');
  const method = methodNode?.type === 'string' ? stringValue(frame, methodNode) : null;
  const fail = (code: number, reason: string): Invalid => ({ kind: 'invalid', code, reason, id, method });

  const version = m.get('jsonrpc');
  if (version === undefined) return fail(INVALID_REQUEST, 'missing "jsonrpc": "2.0"');
  if (version.type !== 'string' || stringValue(frame, version) !== '2.0') return fail(INVALID_REQUEST, '"jsonrpc" must be exactly "2.0"');
  if (idRead instanceof IdError) return fail(INVALID_REQUEST, idRead.reason);

  if (methodNode !== undefined) {
    for (const key of m.keys()) if (!REQUEST_KEYS.has(key)) return fail(INVALID_REQUEST, `unexpected member ${JSON.stringify(key)} in a request or notification`);
    if (method === null) return fail(INVALID_REQUEST, '"method" must be a string');
    const params = m.get('params');
    if (params !== undefined && params.type !== 'object') return fail(INVALID_PARAMS, `"params" must be an object, got ${params.type}`);
    if (idNode === undefined) return { kind: 'notification', frame, method, params };
    return { kind: 'request', frame, id: id!, idKey: idKey(id!), method, params };
  }

  for (const key of m.keys()) if (!RESPONSE_KEYS.has(key)) return fail(INVALID_REQUEST, `unexpected member ${JSON.stringify(key)} in a response`);
  if (idNode === undefined) return fail(INVALID_REQUEST, 'neither "method" nor "id": not a request, notification or response');
  const result = m.get('result');
  const error = m.get('error');
  if (result !== undefined && error !== undefined) return fail(INVALID_REQUEST, 'a response carries both "result" and "error"');
  if (result === undefined && error === undefined) return fail(INVALID_REQUEST, 'a response without "result" or "error"');
  if (error !== undefined) {
    const reason = checkErrorObject(frame, error);
    if (reason !== null) return fail(INVALID_REQUEST, reason);
  }
  // JSON-RPC allows any result; every MCP result is an object.
  if (result !== undefined && result.type !== 'object') return fail(INVALID_REQUEST, `"result" must be an object, got ${result.type}`);
  if (id === null) return fail(INVALID_REQUEST, 'response with id null (matches no request)');
  return { kind: 'response', frame, id, idKey: idKey(id), isError: error !== undefined, body: (result ?? error)! };
}

function checkErrorObject(frame: Buffer, error: JsonNode): string | null {
  if (error.type !== 'object') return '"error" must be an object';
  const code = error.members!.get('code');
  if (code === undefined || code.type !== 'number' || !isIntegerText(frame, code)) return '"error.code" must be an integer';
  if (!Number.isSafeInteger(Number(frame.toString('latin1', code.start, code.end)))) return '"error.code" is outside the exactly representable range (±2^53−1)';
  const message = error.members!.get('message');
  if (message === undefined || message.type !== 'string') return '"error.message" must be a string';
  return null;
}

/** A request id, or why it is not one. */
function readId(frame: Buffer, node: JsonNode): RequestId | IdError {
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

class IdError {
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

/**
 * The top-level `"id"` of a line that could not be classified whole (too
 * long, cut off, or broken later on), read from its first bytes: so the
 * client learns which request failed. Walks members from the start while it
 * can read them with certainty; null if no complete `id` came first, if it
 * is not a string or number, or if a second `id` follows it.
 */
export function peekId(bytes: Buffer): RequestId | null {
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
    const isId = stringValue(bytes, scannedKey.value) === 'id';
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

function isIntegerText(frame: Buffer, node: JsonNode): boolean {
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

function invalid(code: number, reason: string): Invalid {
  return { kind: 'invalid', code, reason, id: null, method: null };
}

/** Serialise an error response (a frame mcpguard itself writes). */
export function errorResponse(id: RequestId | null, code: number, message: string, data?: Record<string, unknown>): Buffer {
  const error = data === undefined ? { code, message } : { code, message, data };
  return Buffer.from(`{"jsonrpc":"2.0","id":${idJson(id)},"error":${JSON.stringify(error)}}\n`);
}

/** Serialise a notification mcpguard originates (e.g. a cancellation toward the child). */
export function notification(method: string, params: Record<string, unknown>): Buffer {
  return Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`);
}

/** The cancellation mcpguard sends the child for a request it gave up on; the id keeps its original spelling. */
export function cancellation(requestId: RequestId, reason: string): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${idJson(requestId)},"reason":${JSON.stringify(reason)}}}\n`);
}

/** Read a member of an object node as a string, if it is one. */
export function memberString(frame: Buffer, node: JsonNode | undefined, key: string): string | undefined {
  const member = node?.members?.get(key);
  return member?.type === 'string' ? stringValue(frame, member) : undefined;
}

/** Read a member of an object node as a request id, if it is a valid one. */
export function memberId(frame: Buffer, node: JsonNode | undefined, key: string): RequestId | undefined {
  const member = node?.members?.get(key);
  if (member === undefined) return undefined;
  const id = readId(frame, member);
  return id instanceof IdError ? undefined : id;
}

/**
 * A copy of a response frame with one entry added under `_meta`: the result's
 * `_meta` for a result, `error.data._meta` for an error. Everything else keeps
 * its original bytes. Null when there is no room that leaves the rest
 * unchanged (the key already exists, `_meta` or `data` is not an object, or a
 * nested `_meta` could not be inspected).
 */
export function withMetaEntry(response: Response, key: string, value: unknown): Buffer | null {
  const { frame, body } = response;
  const entry = `${JSON.stringify(key)}:${JSON.stringify(value)}`;
  let target: JsonNode;
  let text: string;
  if (!response.isError) {
    const meta = membersOf(frame, body.members!.get('_meta'));
    if (meta === undefined) [target, text] = [body, `"_meta":{${entry}}`];
    else if (meta !== null && !meta.members!.has(key)) [target, text] = [meta, entry];
    else return null;
  } else {
    const data = membersOf(frame, body.members!.get('data'));
    if (data === undefined) [target, text] = [body, `"data":{"_meta":{${entry}}}`];
    else if (data !== null && !data.members!.has('_meta')) [target, text] = [data, `"_meta":{${entry}}`];
    else return null;
  }
  const at = target.start + 1;
  const insert = Buffer.from(target.members!.size === 0 ? text : `${text},`);
  return Buffer.concat([frame.subarray(0, at), insert, frame.subarray(at)]);
}

/**
 * An object node with its members, rescanning it if the first scan did not
 * record them (it records only the message's top levels); undefined if there
 * is no node, null if it is not an object.
 */
export function membersOf(frame: Buffer, node: JsonNode | undefined): JsonNode | null | undefined {
  if (node === undefined) return undefined;
  if (node.type !== 'object') return null;
  if (node.members !== undefined) return node;
  const rescanned = scanJson(frame, node.start, node.end);
  return rescanned.ok ? rescanned.value : null;
}
