/**
 * A schema's quick yes. The library (@cfworker/json-schema) builds a JSON
 * Pointer string and a result object for every subschema it visits, errors
 * or not: about 2 KB of garbage for a two-member call, more than the rest of
 * the gate together. Most tool schemas use a handful of keywords (`type`,
 * `properties`, `required`, `additionalProperties`, bounds, `enum`,
 * `anyOf`…), and for those this module decides "valid" by walking the value
 * with nothing allocated.
 *
 * For a tool call it only ever says yes or "ask the library": a value it
 * does not pass is checked again by the library, which makes the verdict
 * and its errors, so a refusal reads exactly as before. A policy's `when`
 * needs no explanation, and takes its no as final (engine.ts `matches`).
 * It must never pass a value the library refuses: each keyword below
 * repeats the library's own test (validate.js of @cfworker/json-schema 4.x),
 * quirks included (a lone `"integer"` type lets a number with no fraction
 * through, Infinity too; in an array of types it does not). A schema with
 * any keyword the library reads and this module does not repeat gets no
 * quick check at all. test/gate/schema/quick-check.test.js compares the two on
 * random schemas and values.
 */
import type { Dialect } from './dialect.js';
import { patternOf, type LinearPattern } from './pattern.js';

/** Keywords the library reads that are repeated here; any other keyword it reads rules the schema out. */
const REPEATED = new Set([
  'type',
  'const',
  'enum',
  'required',
  'not',
  'anyOf',
  'allOf',
  'oneOf',
  'if',
  'then',
  'else',
  'properties',
  'additionalProperties',
  'items',
  'minItems',
  'maxItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'pattern',
]);

/** Every keyword validate() reads from a schema object (its destructuring), in the library's spelling. */
const LIBRARY_READS = [
  '$ref',
  '$recursiveRef',
  '$recursiveAnchor',
  'type',
  'const',
  'enum',
  'required',
  'not',
  'anyOf',
  'allOf',
  'oneOf',
  'if',
  'then',
  'else',
  'format',
  'properties',
  'patternProperties',
  'additionalProperties',
  'unevaluatedProperties',
  'minProperties',
  'maxProperties',
  'propertyNames',
  'dependentRequired',
  'dependentSchemas',
  'dependencies',
  'prefixItems',
  'items',
  'additionalItems',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  '__absolute_ref__',
  '__absolute_recursive_ref__',
];

/** The instance types as bits (quick-bytes.ts reads values from their bytes with the same bits). */
export const NULL = 1;
export const BOOLEAN = 2;
export const OBJECT = 4;
export const ARRAY = 8;
export const NUMBER = 16;
export const STRING = 32;
/** `"integer"` in an array of types: a finite number with no fraction. */
const INTEGER = 64;
const TYPE_BITS: Readonly<Record<string, number>> = {
  null: NULL,
  boolean: BOOLEAN,
  object: OBJECT,
  array: ARRAY,
  number: NUMBER,
  string: STRING,
  integer: INTEGER,
};

export type Primitive = string | number | boolean | null;

/** Nothing is allowed to be compiled from a schema deeper than this (the gate's own bound is lower). */
const MAX_DEPTH = 128;

/** A schema compiled to the keywords repeated here (read by quick-bytes.ts too). */
export class Rule {
  /** A boolean schema: true passes everything, false nothing. */
  always: boolean | null = null;
  /** Bits of the allowed types; 0 with `typed` is an empty list (nothing passes). */
  types = 0;
  typed = false;
  /** A lone `"integer"`: the library's test (`instance % 1 || instance !== instance`) lets Infinity through. */
  looseInteger = false;
  enumValues: Primitive[] | null = null;
  hasConst = false;
  constValue: Primitive = null;
  required: string[] | null = null;
  propNames: string[] = [];
  propRules: Rule[] = [];
  propSet: Set<string> | null = null;
  additional: Rule | null = null;
  items: Rule | null = null;
  minItems = -1;
  maxItems = Infinity;
  minimum: number | undefined;
  maximum: number | undefined;
  exclusiveMinimum: number | undefined;
  exclusiveMaximum: number | undefined;
  minLength = -1;
  maxLength = Infinity;
  pattern: LinearPattern | null = null;
  not: Rule | null = null;
  anyOf: Rule[] | null = null;
  allOf: Rule[] | null = null;
  oneOf: Rule[] | null = null;
  ifRule: Rule | null = null;
  thenRule: Rule | null = null;
  elseRule: Rule | null = null;
}

/**
 * A check that returns true only for values the library also finds valid
 * against `schema` (the copy the engine hands it, already prepared), or null
 * when the schema uses a keyword not repeated here.
 */
export function quickCheck(schema: unknown, dialect: Dialect): ((value: unknown) => boolean) | null {
  const rule = compileRule(schema, dialect);
  return rule === null ? null : (value) => passes(value, rule);
}

/** The schema as a Rule, or null when it uses a keyword not repeated here. */
export function compileRule(schema: unknown, dialect: Dialect): Rule | null {
  // Draft 4's exclusive bounds are booleans; mcpguard checks draft-07 and later only.
  if (dialect !== '7' && dialect !== '2019-09' && dialect !== '2020-12') return null;
  return compile(schema, 0);
}

