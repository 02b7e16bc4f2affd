/**
 * Where JSON Schema keeps subschemas, and which of them apply to the same
 * value as their parent. Shared by mcpguard's own check of a schema
 * (inspect.ts) and its bounds (bounds.ts), so the two cannot disagree about
 * what a subschema is.
 */
import { isObject } from '../../base/values.js';

/** A keyword whose value is one subschema. */
export const SCHEMA_KEYWORDS: ReadonlySet<string> = new Set([
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
]);

/** A keyword whose value is a non-empty array of subschemas. */
export const SCHEMA_ARRAY_KEYWORDS: ReadonlySet<string> = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);

/** A keyword whose value is an object of subschemas. */
export const SCHEMA_MAP_KEYWORDS: ReadonlySet<string> = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);

/**
 * Subschemas applied to the value their parent is applied to (not to a
 * member or an item of it). A cycle made only of these never ends, whatever
 * the arguments: each step goes round without moving into the value.
 */
export const SAME_VALUE_KEYWORDS: ReadonlySet<string> = new Set([
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentSchemas',
  'dependencies',
  '$ref',
  '$recursiveRef',
]);

/** Definitions are not applied where they stand; they are reached only through `$ref`. */
export const DEFINITION_KEYWORDS: ReadonlySet<string> = new Set(['$defs', 'definitions']);

/** One subschema of a schema object: the keyword it sits under and the subschema (an object or a boolean). */
export interface Child {
  keyword: string;
  /** The path below the schema, as JSON Pointer segments (`['properties', 'a']`). */
  segments: string[];
  schema: unknown;
}

/**
 * The subschemas of `node` that are applied to a value (definitions left
 * out unless `withDefinitions`). `items` is one subschema, or, up to
 * 2019-09, an array of them. `$ref` targets are not children: they are
 * resolved by the caller.
 */
export function childrenOf(node: Record<string, unknown>, withDefinitions: boolean): Child[] {
  const out: Child[] = [];
  for (const keyword of Object.keys(node)) {
    const value = node[keyword];
    if (SCHEMA_KEYWORDS.has(keyword)) {
      out.push({ keyword, segments: [keyword], schema: value });
    } else if (keyword === 'items') {
      if (Array.isArray(value)) for (const [i, s] of value.entries()) out.push({ keyword, segments: [keyword, String(i)], schema: s });
      else out.push({ keyword, segments: [keyword], schema: value });
    } else if (SCHEMA_ARRAY_KEYWORDS.has(keyword)) {
      if (Array.isArray(value)) for (const [i, s] of value.entries()) out.push({ keyword, segments: [keyword, String(i)], schema: s });
    } else if (SCHEMA_MAP_KEYWORDS.has(keyword) || keyword === 'dependencies') {
      if (!withDefinitions && DEFINITION_KEYWORDS.has(keyword)) continue;
      if (!isObject(value)) continue;
      for (const name of Object.keys(value)) {
        const sub = value[name];
        // draft-07 `dependencies` mixes subschemas with arrays of property names.
        if (keyword === 'dependencies' && Array.isArray(sub)) continue;
        out.push({ keyword, segments: [keyword, name], schema: sub });
      }
    }
  }
  return out;
}

/**
 * Every schema object reachable from `root`: its subschemas (definitions
 * included) and, through `targets`, what each `$ref` resolves to (which may
 * lie under a keyword that is no subschema's place). Each once; own stack.
 */
export function reachableNodes(root: unknown, targets: ReadonlyMap<Record<string, unknown>, readonly unknown[]>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!isObject(node) || seen.has(node)) continue;
    seen.add(node);
    out.push(node);
    for (const child of childrenOf(node, true)) stack.push(child.schema);
    for (const target of targets.get(node) ?? []) stack.push(target);
  }
  return out;
}

/** A JSON object (not an array, not null). */

/** `segments` as a JSON Pointer (RFC 6901), appended to `base`. */
export function pointer(base: string, segments: readonly string[]): string {
  let out = base;
  for (const s of segments) out += `/${s.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  return out;
}
