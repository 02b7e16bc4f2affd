/**
 * `pattern` and `patternProperties` without a stall. A schema's patterns are
 * the server's, and V8's own engine backtracks: `^(a+)+$` against 27
 * characters held the main thread (and with it every other call and the
 * stderr drain) for 14 s, doubling per character. V8's linear fallback does
 * not take the `u` flag JSON Schema patterns are compiled with, nor
 * backreferences and lookarounds, so the patterns run on re2js (RE2 in pure
 * JavaScript: a matcher whose time grows with the text times the pattern,
 * never exponentially), loaded the first time a schema has a pattern.
 *
 * RE2 is not ECMA-262, so each pattern (ECMA-262 with `u`, known valid) is
 * translated: `.` and `\s`/`\S` to ECMA-262's sets (RE2's are narrower),
 * groups to non-capturing (a test needs no captures, and RE2's matcher is
 * slower with them), `\uXXXX` and `\u{…}` to `\x{…}`, `\0`, `\cX`, `[\b]`,
 * `[` inside a class (RE2 reads `[:alpha:]` there), and the empty classes
 * `[]` and `[^]`. What has no exact translation (backreferences,
 * lookarounds, `\p{…}` forms RE2 does not name, repeat counts over 1000, a
 * pattern longer than MAX_PATTERN_LENGTH) runs on V8 as before, but each test
 * under a watchdog, on a time budget per check (TIMED_BUDGET_MS).
 *
 * Each RE2 test draws on a budget of text per check (PATTERN_BUDGET
 * characters times the pattern's size). Past either budget the check stops
 * and the call is refused as not checkable, so no argument can buy more than
 * a bounded stall.
 */
import { createRequire } from 'node:module';
import vm from 'node:vm';
import { GuardError } from '../../base/errors.js';

/** Longest pattern mcpguard compiles (RE2 compiles in time that grows with the pattern; real patterns are far shorter). */
export const MAX_PATTERN_LENGTH = 1024;
/**
 * Characters of text times pattern size (RE2's program, in instructions) one
 * check may match. Measured (bench/patterns.js, idle 2-vCPU VM): the slowest
 * simple patterns cost 10–15 ns a unit (25 under a load average of 11), so a
 * check stops within about 60 ms of matching (100 ms loaded); a 256 KiB
 * string against a 12-instruction pattern is within it.
 */
export const PATTERN_BUDGET = 4 * 1024 * 1024;

/** A compiled pattern: `test` is RegExp.prototype.test's answer for the ECMA-262 pattern with `u`. */
export interface LinearPattern {
  readonly source: string;
  test(text: string): boolean;
}

interface Re2 {
  test(text: string): boolean;
  programSize(): number;
}
interface Re2Module {
  RE2JS: { compile(pattern: string): Re2 };
}
let re2: Re2Module | undefined;

let budget = PATTERN_BUDGET;

/** Start a check's budget afresh (engine.ts, before each check). */
export function resetPatternBudget(): void {
  budget = PATTERN_BUDGET;
  timedLeft = TIMED_BUDGET_MS;
}

/** Thrown when a check has matched all the text its budget allows; the check is refused as not checkable. */
export class PatternBudgetError extends Error {}

/** ECMA-262's WhiteSpace and LineTerminator (`\s`), as RE2 class ranges. */
const SPACES = '\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';
/** ECMA-262's `.` without the `s` flag: anything but a line terminator. */
const DOT = '[^\\n\\r\\x{2028}\\x{2029}]';

/** Compiled patterns by source, shared by every schema (a list refetched compiles nothing again); past this many it starts over. */
const MAX_CACHED = 1024;
const cache = new Map<string, LinearPattern>();

/**
 * `source` (a valid ECMA-262 pattern with `u`) compiled, or from the cache.
 * Throws GuardError('schema_unusable') saying why it cannot be matched in
 * linear time.
 */
export function patternOf(source: string): LinearPattern {
  let pattern = cache.get(source);
  if (pattern === undefined) {
    pattern = compilePattern(source);
    if (cache.size >= MAX_CACHED) cache.clear();
    cache.set(source, pattern);
  }
  return pattern;
}

/**
 * A constructor that stands in for RegExp while the library checks a value:
 * it compiles `pattern` and `patternProperties` with `new RegExp(source, 'u')`
 * at each check and offers no hook, and what it gets back is only ever asked
 * to `test`.
 */
