/**
 * The JSON Schema engine: @cfworker/json-schema behind mcpguard's own
 * checks. This module is the lazy boundary: schema.ts imports it (and with
 * it the library and the rest of src/gate) the first time a schema is
 * needed, so a session that never checks one never loads any of it. The
 * library is an interpreter: a schema from the server is data it walks,
 * never code it generates and runs; it has no network code, and mcpguard
 * refuses every `$ref` that does not resolve inside the schema before the
 * first check.
 *
 * Compiling = inspect (inspect.ts) → index the copy's identifiers (the
 * library's `dereference`) → every `$ref` resolved → bounds (bounds.ts).
 * After that a check cannot meet an unresolved reference or an endless
 * cycle; what is left to go wrong is arguments nested deeper than the stack,
 * which is caught and reported as not checkable.
 *
 * Every failing place is collected (the library's `shortCircuit` off), so a
 * model can correct all of its arguments at once; a valid value costs the
 * same either way.
 */
import * as lib from '@cfworker/json-schema';
import { GuardError } from '../../base/errors.js';
import { checkBounds } from './bounds.js';
import type { Dialect } from './dialect.js';
import { explain, type Resolve } from './explain.js';
import { clipQuoted, prepareSchema, unusable } from './inspect.js';
import { bytesPass } from './quick-bytes.js';
import { LinearRegExp, PatternBudgetError, resetPatternBudget } from './pattern.js';
import { compileRule, valuePasses, type Rule } from './quick-check.js';
import { EXACT_KEYWORDS, inexactNumber, inexactReason, unsafeInteger } from './numbers.js';
import { reachableNodes } from './keywords.js';
import { uniqueVerdict } from './unique.js';
import type { SchemaError } from './verdict.js';

export { resolveDialect } from './dialect.js';

/** What one check found. `unchecked`: the value could not be checked (nested deeper than the stack). */
export type Outcome = { ok: true } | { ok: false; kind: 'invalid'; errors: SchemaError[] } | { ok: false; kind: 'unchecked'; reason: string; keyword?: string };

/** A schema ready to check values against. */
export interface CompiledSchema {
  readonly dialect: Dialect;
  check(value: unknown): Outcome;
  /**
   * check(), for a caller that needs only the answer (a policy's `when`): the
   * library stops at the first failure and nothing is explained, so an
   * `invalid` outcome has no errors.
   */
  matches(value: unknown): Outcome;
  /** check(), of arguments held as bytes: large ones the schema's quick check can pass are never decoded. */
  checkArguments(args: ArgumentSource): Outcome;
  /** Why the arguments' numbers cannot be judged exactly against this schema (numbers.ts), or null. */
  inexact(args: ArgumentSource): string | null;
}

/** A call's arguments as the gate holds them: their JSON text in the frame (scanned: valid), and their value on demand. */
export interface ArgumentSource {
  readonly frame: Buffer;
  readonly start: number;
  readonly end: number;
  /** The parsed arguments, the same value on every call. */
  value(): unknown;
}

/**
 * Arguments at least this many bytes long are checked from their bytes
 * first (quick-bytes.ts). Measured on a 4-property schema: at 300 bytes
 * decoding and JSON.parse cost ~5 µs against the bytes check's ~8 (its
 * rescan has a fixed cost); at 2 KB the bytes check is already ahead
 * (~23 µs against ~35), and the gap grows with the size.
 */
export const BYTES_CHECK_MIN = 4 * 1024;

const PASSED: Outcome = Object.freeze({ ok: true });
const FAILED: Outcome = Object.freeze({ ok: false, kind: 'invalid', errors: Object.freeze([]) as unknown as SchemaError[] });

