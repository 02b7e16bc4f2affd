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
import { isScanError, knownUtf8, readMember, scanRootInto, scanValue, stringValue, type JsonNode } from './json-scan.js';
import { IdError, idKey, idJson, isIntegerText, readId, type RequestId } from './request-id.js';

export { RawId, idJson, idKey, peekAnswerId, peekId, type RequestId } from './request-id.js';

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** The code the MCP SDKs use when the connection closes with a request pending. */
export const CONNECTION_CLOSED = -32000;
/** The code the MCP SDKs use for a request that timed out. */
export const REQUEST_TIMEOUT = -32001;

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

/**
 * The root node classifyFrame scans each line into (scanRootInto): no
 * message keeps its root (a request keeps its params, a response its result
 * or error), so one node serves every line. Emptied after each line.
 */
const rootNode: JsonNode = { type: 'null', start: 0, end: 0, members: undefined, items: undefined };

/** Classify one line (`frame` ends with `\n`). */
export function classifyFrame(frame: Buffer, options: ClassifyOptions): Classified {
  try {
    return classifyLine(frame, options);
  } finally {
    rootNode.members = undefined;
    rootNode.items = undefined;
  }
}

function classifyLine(frame: Buffer, options: ClassifyOptions): Classified {
  const end = frame.length - 1;
  // A large frame may have been checked while it arrived (json-prescan.ts).
  if (!knownUtf8(frame) && !isUtf8(frame)) return invalid(PARSE_ERROR, 'not valid UTF-8');
  const root = scanRootInto(frame, 0, end, rootNode);
  if (isScanError(root)) return invalid(PARSE_ERROR, `not JSON: ${root.reason} at byte ${root.offset}`);
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

/**
 * Scratch spans classifyNode reads `id`, `method` and `jsonrpc` into
 * (readMember): those members then never get nodes of their own. Only
 * classifyNode uses them, and it keeps none of them past its return.
 */
const idSpan: JsonNode = { type: 'null', start: 0, end: 0 };
const methodSpan: JsonNode = { type: 'null', start: 0, end: 0 };
const versionSpan: JsonNode = { type: 'null', start: 0, end: 0 };

function classifyNode(frame: Buffer, node: JsonNode): Message | Invalid {
  if (node.type !== 'object') return invalid(INVALID_REQUEST, `a JSON-RPC message must be an object, got ${node.type}`);
  const m = node.members!;
  // Read the id first so that every later rejection can carry it.
  const hasId = readMember(m, 'id', idSpan);
  const idRead = hasId ? readId(frame, idSpan) : undefined;
  const id = idRead === undefined ? null : idRead instanceof IdError ? idRead.echo : idRead;
  const hasMethod = readMember(m, 'method', methodSpan);
  const method = hasMethod && methodSpan.type === 'string' ? stringValue(frame, methodSpan) : null;

  if (!readMember(m, 'jsonrpc', versionSpan)) return failed(INVALID_REQUEST, id, method, 'missing "jsonrpc": "2.0"');
  if (versionSpan.type !== 'string' || stringValue(frame, versionSpan) !== '2.0') return failed(INVALID_REQUEST, id, method, '"jsonrpc" must be exactly "2.0"');
  if (idRead instanceof IdError) return failed(INVALID_REQUEST, id, method, idRead.reason);

  if (hasMethod) {
    // Every member is one of these when the count of those present is the size (no key iterator per line).
    const allowed = 2 + (hasId ? 1 : 0) + (m.has('params') ? 1 : 0);
    if (m.size !== allowed)
      for (const key of m.keys())
        if (!REQUEST_KEYS.has(key)) return failed(INVALID_REQUEST, id, method, `unexpected member ${JSON.stringify(key)} in a request or notification`);
    if (method === null) return failed(INVALID_REQUEST, id, method, '"method" must be a string');
    const params = m.get('params');
    if (params !== undefined && params.type !== 'object') return failed(INVALID_PARAMS, id, method, `"params" must be an object, got ${params.type}`);
    if (!hasId) return { kind: 'notification', frame, method, params };
    return { kind: 'request', frame, id: id!, idKey: keyOf(id!), method, params };
  }

  const allowed = 1 + (hasId ? 1 : 0) + (m.has('result') ? 1 : 0) + (m.has('error') ? 1 : 0);
  if (m.size !== allowed)
    for (const key of m.keys())
      if (!RESPONSE_KEYS.has(key)) return failed(INVALID_REQUEST, id, method, `unexpected member ${JSON.stringify(key)} in a response`);
  if (!hasId) return failed(INVALID_REQUEST, id, method, 'neither "method" nor "id": not a request, notification or response');
  const result = m.get('result');
  const error = m.get('error');
  if (result !== undefined && error !== undefined) return failed(INVALID_REQUEST, id, method, 'a response carries both "result" and "error"');
  if (result === undefined && error === undefined) return failed(INVALID_REQUEST, id, method, 'a response without "result" or "error"');
  if (error !== undefined) {
    const reason = checkErrorObject(frame, error);
    if (reason !== null) return failed(INVALID_REQUEST, id, method, reason);
  }
  // JSON-RPC allows any result; every MCP result is an object.
  if (result !== undefined && result.type !== 'object') return failed(INVALID_REQUEST, id, method, `"result" must be an object, got ${result.type}`);
  if (id === null) return failed(INVALID_REQUEST, id, method, 'response with id null (matches no request)');
  return { kind: 'response', frame, id, idKey: keyOf(id), isError: error !== undefined, body: (result ?? error)! };
}

/** The last numeric id keyed, and its key: an answer's id is the request's before it, and its key need not be built again. */
let lastNumericId = Number.NaN;
let lastNumericKey = '';

/** `idKey`, remembering the last numeric id's key. */
function keyOf(id: RequestId): string {
  if (typeof id !== 'number') return idKey(id);
  if (id !== lastNumericId) {
    lastNumericKey = idKey(id);
    lastNumericId = id;
  }
  return lastNumericKey;
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

function invalid(code: number, reason: string): Invalid {
  return { kind: 'invalid', code, reason, id: null, method: null };
}

/** A refusal that carries the id and method read so far (a function, not a closure made per line). */
function failed(code: number, id: RequestId | null, method: string | null, reason: string): Invalid {
  return { kind: 'invalid', code, reason, id, method };
}

/**
 * Serialise an error response (a frame mcpguard itself writes). Its `data`
 * always names mcpguard as the source, so a client can tell it from an
 * answer of the server's.
 */
export function errorResponse(id: RequestId | null, code: number, message: string, data?: Record<string, unknown>): Buffer {
  const error = { code, message, data: { source: 'mcpguard', ...data } };
  return Buffer.from(`{"jsonrpc":"2.0","id":${idJson(id)},"error":${JSON.stringify(error)}}\n`);
}

/** Serialise a result response mcpguard itself writes (a card, a refusal, a replaced result); the id keeps its original spelling. */
export function resultResponse(id: RequestId | null, result: unknown): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","id":${idJson(id)},"result":${JSON.stringify(result)}}\n`);
}

/**
 * Serialise a request mcpguard itself sends (its own tools/list, an approval
 * card by elicitation, a replayed handshake). `params` is JSON text already,
 * or null for none: a caller may splice in bytes it holds (the client's
 * capabilities, the client's initialize params) without parsing them.
 */
export function requestFrame(id: RequestId, method: string, params: string | null = null): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","id":${idJson(id)},"method":${JSON.stringify(method)}${params === null ? '' : `,"params":${params}`}}\n`);
}