export function LinearRegExp(this: unknown, source: string): LinearPattern {
  return patternOf(String(source));
}

/** V8's RegExp, kept before anyone stands LinearRegExp in for it: it parses each pattern (never runs one). */
const NativeRegExp = RegExp;

function compilePattern(source: string): LinearPattern {
  // The translation assumes valid ECMA-262 with `u` (inspect.ts checks the patterns in their places; a `$ref` may reach others).
  let native: RegExp;
  try {
    native = new NativeRegExp(source, 'u');
  } catch {
    throw refuse('is not a valid regular expression');
  }
  let compiled: Re2;
  try {
    if (source.length > MAX_PATTERN_LENGTH) throw refuse(`is longer than ${MAX_PATTERN_LENGTH} characters, more than RE2 compiles quickly`);
    const translated = translate(source);
    re2 ??= createRequire(import.meta.url)('re2js') as Re2Module;
    try {
      compiled = re2.RE2JS.compile(translated);
    } catch (error) {
      const why = (error instanceof Error ? error.message : String(error)).replace(/^error parsing regexp: /, '').split('\n')[0]!;
      throw refuse(`has what RE2 cannot compile (${why.length > 80 ? `${why.slice(0, 80)}…` : why})`);
    }
  } catch (error) {
    if (!(error instanceof GuardError)) throw error;
    return timedPattern(source, native, error.message);
  }
  const size = Math.max(1, compiled.programSize());
  return {
    source,
    test(text: string): boolean {
      budget -= text.length * size;
      if (budget < 0)
        throw new PatternBudgetError(`matching its patterns would take more than mcpguard's bound (${PATTERN_BUDGET} characters times pattern size per check)`);
      return compiled.test(text);
    },
  };
}

/** ECMA-262 (`u`, valid) to RE2 syntax with the same matches; throws for what has no exact translation. */
export function translate(p: string): string {
  let out = '';
  let inClass = false;
  let i = 0;
  while (i < p.length) {
    const c = p[i]!;
    if (c === '\\') {
      const [text, length] = re2Escape(p, i, inClass);
      out += text;
      i += length;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      out += c === '[' ? '\\[' : c;
      i++;
      continue;
    }
    if (c === '[') {
      if (p.startsWith('[]', i)) {
        out += '[^\\x{0}-\\x{10FFFF}]';
        i += 2;
        continue;
      }
      if (p.startsWith('[^]', i)) {
        out += '[\\x{0}-\\x{10FFFF}]';
        i += 3;
        continue;
      }
      inClass = true;
      out += '[';
      i++;
      if (p[i] === '^') {
        out += '^';
        i++;
      }
      // A `]` first in a class closes it in ECMA-262 (handled above); nothing else is special here.
      continue;
    }
    if (c === '.') {
      out += DOT;
      i++;
      continue;
    }
    if (c === '(') {
      if (p.startsWith('(?=', i) || p.startsWith('(?!', i) || p.startsWith('(?<=', i) || p.startsWith('(?<!', i))
        throw refuse('uses a lookaround, which RE2 cannot match');
      if (p.startsWith('(?:', i)) {
        out += '(?:';
        i += 3;
        continue;
      }
      if (p.startsWith('(?<', i)) {
        i = p.indexOf('>', i) + 1;
        out += '(?:';
        continue;
      }
      out += '(?:';
      i++;
      continue;
    }
    const cp = p.codePointAt(i)!;
    out += String.fromCodePoint(cp);
    i += cp > 0xffff ? 2 : 1;
  }
  return out;
}

