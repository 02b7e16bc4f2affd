/**
 * mcpguard's own check of a schema before the library sees it. The library
 * (@cfworker/json-schema) interprets a schema as it is and never checks it
 * against its meta-schema, so a malformed schema would quietly check
 * something else; here the values of the keywords that decide validation
 * are checked, with the JSON Pointer of the first bad one in the reason.
 * It also bounds how deep a schema nests, refuses what the library would
 * get wrong (`$dynamicRef`, mixed dialects), and makes the copy the library
 * works on (the library writes into the schema it is given), without
 * `format`: mcpguard treats formats as annotations and never refuses a call
 * for one.
 */
import { GuardError } from '../../base/errors.js';
import { dialectOfUri, DIALECT_NAMES, type Dialect } from './dialect.js';
import { childrenOf, pointer, SCHEMA_ARRAY_KEYWORDS, SCHEMA_MAP_KEYWORDS } from './keywords.js';
import { MAX_SCHEMA_DEPTH } from './limits.js';
import { EXACT_KEYWORDS, unsafeInteger } from './numbers.js';
import { patternOf } from './pattern.js';
import { clip, isObject } from '../../base/values.js';

const TYPES: ReadonlySet<string> = new Set(['array', 'boolean', 'integer', 'null', 'number', 'object', 'string']);
const COUNT_KEYWORDS = ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'minContains', 'maxContains'];
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'];
const STRING_KEYWORDS = ['$id', '$anchor', '$comment', '$ref'];

/** A `$ref` found in the copy, for the caller to resolve against the library's lookup. */
export interface RefSite {
  node: Record<string, unknown>;
  /** Where it is, as a JSON Pointer into the schema. */
  at: string;
  keyword: '$ref' | '$recursiveRef';
}

/** A checked copy of a schema, ready for the library. */
export interface Prepared {
  copy: Record<string, unknown> | boolean;
  refs: RefSite[];
}

/** The error every refusal of a schema is: its message is the reason reported for the tool. */
export function unusable(message: string): GuardError {
  return new GuardError('schema_unusable', message);
}

/**
 * Check `schema` as a schema of `dialect` and return the copy the library
 * gets. Throws GuardError('schema_unusable') naming the first problem.
 */
export function prepareSchema(schema: unknown, dialect: Dialect): Prepared {
  if (typeof schema === 'boolean') return { copy: schema, refs: [] };
  if (!isObject(schema)) throw unusable('the schema must be a JSON object');
  let copy: Record<string, unknown>;
  try {
    copy = structuredClone(schema);
  } catch {
    // Only a value nested deeper than the stack (in a keyword never walked here) gets here.
    throw unusable('the schema nests too deeply to copy');
  }
  const refs: RefSite[] = [];
  checkNode(copy, '', 0, dialect, refs);
  return { copy, refs };
}

function checkNode(node: unknown, at: string, depth: number, dialect: Dialect, refs: RefSite[]): void {
  if (typeof node === 'boolean') return;
  if (!isObject(node)) throw problem(at, 'must be a schema (an object or a boolean)');
  if (depth > MAX_SCHEMA_DEPTH) throw problem(at, `nests deeper than ${MAX_SCHEMA_DEPTH} subschemas`);
  checkKeywords(node, at, dialect, refs);
  for (const child of childrenOf(node, true)) {
    checkNode(child.schema, pointer(at, child.segments), depth + 1, dialect, refs);
  }
}

