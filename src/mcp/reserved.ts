/**
 * mcpguard's voice on the wire, reserved to mcpguard: the marks a client
 * reads to tell mcpguard's own answers from the server's (docs/eras.md,
 * "mcpguard's own answers"). An error whose `data.source` is "mcpguard" or
 * whose message starts with "mcpguard"; any `_meta` key under `io.mcpguard/`
 * (a refusal, a stderr excerpt); an `input_required` whose `inputRequests`
 * holds a key under `io.mcpguard/` (mcpguard's approval card). A server's
 * answer that carries one would let the server say "mcpguard refused this"
 * after its tool ran, or show a card as mcpguard's; the relay refuses it.
 */
import { membersOf, memberString, type Response } from '../wire/jsonrpc.js';
import type { JsonNode } from '../wire/json-scan.js';

/** The namespace of mcpguard's own `_meta` and `inputRequests` keys. */
export const RESERVED_KEY_PREFIX = 'io.mcpguard/';

/**
 * Which of mcpguard's marks a server's answer carries, in words, or null.
 * Reads only what is there: `_meta`, `inputRequests` and `error.data` are
 * rescanned when present, so an answer without them costs a map lookup or two.
 */
export function reservedMarker(response: Response): string | null {
  const { frame, body } = response;
  const members = body.members!;
  if (!response.isError) {
    return reservedKeyIn(frame, members.get('_meta'), 'result._meta') ?? reservedKeyIn(frame, members.get('inputRequests'), 'result.inputRequests');
  }
  const message = memberString(frame, body, 'message');
  if (message !== undefined && speaksAsMcpguard(message)) return 'error.message starts with "mcpguard"';
  const data = membersOf(frame, members.get('data'));
  if (data === null || data === undefined) return null;
  const source = memberString(frame, data, 'source');
  if (source !== undefined && folded(source).trimEnd() === 'mcpguard') return 'error.data.source is "mcpguard"';
  return reservedKeyIn(frame, data.members!.get('_meta'), 'error.data._meta');
}

/** The first key of an object under mcpguard's namespace (case folded), in words naming `where`, or null. */
function reservedKeyIn(frame: Buffer, node: JsonNode | undefined, where: string): string | null {
  const object = membersOf(frame, node);
  if (object === null || object === undefined) return null;
  for (const key of object.members!.keys()) {
    // The key is the server's: shown cut, and quoted (JSON escapes its control characters).
    if (folded(key).startsWith(RESERVED_KEY_PREFIX)) return `${where} has the key ${JSON.stringify(key.length > 64 ? `${key.slice(0, 64)}…` : key)}`;
  }
  return null;
}

/**
 * True if a text starts with mcpguard's name once what a reader cannot see is
 * set aside (whitespace, control and format characters) and case is folded.
 */
export function speaksAsMcpguard(text: string): boolean {
  return folded(text).startsWith('mcpguard');
}

const UNSEEN_START = /^[\p{White_Space}\p{Cc}\p{Cf}]+/u;

/** The start of a text as a reader sees it: what cannot be seen before it dropped, case folded. */
function folded(text: string): string {
  return text.slice(0, 256).replace(UNSEEN_START, '').toLowerCase();
}