/** Compile `schema` as `dialect`; throws GuardError('schema_unusable') naming what is wrong with it. */
export function compileSchema(schema: unknown, dialect: Dialect): CompiledSchema {
  const { copy, refs } = prepareSchema(schema, dialect);
  let lookup: Record<string, unknown>;
  try {
    lookup = lib.dereference(copy as lib.Schema | boolean) as Record<string, unknown>;
  } catch (error) {
    throw unusable(`its identifiers ($id, $anchor) cannot be indexed (${clipQuoted(messageOf(error))})`);
  }
  const resolve: Resolve = (node, keyword) => lookup[refKey(node, keyword)];
  const targets = new Map<Record<string, unknown>, unknown[]>();
  for (const site of refs) {
    const target = resolve(site.node, site.keyword);
    if (target === undefined) {
      throw unusable(
        `${site.at}: ${JSON.stringify(clipQuoted(String(site.node[site.keyword])))} does not resolve inside the schema (mcpguard never fetches a schema)`,
      );
    }
    targets.set(site.node, [...(targets.get(site.node) ?? []), target]);
  }
  checkBounds(copy, targets);
  // A valid value of a simple schema passes without the library's per-subschema garbage; anything else asks the library.
  const rule = compileRule(copy, dialect);
  const nodes = reachableNodes(copy, targets);
  const uniques = nodes.filter((node) => node.uniqueItems === true);
  const multipleOf = nodes.some((node) => node.multipleOf !== undefined);
  // inspect.ts checked every subschema in its place; a `$ref` may also reach one under a keyword of no meaning.
  for (const node of nodes) {
    for (const k of EXACT_KEYWORDS)
      if (node[k] !== undefined && unsafeInteger(node[k]) !== null)
        throw unusable(`a subschema it reaches holds an integer beyond ±(2^53 − 1) in ${k}: mcpguard cannot judge arguments against it exactly`);
  }
  // Arguments given as a value only (no bytes) have lost their digits already; the gate always has the bytes.
  const inexact = (args: ArgumentSource): string | null =>
    args.end > args.start ? inexactReason(inexactNumber(args.frame, args.start, args.end), multipleOf) : null;
  const validate = (value: unknown, firstFailure: boolean): lib.ValidationResult | Outcome => {
    let unique: string;
    try {
      unique = uniques.length === 0 ? 'as-is' : uniqueVerdict(value);
    } catch {
      return { ok: false, kind: 'unchecked', reason: 'it is nested too deeply to check against uniqueItems' };
    }
    if (unique !== 'as-is' && unique !== 'off') return { ok: false, kind: 'unchecked', reason: unique, keyword: 'uniqueItems' };
    if (unique === 'off') for (const node of uniques) node.uniqueItems = false;
    // The library compiles `pattern` and `patternProperties` with the global RegExp as it checks, with no hook: for
    // the length of this synchronous call that name is the linear matcher (pattern.ts), so V8 never backtracks on them.
    const native = globalThis.RegExp;
    globalThis.RegExp = LinearRegExp as unknown as RegExpConstructor;
    try {
      return lib.validate(value, copy as lib.Schema | boolean, dialect, lookup as Record<string, lib.Schema | boolean>, firstFailure);
    } catch (error) {
      if (error instanceof PatternBudgetError) return { ok: false, kind: 'unchecked', reason: error.message, keyword: 'pattern' };
      // A pattern reached only through a `$ref` is compiled here, at its first use: one RE2 cannot match refuses the call.
      if (error instanceof GuardError) return { ok: false, kind: 'unchecked', reason: `a pattern it reaches ${error.message}`, keyword: 'pattern' };
      // Compiling ruled out unresolved references and endless cycles: what throws here is the
      // stack (a value nested deeper than it, or more failures than one array spread can take).
      return {
        ok: false,
        kind: 'unchecked',
        reason:
          error instanceof RangeError ? 'it is nested too deeply or fails in too many places to check' : `the check failed (${clipQuoted(messageOf(error))})`,
      };
    } finally {
      globalThis.RegExp = native;
      if (unique === 'off') for (const node of uniques) node.uniqueItems = true;
    }
  };
  /** The quick check, or the budget's refusal when its patterns have matched all the text one check may. */
  const quick = (value: unknown, r: Rule): boolean | Outcome => {
    try {
      return valuePasses(value, r);
    } catch (error) {
      if (error instanceof PatternBudgetError) return { ok: false, kind: 'unchecked', reason: error.message, keyword: 'pattern' };
      throw error;
    }
  };
  const matches = (value: unknown): Outcome => {
    resetPatternBudget();
    // The quick check's no is as exact as its yes (quick-check.test.js compares both with the library); only a refusal's explanation needs the library.
    if (rule !== null) {
      const passed = quick(value, rule);
      return typeof passed === 'boolean' ? (passed ? PASSED : FAILED) : passed;
    }
    const result = validate(value, true);
    if ('ok' in result) return result;
    return result.valid ? PASSED : FAILED;
  };
  const check = (value: unknown): Outcome => {
    if (rule !== null) {
      const passed = quick(value, rule);
      if (passed === true) return PASSED;
      if (passed !== false) return passed;
    }
    const result = validate(value, false);
    if ('ok' in result) return result;
    if (result.valid) return PASSED;
    let errors: SchemaError[];
    try {
      errors = explain(result.errors, value, copy, resolve);
    } catch {
      errors = [{ path: '', keyword: 'schema', message: 'does not match the schema' }];
    }
    return { ok: false, kind: 'invalid', errors };
  };
  return {
    dialect,
    check(value: unknown): Outcome {
      resetPatternBudget();
      return check(value);
    },
    matches,
    inexact,
    checkArguments(args: ArgumentSource): Outcome {
      const reason = inexact(args);
      if (reason !== null) return { ok: false, kind: 'unchecked', reason, keyword: 'number' };
      resetPatternBudget();
      if (rule !== null && args.end - args.start >= BYTES_CHECK_MIN && bytesPass(rule, args.frame, args.start, args.end)) return PASSED;
      return check(args.value());
    },
  };
}

/** The library records where each reference points (`__absolute_ref__`, part of its Schema type) while indexing. */
function refKey(node: Record<string, unknown>, keyword: '$ref' | '$recursiveRef'): string {
  const absolute = keyword === '$ref' ? node.__absolute_ref__ : node.__absolute_recursive_ref__;
  return typeof absolute === 'string' ? absolute : String(node[keyword]);
}

function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