/** The escape at `p[i]` (a backslash) in RE2 syntax, and how many characters it took. */
function re2Escape(p: string, i: number, inClass: boolean): [string, number] {
  const e = p[i + 1]!;
  switch (e) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 't':
    case 'n':
    case 'f':
    case 'r':
      return [`\\${e}`, 2];
    case 'b':
      return [inClass ? '\\x{8}' : '\\b', 2];
    // V8 (with `u`) also finds \B between the two halves of a surrogate pair, where RE2 has no position: no exact translation.
    case 'B':
      throw refuse('uses \\B, which V8 also matches inside a surrogate pair and RE2 cannot');
    case 'v':
      return ['\\x{0B}', 2];
    case 's':
      return [inClass ? SPACES : `[${SPACES}]`, 2];
    case 'S':
      if (inClass) throw refuse('uses \\S inside a class, which mcpguard does not translate');
      return [`[^${SPACES}]`, 2];
    case '0':
      return ['\\x{0}', 2];
    case 'c':
      return [`\\x{${(p.charCodeAt(i + 2) % 32).toString(16)}}`, 3];
    case 'x':
      return [`\\x{${p.slice(i + 2, i + 4)}}`, 4];
    case 'u': {
      if (p[i + 2] === '{') {
        const end = p.indexOf('}', i);
        return [`\\x{${p.slice(i + 3, end)}}`, end - i + 1];
      }
      const unit = parseInt(p.slice(i + 2, i + 6), 16);
      if (unit >= 0xd800 && unit <= 0xdbff && /^\\u[dD][c-fC-F][0-9a-fA-F]{2}$/.test(p.slice(i + 6, i + 12))) {
        const low = parseInt(p.slice(i + 8, i + 12), 16);
        return [`\\x{${((unit - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000).toString(16)}}`, 12];
      }
      if (unit >= 0xd800 && unit <= 0xdfff) throw refuse('names a lone surrogate, which RE2 cannot match');
      return [`\\x{${unit.toString(16)}}`, 6];
    }
    case 'p':
    case 'P': {
      const end = p.indexOf('}', i);
      const name = p.slice(i + 3, end);
      const m = /^(?:(?:General_Category|gc|Script|sc)=)?([A-Za-z_]+)$/.exec(name);
      // A lone name in ECMA-262 is a general category or a binary property; RE2 knows categories and scripts, so one it takes is a category.
      if (m === null || (name.includes('=') === false && !/^[A-Z][a-z]?$/.test(name) && name !== 'Any')) {
        throw refuse(`uses \\${e}{${name.length > 40 ? `${name.slice(0, 40)}…` : name}}, which mcpguard does not translate for RE2`);
      }
      return [`\\${e}{${m[1]}}`, end - i + 1];
    }
    case 'k':
      throw refuse('uses a named backreference, which RE2 cannot match');
    default:
      if (e >= '1' && e <= '9') throw refuse('uses a backreference, which RE2 cannot match');
      // A syntax character or `/` (or `-` in a class): the only identity escapes `u` allows; RE2 takes them as literals.
      return [`\\${e}`, 2];
  }
}

/**
 * Most of a check's time that patterns RE2 cannot run (lookarounds,
 * backreferences …) may take on V8's backtracking engine, each test stopped
 * by a watchdog (vm's timeout) when the time is spent. About 0.1 ms a test
 * (the watchdog's thread; bench/patterns.js), so only those patterns pay it.
 */
export const TIMED_BUDGET_MS = 100;
let timedLeft = TIMED_BUDGET_MS;
/** Made with the first such pattern (a context costs a millisecond or so). */
let timed: { context: vm.Context; script: vm.Script } | undefined;

/** `native` run under the check's time budget; past it, PatternBudgetError (the call is refused as not checkable). */
function timedPattern(source: string, native: RegExp, why: string): LinearPattern {
  const spent = (): PatternBudgetError =>
    new PatternBudgetError(
      `a pattern RE2 cannot run (it ${why}) took more than mcpguard's bound on V8's backtracking engine (${TIMED_BUDGET_MS} ms per check)`,
    );
  return {
    source,
    test(text: string): boolean {
      if (timedLeft <= 0) throw spent();
      const started = performance.now();
      timed ??= { context: vm.createContext({ r: null, s: '' }), script: new vm.Script('r.test(s)') };
      const { context, script } = timed;
      context.r = native;
      context.s = text;
      try {
        return script.runInContext(context, { timeout: Math.max(1, Math.ceil(timedLeft)) }) as boolean;
      } catch (error) {
        if ((error as { code?: unknown }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') {
          // The watchdog fired: the budget is spent, whatever the clock read (it can read a little under it).
          timedLeft = 0;
          throw spent();
        }
        throw error;
      } finally {
        if (timedLeft > 0) timedLeft -= performance.now() - started;
        context.r = null;
        context.s = '';
      }
    },
  };
}

function refuse(why: string): GuardError {
  return new GuardError('schema_unusable', why);
}