function compile(schema: unknown, depth: number): Rule | null {
  if (depth > MAX_DEPTH) return null;
  const rule = new Rule();
  if (schema === true || schema === false) {
    rule.always = schema;
    return rule;
  }
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return null;
  const s = schema as Record<string, unknown>;
  // Read as the library reads them (a property get), so an inherited keyword counts as it does there.
  for (const k of LIBRARY_READS) if (s[k] !== undefined && !REPEATED.has(k)) return null;
  // `then`/`else` without `if` are ignored by the library; rather than repeat that, no quick check.
  if ((s.then !== undefined || s.else !== undefined) && s.if === undefined) return null;

  const type = s.type;
  if (type !== undefined) {
    rule.typed = true;
    if (typeof type === 'string') {
      if (!Object.hasOwn(TYPE_BITS, type)) return null;
      if (type === 'integer') rule.looseInteger = true;
      else rule.types = TYPE_BITS[type]!;
    } else if (Array.isArray(type)) {
      for (const t of type) {
        if (typeof t !== 'string' || !Object.hasOwn(TYPE_BITS, t)) return null;
        rule.types |= TYPE_BITS[t]!;
      }
    } else return null;
  }
  if (s.const !== undefined) {
    if (!isPrimitive(s.const)) return null;
    rule.hasConst = true;
    rule.constValue = s.const;
  }
  if (s.enum !== undefined) {
    if (!Array.isArray(s.enum) || !s.enum.every(isPrimitive)) return null;
    rule.enumValues = [...(s.enum as Primitive[])];
  }
  if (s.required !== undefined) {
    if (!Array.isArray(s.required) || !s.required.every((k) => typeof k === 'string')) return null;
    rule.required = [...(s.required as string[])];
  }
  if (s.properties !== undefined) {
    if (typeof s.properties !== 'object' || s.properties === null || Array.isArray(s.properties)) return null;
    // The library walks Object.entries(properties): the same names, in the same order.
    for (const [name, sub] of Object.entries(s.properties)) {
      const compiled = compile(sub, depth + 1);
      if (compiled === null) return null;
      rule.propNames.push(name);
      rule.propRules.push(compiled);
    }
  }
  rule.propSet = new Set(rule.propNames);
  if (s.additionalProperties !== undefined && (rule.additional = compile(s.additionalProperties, depth + 1)) === null) return null;
  if (s.items !== undefined) {
    // An array of schemas (tuples) is not repeated here.
    if (Array.isArray(s.items) || (rule.items = compile(s.items, depth + 1)) === null) return null;
  }
  for (const k of ['minItems', 'maxItems', 'minLength', 'maxLength', 'minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const) {
    if (s[k] !== undefined && (typeof s[k] !== 'number' || !Number.isFinite(s[k]))) return null;
  }
  if (s.minItems !== undefined) rule.minItems = s.minItems as number;
  if (s.maxItems !== undefined) rule.maxItems = s.maxItems as number;
  if (s.minLength !== undefined) rule.minLength = s.minLength as number;
  if (s.maxLength !== undefined) rule.maxLength = s.maxLength as number;
  rule.minimum = s.minimum as number | undefined;
  rule.maximum = s.maximum as number | undefined;
  rule.exclusiveMinimum = s.exclusiveMinimum as number | undefined;
  rule.exclusiveMaximum = s.exclusiveMaximum as number | undefined;
  if (s.pattern !== undefined) {
    if (typeof s.pattern !== 'string') return null;
    try {
      // The same linear matcher the library is given (pattern.ts), with its budget.
      rule.pattern = patternOf(s.pattern);
    } catch {
      return null;
    }
  }
  if (s.not !== undefined && (rule.not = compile(s.not, depth + 1)) === null) return null;
  for (const k of ['anyOf', 'allOf', 'oneOf'] as const) {
    if (s[k] === undefined) continue;
    if (!Array.isArray(s[k])) return null;
    const list: Rule[] = [];
    for (const sub of s[k] as unknown[]) {
      const compiled = compile(sub, depth + 1);
      if (compiled === null) return null;
      list.push(compiled);
    }
    rule[k] = list;
  }
  if (s.if !== undefined) {
    if ((rule.ifRule = compile(s.if, depth + 1)) === null) return null;
    if (s.then !== undefined && (rule.thenRule = compile(s.then, depth + 1)) === null) return null;
    if (s.else !== undefined && (rule.elseRule = compile(s.else, depth + 1)) === null) return null;
  }
  return rule;
}

function isPrimitive(value: unknown): value is Primitive {
  return value === null || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

/** The library's instance type, as a bit; 0 for what it refuses to check (undefined, functions, bigint: never from JSON). */
function typeBit(value: unknown): number {
  switch (typeof value) {
    case 'boolean':
      return BOOLEAN;
    case 'number':
      return NUMBER;
    case 'string':
      return STRING;
    case 'object':
      return value === null ? NULL : Array.isArray(value) ? ARRAY : OBJECT;
    default:
      return 0;
  }
}

export { passes as valuePasses };

/** Whether `value` passes `rule`: true only where the library's validate() finds no error. */
function passes(value: unknown, rule: Rule): boolean {
  if (rule.always !== null) return rule.always;
  const bit = typeBit(value);
  if (bit === 0) return false;
  if (rule.typed && !typeAllows(rule, bit, value as number)) return false;
  // Objects and arrays never equal a primitive const or enum member (deepCompareStrict compares typeof first).
  if (rule.hasConst && value !== rule.constValue) return false;
  if (rule.enumValues !== null && !rule.enumValues.includes(value as Primitive)) return false;
  if (rule.not !== null && passes(value, rule.not)) return false;
  if (rule.anyOf !== null && !anyPasses(value, rule.anyOf)) return false;
  if (rule.allOf !== null) for (let i = 0; i < rule.allOf.length; i++) if (!passes(value, rule.allOf[i]!)) return false;
  if (rule.oneOf !== null && countPassing(value, rule.oneOf) !== 1) return false;
  if (rule.ifRule !== null) {
    if (passes(value, rule.ifRule)) {
      if (rule.thenRule !== null && !passes(value, rule.thenRule)) return false;
    } else if (rule.elseRule !== null && !passes(value, rule.elseRule)) return false;
  }
  if (bit === OBJECT) return objectPasses(value as Record<string, unknown>, rule);
  if (bit === ARRAY) return arrayPasses(value as unknown[], rule);
  if (bit === NUMBER) return numberWithin(rule, value as number);
  if (bit === STRING) {
    const text = value as string;
    if ((rule.minLength >= 0 || rule.maxLength !== Infinity) && !lengthWithin(rule, codePoints(text))) return false;
    return rule.pattern === null || rule.pattern.test(text);
  }
  return true;
}

/** `rule.typed`'s test for a value of type `bit` (`n`: the value, read only when it is a number). */
export function typeAllows(rule: Rule, bit: number, n: number): boolean {
  if (rule.looseInteger) {
    // validate.js: `instanceType !== 'number' || instance % 1 || instance !== instance` is an error.
    return bit === NUMBER && !(n % 1) && !Number.isNaN(n);
  }
  // validate.js, an array of types: `"integer"` matches a number with `instance % 1 === 0 && instance === instance`.
  return (rule.types & bit) !== 0 || ((rule.types & INTEGER) !== 0 && bit === NUMBER && n % 1 === 0 && !Number.isNaN(n));
}

/** The numeric bounds. */
export function numberWithin(rule: Rule, n: number): boolean {
  if (rule.minimum !== undefined && n < rule.minimum) return false;
  if (rule.maximum !== undefined && n > rule.maximum) return false;
  if (rule.exclusiveMinimum !== undefined && n <= rule.exclusiveMinimum) return false;
  if (rule.exclusiveMaximum !== undefined && n >= rule.exclusiveMaximum) return false;
  return true;
}

/** minLength/maxLength for a string of `length` (the library's count: see codePoints). */
export function lengthWithin(rule: Rule, length: number): boolean {
  return length >= rule.minLength && length <= rule.maxLength;
}

function anyPasses(value: unknown, rules: readonly Rule[]): boolean {
  for (let i = 0; i < rules.length; i++) if (passes(value, rules[i]!)) return true;
  return false;
}

function countPassing(value: unknown, rules: readonly Rule[]): number {
  let n = 0;
  for (let i = 0; i < rules.length; i++) if (passes(value, rules[i]!)) n++;
  return n;
}

function objectPasses(value: Record<string, unknown>, rule: Rule): boolean {
  const required = rule.required;
  if (required !== null) for (let i = 0; i < required.length; i++) if (!Object.hasOwn(value, required[i]!)) return false;
  const names = rule.propNames;
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    if (Object.hasOwn(value, name) && !passes(value[name], rule.propRules[i]!)) return false;
  }
  const additional = rule.additional;
  if (additional === null) return true;
  // validate.js: every key of `for…in` not evaluated by `properties` (a named property the value has as its own).
  for (const key in value) {
    if (rule.propSet!.has(key) && Object.hasOwn(value, key)) continue;
    if (!passes(value[key], additional)) return false;
  }
  return true;
}

function arrayPasses(value: unknown[], rule: Rule): boolean {
  if (value.length > rule.maxItems || value.length < rule.minItems) return false;
  const items = rule.items;
  if (items !== null) for (let i = 0; i < value.length; i++) if (!passes(value[i], items)) return false;
  return true;
}

/** The library's string length: UTF-16 code units, a surrogate pair counted once (ucs2length). */
export function codePoints(text: string): number {
  let n = 0;
  const length = text.length;
  let i = 0;
  while (i < length) {
    n++;
    const unit = text.charCodeAt(i++);
    if (unit >= 0xd800 && unit <= 0xdbff && i < length && (text.charCodeAt(i) & 0xfc00) === 0xdc00) i++;
  }
  return n;
}
