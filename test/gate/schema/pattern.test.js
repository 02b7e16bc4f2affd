// Schema patterns on RE2 (src/gate/schema/pattern.ts): each ECMA-262 pattern
// (with `u`) is translated to RE2 syntax and must match exactly what V8 matches,
// or be refused. Compared with V8 itself on the patterns real tool schemas use
// and on random patterns and strings (short: V8 backtracks, RE2 does not).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MAX_PATTERN_LENGTH, PatternBudgetError, patternOf, resetPatternBudget } from '../../../dist/gate/schema/pattern.js';

/**
 * The same answer as V8, or a refusal: a pattern RE2 cannot match exactly runs
 * on V8 under a shared time budget, and a busy machine may spend it on a
 * backtracking-heavy random pattern (fail closed, never a different answer).
 */
const agree = (source, text) => {
  resetPatternBudget();
  let ours;
  try {
    ours = patternOf(source).test(text);
  } catch (error) {
    if (error instanceof PatternBudgetError && /V8's backtracking engine/.test(error.message)) return;
    throw error;
  }
  assert.equal(ours, new RegExp(source, 'u').test(text), `${JSON.stringify(source)} on ${JSON.stringify(text)}`);
};

const REAL = [
  '^[a-zA-Z0-9_-]+$',
  '^\\d{4}-\\d{2}-\\d{2}$',
  '^https?://',
  '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$',
  '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  '^(?!)',
  '^\\p{L}[\\p{L}\\p{Nd}_]*$',
  '^\\p{Lu}',
  '^\\p{Script=Greek}+$',
  '^[\\u0041-\\u005A]+$',
  '^\\u{1F600}$',
  '^\\uD83D\\uDE00$',
  '^.$',
  '^[^a]$',
  '^\\S+$',
  '^\\s*$',
  '(^|[;&|] *)rm ',
  '^/home/me/project/',
  '^[[:a]+$',
  '^[\\b]$',
  '^\\cJ$',
  '^\\0$',
  '^(?<year>\\d{4})$',
  '^[]$',
  '^[^]$',
  '^a.b$',
  '^[\\w.-]+$',
  '^\\x41\\/$',
  '^[\\-+]?\\d+(\\.\\d+)?$',
  '^(a+)+$',
  '\\bword\\b',
  '^\\D\\W$',
  '^[😀-😂]$',
  '^\\v\\f\\t$',
  'a{2,3}?b',
  '^(?:ab|a)*$',
];
const TEXTS = [
  '',
  'a',
  'abc',
  'A_b-9',
  '2024-01-31',
  'https://x',
  'me@example.com',
  '0a1b2c3d-0000-4000-8000-00000000abcd',
  'Élan_9',
  'Ωμέγα',
  '😀',
  '😁',
  'a\nb',
  'a\rb',
  'a\u2028b',
  '\u00a0',
  ' \t',
  '\ufeff',
  'x; rm -rf',
  '/home/me/project/x',
  '[',
  ':',
  '\b',
  '\n',
  '\0',
  '2024',
  'AZ',
  'a/',
  '-12.5',
  'aaaa',
  'a word here',
  '1_',
  '\v\f\t',
  'aab',
  'abab',
];

describe('schema patterns on RE2', () => {
  test('patterns real schemas use: the same answers as V8 on every text, or refused', () => {
    for (const source of REAL) {
      let refused = false;
      try {
        patternOf(source);
      } catch {
        refused = true;
      }
      if (refused) continue;
      for (const text of TEXTS) agree(source, text);
    }
  });

  test("what RE2 cannot run (backreferences, lookarounds, untranslated properties, repeat counts past RE2's, long patterns) runs on V8 with the same answers", () => {
    const cases = [
      ['^(a)\\1$', ['aa', 'ab']],
      ['^(?<x>a)\\k<x>$', ['aa', 'ab']],
      ['^a(?=b)', ['ab', 'ac']],
      ['(?<!a)b', ['ab', 'cb']],
      ['^\\p{ASCII}+$', ['abc', 'é']],
      ['^\\p{Letter}+$', ['abc', '1']],
      ['^a{1001}$', ['a'.repeat(1001), 'a']],
      [`^${'a'.repeat(MAX_PATTERN_LENGTH)}$`, ['a'.repeat(MAX_PATTERN_LENGTH), 'a']],
      ['^[\\S]$', ['a', ' ']],
    ];
    for (const [source, texts] of cases) for (const text of texts) agree(source, text);
  });

  test("on V8, a pattern that backtracks exponentially is stopped by the check's time budget: refused as not checkable", () => {
    resetPatternBudget();
    const bomb = patternOf('^(?=a)(a+)+$');
    assert.throws(
      () => bomb.test(`${'a'.repeat(40)}!`),
      (e) => e instanceof PatternBudgetError && /took more than mcpguard's bound on V8's backtracking engine \(100 ms per check\)/.test(e.message),
    );
    assert.throws(() => bomb.test('aaa'), PatternBudgetError, 'the budget is spent for the rest of the check');
    resetPatternBudget();
    assert.equal(bomb.test('aaa'), true, 'and renewed for the next one');
  });

  test('random patterns and texts: RE2 answers as V8 does', () => {
    const atom = fc.constantFrom(
      'a',
      'b',
      '\\.',
      '-',
      ' ',
      'é',
      '😀',
      '\\n',
      '.',
      '\\d',
      '\\w',
      '\\s',
      '\\S',
      '\\D',
      '\\W',
      '[ab]',
      '[^a]',
      '[a-c]',
      '[^\\s]',
      '[\\s\\d]',
      '[😀é]',
      '\\b',
      '\\B',
      '^',
      '$',
      '\\u00e9',
      '\\u{1F600}',
      '\\p{L}',
      '\\P{L}',
      '[\\p{Lu}x]',
      '[]',
      '[^]',
    );
    const quant = fc.constantFrom('', '', '*', '+', '?', '{2}', '{1,2}', '*?', '+?');
    const pattern = fc
      .letrec((tie) => ({
        node: fc.oneof(
          { depthSize: 'small', withCrossShrink: true },
          fc.tuple(atom, quant).map(([a, q]) => (a === '^' || a === '$' || a === '\\b' || a === '\\B' ? a : a + q)),
          fc.tuple(tie('seq'), fc.constantFrom('(', '(?:', '(?<g>'), quant).map(([s, open, q]) => `${open}${s})${q}`),
          fc.tuple(tie('seq'), tie('seq')).map(([x, y]) => `${x}|${y}`),
        ),
        seq: fc.array(tie('node'), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('')),
      }))
      .seq.filter((p) => {
        try {
          new RegExp(p, 'u');
          return !p.includes('(?<g>') || p.split('(?<g>').length === 2;
        } catch {
          return false;
        }
      });
    const text = fc
      .array(fc.constantFrom('a', 'b', 'c', '.', '-', ' ', '\u00a0', '\n', '\r', '\u2028', 'é', 'É', '😀', '1', '_', '\t', '\ufeff'), { maxLength: 8 })
      .map((a) => a.join(''));
    fc.assert(
      fc.property(pattern, fc.array(text, { minLength: 1, maxLength: 8 }), (source, texts) => {
        for (const t of texts) agree(source, t);
      }),
      { numRuns: 1500 },
    );
  });
});

describe('re2js loads lazily', () => {
  test('a schema without a pattern never loads it; the first pattern does', async () => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const { ROOT } = await import('../../helpers/run.js');
    const { join } = await import('node:path');
    const script = `
      import { createRequire } from 'node:module';
      const cache = createRequire(import.meta.url).cache;
      const loaded = () => Object.keys(cache).some((k) => k.includes('re2js'));
      const { ToolSchemas } = await import(${JSON.stringify(join(ROOT, 'dist', 'gate', 'schema', 'schema.js'))});
      const tools = new ToolSchemas();
      tools.learnPage([{ name: 'a', inputSchema: { type: 'object', properties: { s: { type: 'string' } } } }, { name: 'b', inputSchema: { properties: { s: { pattern: '^x' } } } }], true);
      await tools.checkArguments('a', { s: 'x' });
      const before = loaded();
      const v = await tools.checkArguments('b', { s: 'y' });
      process.stdout.write(JSON.stringify([before, loaded(), v.ok]));
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, timeout: 30000 });
    assert.deepEqual(JSON.parse(stdout), [false, true, false]);
  });
});

describe('subschemas reached only through a $ref (under a keyword of no meaning)', () => {
  test('their patterns, numbers and uniqueItems are bounded like the others', async () => {
    const { ToolSchemas, loadEngine } = await import('../../../dist/gate/schema/schema.js');
    await loadEngine();
    const tools = new ToolSchemas({ protocolVersion: '2025-06-18' });
    tools.learnPage(
      [
        // biome-ignore lint/correctness/noPrecisionLoss: an integer beyond 2^53 on purpose (the schema must be refused for it)
        { name: 'a', inputSchema: { $ref: '#/x', x: { properties: { n: { maximum: 9007199254740993 } } } } },
        { name: 'b', inputSchema: { $ref: '#/x', x: { properties: { s: { pattern: '^(a)\\1$' } } } } },
        { name: 'c', inputSchema: { $ref: '#/x', x: { properties: { t: { type: 'array', uniqueItems: true } } } } },
      ],
      true,
    );
    const a = await tools.checkArguments('a', { n: 1 });
    assert.equal(a.kind, 'unusable');
    assert.match(a.reason, /holds an integer beyond ±\(2\^53 − 1\) in maximum/);
    assert.equal((await tools.checkArguments('b', { s: 'aa' })).ok, true, 'a backreference runs on V8, timed');
    assert.equal((await tools.checkArguments('b', { s: 'ab' })).errors[0].keyword, 'pattern');
    const items = Array.from({ length: 30000 }, (_, i) => ({ i }));
    assert.equal((await tools.checkArguments('c', { t: items })).ok, true, 'past the work bound, without the pairwise loop');
    assert.equal((await tools.checkArguments('c', { t: [...items, { i: 7 }] })).errors[0].keyword, 'uniqueItems');
  });
});
