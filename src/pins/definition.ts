/**
 * What a pin is of: a tool's definition as the model reads it (name, title,
 * description, inputSchema, outputSchema, annotations), in canonical JSON
 * (sorted keys, no whitespace: records/canonical.ts), hashed with SHA-256.
 * Other members (`_meta`, `icons`, `execution`) are not pinned: they change
 * for reasons of their own and do not steer the model.
 *
 * The hash is of the server's own definition, before hidden characters are
 * made visible (sanitize.ts): the pin says what the server sent, and turning
 * --sanitize on or off never looks like a change of the server's.
 */
import { createHash } from 'node:crypto';
import { canonical } from '../records/canonical.js';

export const PINNED_MEMBERS = ['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations'] as const;

export type ToolDefinition = Partial<Record<(typeof PINNED_MEMBERS)[number], unknown>>;

/** The pinned members of a tool as listed (others dropped). */
export function pinnedPart(tool: Record<string, unknown>): ToolDefinition {
  const kept: ToolDefinition = {};
  for (const key of PINNED_MEMBERS) if (Object.hasOwn(tool, key) && tool[key] !== undefined) kept[key] = tool[key];
  return kept;
}

export function digest(definition: ToolDefinition): string {
  return sha256(canonical(definition));
}

export function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
