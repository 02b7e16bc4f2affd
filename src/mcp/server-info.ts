/**
 * The server's own name and version, as it announces them: `serverInfo` in
 * the initialize result (MCP up to 2025-11-25), or
 * `_meta["io.modelcontextprotocol/serverInfo"]` in the server/discover result
 * (2026-07-28). Records name a session after it.
 */
import { membersOf, memberString, type Response } from '../wire/jsonrpc.js';

/** What a server says it is, and where it said so. */
export interface ServerInfo {
  name: string;
  version: string | null;
  /** The method whose result carried it. */
  from: string;
}

const META_KEY = 'io.modelcontextprotocol/serverInfo';
/** Longer names are cut: a name is a label for people, not a place for a server to put a megabyte. */
const MAX_NAME = 200;

/**
 * The server info in the answer to initialize or server/discover, or null.
 * Other results may carry it too (2026-07-28), but reading them would cost a
 * scan of every result, and every session starts with one of these two.
 */
export function serverInfoOf(method: string | null, response: Response): ServerInfo | null {
  if (response.isError || (method !== 'initialize' && method !== 'server/discover')) return null;
  const frame = response.frame;
  const result = membersOf(frame, response.body);
  if (result === null || result === undefined) return null;
  let info = method === 'initialize' ? membersOf(frame, result.members?.get('serverInfo')) : undefined;
  if (info === null || info === undefined) {
    const meta = membersOf(frame, result.members?.get('_meta'));
    info = meta === null || meta === undefined ? undefined : membersOf(frame, meta.members?.get(META_KEY));
  }
  if (info === null || info === undefined) return null;
  const name = memberString(frame, info, 'name');
  if (name === undefined || name === '') return null;
  const version = memberString(frame, info, 'version');
  return { name: name.slice(0, MAX_NAME), version: version === undefined ? null : version.slice(0, MAX_NAME), from: method ?? 'unknown' };
}
