/**
 * MCP method shapes: after a line is known to be JSON-RPC, the params of the
 * client's MCP methods are checked against the schema of the session's era
 * (typed checks over the scanned nodes: no values are built). A request that
 * fails is refused with -32602 and never reaches the server. Methods MCP does
 * not define (extensions) pass as they are.
 *
 * Only what the schemas require is checked, never more: a member MCP does not
 * name is allowed (schemas are open), a member it names must have its type.
 */
import { readMember, stringValue, type JsonNode, type MemberMap } from '../wire/json-scan.js';
import { membersOf } from '../wire/jsonrpc.js';
import { IdError, readId } from '../wire/request-id.js';

type Members = MemberMap;
const EMPTY: Members = new Map();

/** The reason a client request or notification has the wrong shape for its method, or null. */
export function checkShape(method: string, params: JsonNode | undefined, frame: Buffer, modern: boolean): string | null {
  const m = params?.members ?? EMPTY;
  const meta = m.get('_meta');
  if (meta !== undefined && meta.type !== 'object') return `params._meta must be an object, got ${meta.type}`;
  if (modern && meta !== undefined) {
    const problem = checkModernMeta(frame, meta);
    if (problem !== null) return problem;
  }
  switch (method) {
    case 'tools/call':
      return required(m, 'name', 'string') ?? optional(m, 'arguments', 'object') ?? (modern ? inputResponse(m) : optional(m, 'task', 'object'));
    case 'prompts/get':
      return required(m, 'name', 'string') ?? promptArguments(frame, m.get('arguments')) ?? (modern ? inputResponse(m) : null);
    case 'resources/read':
      return required(m, 'uri', 'string') ?? (modern ? inputResponse(m) : null);
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return required(m, 'uri', 'string');
    case 'tools/list':
    case 'prompts/list':
    case 'resources/list':
    case 'resources/templates/list':
      return optional(m, 'cursor', 'string');
    case 'initialize':
      return (
        required(m, 'protocolVersion', 'string') ??
        required(m, 'capabilities', 'object') ??
        required(m, 'clientInfo', 'object') ??
        implementation(frame, m.get('clientInfo')!, 'params.clientInfo')
      );
    case 'notifications/cancelled':
      return cancelled(frame, m, modern);
    case 'subscriptions/listen':
      return required(m, 'notifications', 'object');
    case 'completion/complete':
      return required(m, 'ref', 'object') ?? required(m, 'argument', 'object') ?? completionArgument(frame, m.get('argument')!);
    case 'logging/setLevel':
      return required(m, 'level', 'string');
    default:
      return null;
  }
}

/** The span `typeOf` reads a member into (readMember: a scalar member gets no node for a type check). */
const span: JsonNode = { type: 'null', start: 0, end: 0 };

/** The type of member `key`, undefined when there is none. */
function typeOf(m: Members, key: string): JsonNode['type'] | undefined {
  return readMember(m, key, span) ? span.type : undefined;
}

function required(m: Members, key: string, type: JsonNode['type']): string | null {
  const found = typeOf(m, key);
  if (found === undefined) return `params.${key} is required`;
  return found === type ? null : `params.${key} must be ${article(type)}, got ${found}`;
}

function optional(m: Members, key: string, type: JsonNode['type']): string | null {
  const found = typeOf(m, key);
  return found === undefined || found === type ? null : `params.${key} must be ${article(type)}, got ${found}`;
}

/** 2026-07-28 retries carry the client's answers and the server's state back. */
function inputResponse(m: Members): string | null {
  return optional(m, 'inputResponses', 'object') ?? optional(m, 'requestState', 'string');
}

function promptArguments(frame: Buffer, node: JsonNode | undefined): string | null {
  if (node === undefined) return null;
  const args = membersOf(frame, node);
  if (args === null) return `params.arguments must be an object, got ${node.type}`;
  for (const [key, value] of args!.members!) {
    if (value.type !== 'string') return `params.arguments[${JSON.stringify(key)}] must be a string (prompt arguments are strings), got ${value.type}`;
  }
  return null;
}

function implementation(frame: Buffer, node: JsonNode, where: string): string | null {
  const info = membersOf(frame, node)!.members!;
  for (const key of ['name', 'version']) {
    const value = info.get(key);
    if (value?.type !== 'string') return `${where}.${key} must be a string${value === undefined ? '' : `, got ${value.type}`}`;
  }
  return null;
}

function completionArgument(frame: Buffer, node: JsonNode): string | null {
  const arg = membersOf(frame, node)!.members!;
  for (const key of ['name', 'value']) {
    const value = arg.get(key);
    if (value?.type !== 'string') return `params.argument.${key} must be a string${value === undefined ? '' : `, got ${value.type}`}`;
  }
  return null;
}

/** Required in 2026-07-28 (and before 2025-11-25, which made it optional for tasks): a valid id when present. */
function cancelled(frame: Buffer, m: Members, modern: boolean): string | null {
  const id = m.get('requestId');
  if (id === undefined) return modern ? 'params.requestId is required' : null;
  if (readId(frame, id) instanceof IdError) return 'params.requestId must be a string or an integer';
  return optional(m, 'reason', 'string');
}

const LOG_LEVELS = new Set(['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);

/** The optional 2026-07-28 `_meta` fields with a fixed type (the required ones are the era's check). */
function checkModernMeta(frame: Buffer, meta: JsonNode): string | null {
  const m = membersOf(frame, meta)!.members!;
  const info = m.get('io.modelcontextprotocol/clientInfo');
  if (info !== undefined) {
    if (info.type !== 'object') return `params._meta["io.modelcontextprotocol/clientInfo"] must be an object, got ${info.type}`;
    const problem = implementation(frame, info, 'params._meta["io.modelcontextprotocol/clientInfo"]');
    if (problem !== null) return problem;
  }
  const level = m.get('io.modelcontextprotocol/logLevel');
  if (level !== undefined && (level.type !== 'string' || !LOG_LEVELS.has(stringValue(frame, level)))) {
    return `params._meta["io.modelcontextprotocol/logLevel"] must be one of ${[...LOG_LEVELS].join(', ')}`;
  }
  return null;
}

function article(type: JsonNode['type']): string {
  return type === 'object' || type === 'array' ? `an ${type}` : `a ${type}`;
}
