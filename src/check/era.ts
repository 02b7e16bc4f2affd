/**
 * Which era a server speaks, decided the way the SDK v2 client decides it:
 * send `server/discover` (with the `_meta` every modern request carries)
 * before anything else. A DiscoverResult that lists 2026-07-28, or a
 * recognised modern error (-32022 naming the versions it supports), means
 * modern. Any other error, any other result, no answer in time, or the
 * server exiting means legacy; the decision is never keyed to one error code
 * (legacy servers answer -32601, -32602, or nothing at all).
 */
import { scanJson, stringValue, type JsonNode } from '../wire/json-scan.js';
import { membersOf, type Response } from '../wire/jsonrpc.js';
import { describeError, errorCode, member, type Answer, type ConversationIO, type Step } from './exchange.js';
import { MODERN_PROTOCOL_VERSION } from './options.js';

export type Era = 'legacy' | 'modern';

/** How the era was decided: by --protocol-version, or by what the probe got. */
export type DecidedBy = 'option' | 'discover_result' | 'modern_error' | 'discover_error' | 'other_result' | 'no_answer' | 'exited';

export interface EraDecision {
  era: Era;
  decidedBy: DecidedBy;
  /** The same, for a person. */
  how: string;
}

/** The id of server/discover: a string, as the SDK's probe uses, which no numbered request can collide with. */
export const DISCOVER_ID = 'mcpguard-discover';
/** The error a modern server gives for a protocol version it does not speak. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** The `_meta` every request of the modern era must carry: version and capabilities, and who asks. */
export function requestMeta(checkVersion: string): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION,
    // None declared: the check fulfils no input requests (sampling, elicitation, roots).
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'mcpguard-check', version: checkVersion },
  };
}

/** A revision name of the modern era (2026-07-28 or later); they are dates, so they sort as text. */
export function isModernVersion(version: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(version) && version >= MODERN_PROTOCOL_VERSION;
}

/**
 * Decide the era from the probe's step and answer; null when mcpguard was
 * interrupted before there was anything to decide.
 */
export function decideByProbe(step: Step, answer: Answer | null, show: ConversationIO['show']): EraDecision | null {
  if (step.outcome === 'stopped') return null;
  if (answer === null) {
    return step.outcome === 'gone'
      ? { era: 'legacy', decidedBy: 'exited', how: 'the server exited before it answered server/discover' }
      : { era: 'legacy', decidedBy: 'no_answer', how: `server/discover: ${step.detail}` };
  }
  if (answer.isError) {
    const supported = supportedInError(answer);
    if (errorCode(answer) === UNSUPPORTED_PROTOCOL_VERSION && supported?.some(isModernVersion)) {
      return {
        era: 'modern',
        decidedBy: 'modern_error',
        how: `server/discover answered with ${describeError(answer, show)}, supported ${JSON.stringify(supported)}: a modern server`,
      };
    }
    return { era: 'legacy', decidedBy: 'discover_error', how: `server/discover answered with ${describeError(answer, show)}` };
  }
  const versions = stringItems(answer.frame, member(answer.body, 'supportedVersions', 'array'));
  if (versions?.includes(MODERN_PROTOCOL_VERSION)) {
    return { era: 'modern', decidedBy: 'discover_result', how: `server/discover answered with a DiscoverResult listing ${MODERN_PROTOCOL_VERSION}` };
  }
  const why =
    versions === null ? 'no "supportedVersions" list of strings' : `supportedVersions ${JSON.stringify(versions)}, without ${MODERN_PROTOCOL_VERSION}`;
  return {
    era: 'legacy',
    decidedBy: 'other_result',
    how: `server/discover answered with a result that is not a DiscoverResult for ${MODERN_PROTOCOL_VERSION} (${why})`,
  };
}

/** `error.data.supported` of an error answer, when it is a non-empty list of strings. */
export function supportedInError(response: Response): string[] | null {
  const data = membersOf(response.frame, response.body.members?.get('data'));
  const supported = stringItems(response.frame, member(data, 'supported', 'array'));
  return supported !== null && supported.length > 0 ? supported : null;
}

/** The items of an array node when all are strings, else null. */
export function stringItems(frame: Buffer, array: JsonNode | undefined): string[] | null {
  if (array === undefined) return null;
  const scanned = scanJson(frame, array.start, array.end);
  if (!scanned.ok) return null;
  const items = scanned.value.items ?? [];
  return items.every((item) => item.type === 'string') ? items.map((item) => stringValue(frame, item)) : null;
}
