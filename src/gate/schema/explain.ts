/**
 * The library's errors turned into mcpguard's own: one entry per failing
 * place, with its JSON Pointer, the keyword and a message mcpguard writes
 * from the schema (so the text does not change with the library's wording
 * and quotes no argument value). The library lists, for each failure, the
 * chain of keywords that led to it (`properties` → `items` → `$ref` →
 * `type`); only the last link is a failing place. Inside `anyOf`, `oneOf`
 * and `not` the branches' own failures are left out: the alternative as a
 * whole failed.
 */
import type { OutputUnit } from '@cfworker/json-schema';
import { clipQuoted } from './inspect.js';
import { isObject } from '../../base/values.js';
import type { SchemaError } from './verdict.js';

/** Most failing places kept in a verdict. */
export const MAX_ERRORS = 8;

/** Links of the chain: their failure is the failure of something under them. */
const CHAIN = new Set([
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'items',
  'prefixItems',
  'additionalItems',
  'unevaluatedItems',
  '$ref',
  '$recursiveRef',
  'allOf',
  'if',
  'dependentSchemas',
  'propertyNames',
]);
/** Whose `false` subschema at a member or item means "not allowed here". */
const FORBIDS = new Set([
  'additionalProperties',
  'unevaluatedProperties',
  'additionalItems',
  'unevaluatedItems',
  'items',
  'properties',
  'patternProperties',
  'prefixItems',
]);
const ALTERNATIVES = new Set(['anyOf', 'oneOf', 'not']);

/** How the caller finds what a `$ref` points to (the library's lookup). */
export type Resolve = (node: Record<string, unknown>, keyword: '$ref' | '$recursiveRef') => unknown;

export function explain(units: readonly OutputUnit[], instance: unknown, root: unknown, resolve: Resolve): SchemaError[] {
  const out: SchemaError[] = [];
  const seen = new Set<string>();
  const push = (e: SchemaError): void => {
    const key = `${e.path}\0${e.keyword}`;
    if (out.length < MAX_ERRORS && !seen.has(key)) {
      seen.add(key);
      out.push(e);
    }
  };
  let skipUnder: string | null = null;
  for (let i = 0; i < units.length; i++) {
    const u = units[i]!;
    if (skipUnder !== null && u.keywordLocation.startsWith(skipUnder)) continue;
    skipUnder = null;
    const path = pointerOf(u.instanceLocation);
    if (u.keyword === 'dependencies' && units[i + 1]?.keywordLocation.startsWith(`${u.keywordLocation}/`)) continue;
    if (CHAIN.has(u.keyword)) {
      const next = units[i + 1];
      if (u.keyword === 'propertyNames' && next !== undefined) {
        push({ path: pointerOf(next.instanceLocation), keyword: 'propertyNames', message: 'this property name is not allowed' });
        skipUnder = `${u.keywordLocation}/`;
      } else if (FORBIDS.has(u.keyword) && next?.keyword === 'false') {
        push({ path: pointerOf(next.instanceLocation), keyword: u.keyword, message: 'is not allowed' });
        i++;
      }
      continue;
    }
    const value = schemaValue(root, u.keywordLocation, resolve);
    if (ALTERNATIVES.has(u.keyword)) skipUnder = `${u.keywordLocation}/`;
    if (u.keyword === 'required') {
      for (const name of missing(value, valueAt(instance, path))) push({ path: `${path}/${escapeSegment(name)}`, keyword: 'required', message: 'is required' });
    } else if (u.keyword === 'dependentRequired' || u.keyword === 'dependencies') {
      const here = valueAt(instance, path);
      for (const [when, needs] of isObject(value) ? Object.entries(value) : []) {
        if (!isObject(here) || !Object.hasOwn(here, when) || !Array.isArray(needs)) continue;
        for (const name of missing(needs, here))
          push({ path: `${path}/${escapeSegment(name)}`, keyword: u.keyword, message: `is required when ${JSON.stringify(clipQuoted(when, 40))} is present` });
      }
    } else {
      push({ path, keyword: u.keyword, message: describe(u.keyword, value, valueAt(instance, path)) });
    }
  }
  // A failure the rules above did not name (a library change) still refuses the call, and says so.
  if (out.length === 0 && units.length > 0)
    out.push({ path: pointerOf(units[0]!.instanceLocation), keyword: units[0]!.keyword, message: 'does not match the schema' });
  return out;
}