/** Serialise a notification mcpguard originates (e.g. a cancellation toward the child). */
export function notification(method: string, params: Record<string, unknown>): Buffer {
  return Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', method, params })}\n`);
}

/** The cancellation mcpguard sends the child for a request it gave up on; the id keeps its original spelling. */
export function cancellation(requestId: RequestId, reason: string): Buffer {
  return Buffer.from(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${idJson(requestId)},"reason":${JSON.stringify(reason)}}}\n`);
}

/** The span memberString, memberId and memberType read a member into (none keeps it). */
const memberSpan: JsonNode = { type: 'null', start: 0, end: 0 };

/** Read a member of an object node as a string, if it is one. */
export function memberString(frame: Buffer, node: JsonNode | undefined, key: string): string | undefined {
  const members = node?.members;
  if (members === undefined || !readMember(members, key, memberSpan)) return undefined;
  return memberSpan.type === 'string' ? stringValue(frame, memberSpan) : undefined;
}

/** Read a member of an object node as a request id, if it is a valid one. */
export function memberId(frame: Buffer, node: JsonNode | undefined, key: string): RequestId | undefined {
  const members = node?.members;
  if (members === undefined || !readMember(members, key, memberSpan)) return undefined;
  const id = readId(frame, memberSpan);
  return id instanceof IdError ? undefined : id;
}

/** The type of a recorded member of an object node (undefined: no such member, or members not recorded). */
export function memberType(node: JsonNode | undefined, key: string): JsonNode['type'] | undefined {
  const members = node?.members;
  if (members === undefined || !readMember(members, key, memberSpan)) return undefined;
  return memberSpan.type;
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
  const rescanned = scanValue(frame, node.start, node.end);
  if (isScanError(rescanned)) return null;
  // Kept on the node: the era, the shape check and the records may each ask for the same object.
  node.members = rescanned.members;
  return node;
}