function checkKeywords(node: Record<string, unknown>, at: string, dialect: Dialect, refs: RefSite[]): void {
  const has = (k: string): boolean => Object.hasOwn(node, k);
  const where = (k: string): string => pointer(at, [k]);
  for (const k of COUNT_KEYWORDS) {
    if (has(k) && !(Number.isInteger(node[k]) && (node[k] as number) >= 0)) throw problem(where(k), 'must be a non-negative integer');
  }
  for (const k of NUMBER_KEYWORDS) {
    if (has(k) && !isFiniteNumber(node[k])) throw problem(where(k), 'must be a number');
  }
  if (has('multipleOf') && !(isFiniteNumber(node.multipleOf) && node.multipleOf > 0)) throw problem(where('multipleOf'), 'must be a number greater than 0');
  for (const k of EXACT_KEYWORDS) {
    const unsafe = has(k) ? unsafeInteger(node[k]) : null;
    if (unsafe !== null)
      throw problem(
        where(k),
        `holds an integer beyond ±(2^53 − 1) (read as ${unsafe}), which may have been rounded when read: mcpguard cannot judge arguments against it exactly`,
      );
  }
  for (const k of STRING_KEYWORDS) {
    if (has(k) && typeof node[k] !== 'string') throw problem(where(k), 'must be a string');
  }
  if (has('type')) checkType(node.type, where('type'));
  if (has('required') && !isStringArray(node.required)) throw problem(where('required'), 'must be an array of strings');
  if (has('enum') && !Array.isArray(node.enum)) throw problem(where('enum'), 'must be an array');
  if (has('uniqueItems') && typeof node.uniqueItems !== 'boolean') throw problem(where('uniqueItems'), 'must be a boolean');
  if (has('pattern')) checkPattern(node.pattern, where('pattern'));
  if (has('format')) {
    if (typeof node.format !== 'string') throw problem(where('format'), 'must be a string');
    delete node.format;
  }
  if (has('$ref')) refs.push({ node, at: where('$ref'), keyword: '$ref' });
  if (has('$dynamicRef')) throw problem(where('$dynamicRef'), "$dynamicRef is not supported by mcpguard's schema engine");
  if (has('$recursiveRef')) {
    if (dialect !== '2019-09') throw problem(where('$recursiveRef'), `$recursiveRef belongs to draft 2019-09, not ${DIALECT_NAMES[dialect]}`);
    if (node.$recursiveRef !== '#') throw problem(where('$recursiveRef'), 'must be "#"');
    refs.push({ node, at: where('$recursiveRef'), keyword: '$recursiveRef' });
  }
  if (has('$schema') && at !== '') {
    if (typeof node.$schema !== 'string') throw problem(where('$schema'), 'must be a string');
    if (dialectOfUri(node.$schema) !== dialect) throw problem(where('$schema'), `names another dialect than the schema's ${DIALECT_NAMES[dialect]}`);
  }
  if (has('items') && Array.isArray(node.items) && dialect === '2020-12')
    throw problem(where('items'), 'must be a schema in draft 2020-12 (an array of schemas is prefixItems)');
  for (const k of SCHEMA_ARRAY_KEYWORDS) {
    if (has(k) && !(Array.isArray(node[k]) && (node[k] as unknown[]).length > 0)) throw problem(where(k), 'must be a non-empty array of schemas');
  }
  for (const k of SCHEMA_MAP_KEYWORDS) {
    if (has(k) && !isObject(node[k])) throw problem(where(k), 'must be an object of schemas');
  }
  if (has('patternProperties')) {
    for (const p of Object.keys(node.patternProperties as object)) checkPattern(p, pointer(at, ['patternProperties', p]));
  }
  if (has('dependentRequired')) checkDependencies(node.dependentRequired, where('dependentRequired'), false);
  if (has('dependencies')) checkDependencies(node.dependencies, where('dependencies'), true);
}

function checkType(type: unknown, at: string): void {
  if (typeof type === 'string') {
    if (!TYPES.has(type)) throw problem(at, `${JSON.stringify(clipQuoted(type))} is not a JSON Schema type`);
    return;
  }
  if (!Array.isArray(type) || type.length === 0) throw problem(at, 'must be a type name or a non-empty array of them');
  for (const t of type) {
    if (typeof t !== 'string' || !TYPES.has(t)) throw problem(at, `${JSON.stringify(clipQuoted(String(t)))} is not a JSON Schema type`);
  }
}

/**
 * The library compiles patterns with the `u` flag, as JSON Schema asks
 * (ECMA-262, Unicode); V8 only parses it here (never runs it), and the
 * matching is RE2's (pattern.ts), which refuses what it cannot match exactly.
 */
function checkPattern(pattern: unknown, at: string): void {
  if (typeof pattern !== 'string') throw problem(at, 'must be a string');
  try {
    new RegExp(pattern, 'u');
  } catch (error) {
    throw problem(at, `is not a valid regular expression (${clipQuoted((error as Error).message.replace(/^Invalid regular expression: /, ''))})`);
  }
  try {
    patternOf(pattern);
  } catch (error) {
    throw problem(at, (error as Error).message);
  }
}

function checkDependencies(value: unknown, at: string, schemasToo: boolean): void {
  if (!isObject(value)) throw problem(at, 'must be an object');
  for (const [name, dep] of Object.entries(value)) {
    if (isStringArray(dep)) continue;
    if (schemasToo && (typeof dep === 'boolean' || isObject(dep))) continue;
    throw problem(pointer(at, [name]), schemasToo ? 'must be an array of strings or a schema' : 'must be an array of strings');
  }
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function problem(at: string, what: string): GuardError {
  return unusable(`${at === '' ? '(root)' : clipQuoted(at)}: ${what}`);
}

/** Long enough to name a place or a value, short enough for one line. */
/** `text` cut to 100 characters and an ellipsis (schema messages quote a server's text). */
export function clipQuoted(text: string, max = 100): string {
  return clip(text, max + 1);
}
