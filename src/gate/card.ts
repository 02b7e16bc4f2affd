/**
 * The approval card: what a person is shown before a tool call runs. It
 * describes one concrete action at one moment: the server, the tool, and the
 * arguments exactly as they will be sent (their own bytes, secrets masked,
 * clipped to a budget that says what it left out), why it is asked, and the
 * wall-clock time the question expires. Characters that could hide or
 * reorder text on a screen (bidi controls, zero-width characters, C0/C1
 * controls) are written out as \uXXXX so the person sees what the server
 * will get.
 */
import { createHash } from 'node:crypto';
import { processMasker } from '../mask/mask.js';

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
}

// Bidi controls, zero-width characters, the BOM, C0 (but \n and \t) and C1 controls, line and paragraph separators.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

export function makeCard(facts: CardFacts): Card {
  const args = clip(processMasker().text(facts.argumentsText), CARD_ARGUMENT_BYTES);
  const text = [
    'mcpguard: allow this tool call?',
    `Server: ${visible(processMasker().text(facts.server))}`,
    `Tool: ${visible(facts.tool)}`,
    `Arguments (exactly as they will be sent): ${visible(args)}`,
    `Asked because: ${visible(facts.why)}`,
    ...(facts.change === undefined ? [] : ['What changed since the tool was pinned (accepting updates the pin):', ...facts.change.map((line) => `  ${visible(clip(line, CARD_CHANGE_LINE_BYTES))}`)]),
    `Expires: ${new Date(facts.expiresAt).toISOString()}`,
  ].join('\n');
  const bytes = Buffer.byteLength(text);
  return { text, sha256: createHash('sha256').update(text).digest('hex'), bytes };
}

/** The `elicitation/create` params that show a card: form mode, nothing to fill in but the answer itself. */
export function elicitationParams(card: Card, formMode: boolean): Record<string, unknown> {
  return {
    ...(formMode ? { mode: 'form' } : {}),
    message: card.text,
    requestedSchema: { type: 'object', properties: {} },
  };
}

function visible(text: string): string {
  return text.replace(HIDDEN, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function clip(text: string, max: number): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= max) return text;
  // Cut on a character boundary.
  let end = max;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString()}…(+${bytes.length - end} bytes not shown)`;
}