function describe(keyword: string, v: unknown, instance: unknown): string {
  switch (keyword) {
    case 'type':
      return `must be ${Array.isArray(v) ? v.join(' or ') : String(v)} (got ${typeName(instance)})`;
    case 'enum':
      return Array.isArray(v) ? `must be one of ${list(v)}` : 'must be one of the listed values';
    case 'const':
      return `must be ${clipQuoted(JSON.stringify(v) ?? 'null', 60)}`;
    case 'pattern':
      return `must match the pattern ${JSON.stringify(clipQuoted(String(v), 80))}`;
    case 'minLength':
      return `must be at least ${n(v)} characters long`;
    case 'maxLength':
      return `must be at most ${n(v)} characters long`;
    case 'minimum':
      return `must be >= ${n(v)}`;
    case 'maximum':
      return `must be <= ${n(v)}`;
    case 'exclusiveMinimum':
      return `must be > ${n(v)}`;
    case 'exclusiveMaximum':
      return `must be < ${n(v)}`;
    case 'multipleOf':
      return `must be a multiple of ${n(v)}`;
    case 'minItems':
      return `must have at least ${n(v)} items`;
    case 'maxItems':
      return `must have at most ${n(v)} items`;
    case 'minProperties':
      return `must have at least ${n(v)} properties`;
    case 'maxProperties':
      return `must have at most ${n(v)} properties`;
    case 'uniqueItems':
      return 'must not contain duplicate items';
    case 'contains':
      return 'must contain an item that matches the contains schema';
    case 'minContains':
      return `must contain at least ${n(v)} items that match the contains schema`;
    case 'maxContains':
      return `must contain at most ${n(v)} items that match the contains schema`;
    case 'anyOf':
      return `must match at least one of the ${count(v)}alternatives in anyOf`;
    case 'oneOf':
      return `must match exactly one of the ${count(v)}alternatives in oneOf`;
    case 'not':
      return 'must not match the schema under not';
    case 'false':
      return 'is not allowed';
    default:
      return `does not match ${keyword}`;
  }
}

function missing(required: unknown, here: unknown): string[] {
  if (!Array.isArray(required) || !isObject(here)) return [];
  return required.filter((name): name is string => typeof name === 'string' && !Object.hasOwn(here, name));
}

function list(values: unknown[]): string {
  const shown = values
    .slice(0, 6)
    .map((v) => clipQuoted(JSON.stringify(v) ?? 'null', 30))
    .join(', ');
  return values.length > 6 ? `${shown}, … (${values.length} values)` : shown;
}

function count(v: unknown): string {
  return Array.isArray(v) ? `${v.length} ` : '';
}

function n(v: unknown): string {
  return typeof v === 'number' ? String(v) : '?';
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** The library writes locations as URI fragments (`#/a%20b/0`); mcpguard reports JSON Pointers (`/a b/0`). */
function pointerOf(location: string): string {
  const raw = location.startsWith('#') ? location.slice(1) : location;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function segmentsOf(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function escapeSegment(name: string): string {
  return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

function valueAt(root: unknown, pointer: string): unknown {
  let node = root;
  for (const s of segmentsOf(pointer)) {
    if (Array.isArray(node)) node = node[Number(s)];
    else if (isObject(node) && Object.hasOwn(node, s)) node = node[s];
    else return undefined;
  }
  return node;
}

/** The value of the failing keyword, following the `$ref`s the library followed on its way. */
function schemaValue(root: unknown, keywordLocation: string, resolve: Resolve): unknown {
  let node = root;
  for (const s of segmentsOf(pointerOf(keywordLocation))) {
    if (isObject(node) && (s === '$ref' || s === '$recursiveRef') && Object.hasOwn(node, s)) {
      node = resolve(node, s);
    } else if (Array.isArray(node)) {
      node = node[Number(s)];
    } else if (isObject(node) && Object.hasOwn(node, s)) {
      node = node[s];
    } else {
      return undefined;
    }
  }
  return node;
}
