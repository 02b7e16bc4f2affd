/**
 * The approval card: what a person is shown before a tool call runs. It
 * describes one concrete action at one moment: the server, the tool, and the
 * arguments exactly as they will be sent (their own bytes, secrets masked,
 * clipped to a budget that says what it left out), why it is asked, and the
 * wall-clock time the question expires. Each masked secret is masked alone,
 * never what follows it (the arguments are one line, where the stderr rules
 * would mask a header or PEM block to the end of the line: the rest of the
 * arguments), and the card says how many were masked and what they were. Characters that could hide or
 * reorder text on a screen (bidi controls, zero-width characters, C0/C1
 * controls) are written out as \uXXXX so the person sees what the server
 * will get.
 */
import { createHash } from 'node:crypto';
import { processMasker } from '../mask/mask.js';
import { ONCE_ONLY, SCOPE_FIELD, type Scope } from './grants.js';

/** Most bytes of the arguments a card shows. */
export const CARD_ARGUMENT_BYTES = 2048;
/** Most bytes of one line of a tool's change a card shows. */
export const CARD_CHANGE_LINE_BYTES = 1024;

export interface CardFacts {
  server: string;
  tool: string;
  /** The `arguments` member's own text (or `{}` when absent). */
  argumentsText: string;
  /** Why it is asked: the policy rule, or the default. */
  why: string;
  expiresAt: number;
  /** What changed in the tool since it was pinned (pins), line by line. */
  change?: readonly string[];
}

export interface Card {
  text: string;
  sha256: string;
  bytes: number;
  /** The arguments as the card shows them before clipping: their own text, secrets masked. */
  argumentsText: string;
  /** What was masked in them, in words, in order ("an Authorization header value"). */
  masked: string[];
}

// Bidi controls, zero-width characters, the BOM, C0 (but \n and \t) and C1 controls, line and paragraph separators.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

/** Build the card for one call. */
export function makeCard(facts: CardFacts): Card {
  const { text: argumentsText, masked } = processMasker().oneLine(facts.argumentsText);
  const args = clipBytes(argumentsText, CARD_ARGUMENT_BYTES);
  const text = [
    'mcpguard: allow this tool call?',
    `Server: ${visible(processMasker().text(facts.server))}`,
    `Tool: ${visible(facts.tool)}`,
    `Arguments (exactly as they will be sent${masked.length === 0 ? '' : ', but for the secrets masked'}): ${visible(args)}`,
    ...(masked.length === 0 ? [] : [visible(maskedNote(masked))]),
    `Asked because: ${visible(facts.why)}`,
    ...(facts.change === undefined
      ? []
      : [
          'What changed since the tool was pinned (accepting updates the pin):',
          ...facts.change.map((line) => `  ${visible(clipBytes(line, CARD_CHANGE_LINE_BYTES))}`),
        ]),
    `Expires: ${new Date(facts.expiresAt).toISOString()}`,
  ].join('\n');
  const bytes = Buffer.byteLength(text);
  return { text, sha256: createHash('sha256').update(text).digest('hex'), bytes, argumentsText, masked };
}

/**
 * `2 secrets masked: an Authorization header value, a PEM private key`: mcpguard's
 * own words, from what it masked (a `[REDACTED]` the arguments carried
 * themselves is not counted).
 */
export function maskedNote(masked: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const kind of masked) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  const kinds = [...counts].map(([kind, n]) => (n === 1 ? kind : `${kind} (${n} times)`));
  return `${masked.length} secret${masked.length === 1 ? '' : 's'} masked: ${kinds.join(', ')}`;
}

/** How each scope reads on the card's form. */
const SCOPE_TITLES: Record<Scope, string> = {
  once: 'Once: this call only',
  'session-same-arguments': 'For the rest of this session: this tool, with exactly these arguments',
  'session-tool': 'For the rest of this session: this tool, with any arguments',
};

/**
 * The `elicitation/create` params that show a card: form mode, and when the
 * card offers grants one optional field, `scope`, whose default is `once`.
 * A client that shows only accept/decline, or leaves the field out, answers
 * `once`. Its choices are titled as the client's protocol spells them:
 * `oneOf` with `const`/`title` from 2025-11-25 (`formMode`), `enum` with
 * `enumNames` before.
 */
export function elicitationParams(card: Card, formMode: boolean, offered: readonly Scope[] = ONCE_ONLY): Record<string, unknown> {
  const choices = formMode
    ? { oneOf: offered.map((scope) => ({ const: scope, title: SCOPE_TITLES[scope] })) }
    : { enum: [...offered], enumNames: offered.map((scope) => SCOPE_TITLES[scope]) };
  const scope = { type: 'string', title: 'Allow', description: 'How far this approval reaches; it never outlives this session', ...choices, default: 'once' };
  return {
    ...(formMode ? { mode: 'form' } : {}),
    message: card.text,
    requestedSchema: { type: 'object', properties: offered.length > 1 ? { [SCOPE_FIELD]: scope } : {} },
  };
}

function visible(text: string): string {
  return text.replace(HIDDEN, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function clipBytes(text: string, max: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= max) return text;
  // Cut on a character boundary.
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString()}…(+${bytes.length - end} bytes not shown)`;
}
