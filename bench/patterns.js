// What schema patterns and uniqueItems cost now that neither can stall the
// relay (src/gate/schema/pattern.ts, unique.ts): re2js's load, a call's check
// on a schema with a simple pattern, the worst work the per-check budgets
// allow, and the exponential pattern and 20,000-item array that used to hold
// the main thread. `--before=DIR`: a dist/ of a build before, for the
// per-call rows and the bomb (its patterns run on V8).
//   node bench/patterns.js [--before=/path/to/dist]
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const before = process.argv.find((a) => a.startsWith('--before='))?.slice(9);
const load = async (dist) => {
  const schema = await import(join(resolve(dist), 'gate', 'schema', 'schema.js'));
  await schema.loadEngine();
  return schema;
};
const now = await load(join(ROOT, 'dist'));
const was = before === undefined ? null : await load(before);

const time = (f, n) => {
  for (let i = 0; i < Math.min(n, 20000); i++) f(i);
  const a = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f(i);
  return Number(process.hrtime.bigint() - a) / n;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fmt = (ns) => (ns >= 1e6 ? `${(ns / 1e6).toFixed(1)} ms` : `${(ns / 1e3).toFixed(2)} µs`);

// 1. re2js load, in a fresh process (the first schema with a pattern pays it once).
const loads = [];
for (let i = 0; i < 5; i++) {
  loads.push(
    Number(
      execFileSync(
        process.execPath,
        [
          '-e',
          `const a=process.hrtime.bigint();require(${JSON.stringify(join(ROOT, 'node_modules', 're2js'))});process.stdout.write(String(process.hrtime.bigint()-a))`,
        ],
        { encoding: 'utf8' },
      ),
    ),
  );
}
console.log(`re2js load (fresh process, median of 5): ${fmt(median(loads))}`);

// 2. Per call, a schema with a simple pattern (quick check), and the same through the library (minProperties is not in the quick check).
const simple = { type: 'object', properties: { name: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' }, n: { type: 'integer' } }, required: ['name'] };
const variants = {
  'simple pattern, quick check': simple,
  'no pattern, quick check': { ...simple, properties: { name: { type: 'string' }, n: { type: 'integer' } } },
  'simple pattern, library': { ...simple, minProperties: 1 },
  'no pattern, library': { ...simple, properties: { name: { type: 'string' }, n: { type: 'integer' } }, minProperties: 1 },
  'a lookahead (V8 under a watchdog), quick check': {
    ...simple,
    properties: { name: { type: 'string', pattern: '^(?=h)[a-zA-Z0-9_-]{1,64}$' }, n: { type: 'integer' } },
  },
};
for (const [label, inputSchema] of Object.entries(variants)) {
  const row = [];
  for (const [name, mod] of [
    ['now', now],
    ['before', was],
  ]) {
    if (mod === null) continue;
    const tools = new mod.ToolSchemas({ protocolVersion: '2025-06-18' });
    tools.learnPage([{ name: 't', inputSchema }], true);
    const args = Array.from({ length: 8 }, (_, i) => ({ name: `hello_world-${i}`, n: i }));
    if (!tools.checkArgumentsNow('t', args[0]).ok) throw new Error(label);
    row.push(
      `${name} ${fmt(median([1, 2, 3, 4, 5].map(() => time((i) => tools.checkArgumentsNow('t', args[i & 7]), label.includes('watchdog') ? 2000 : 100000))))}`,
    );
  }
  console.log(`per call, ${label}: ${row.join(', ')}`);
}

// 3. The pattern budget: the worst cost per unit (characters × program size) among patterns under the length bound.
const { patternOf, resetPatternBudget, PATTERN_BUDGET } = await import(join(ROOT, 'dist', 'gate', 'schema', 'pattern.js'));
const { RE2JS } = (await import('node:module')).createRequire(import.meta.url)('re2js');
const heavy = `^(?:${Array.from({ length: 60 }, (_, i) => `a${String.fromCharCode(98 + (i % 24))}+`).join('|')})*$`;
for (const [source, text] of [
  ['^[a-z]+$', 'a'],
  ['^\\p{L}+$', 'é'],
  ['^(a|aa|b)*c?$', 'a'],
  ['^(a+)+$', 'a'],
  [heavy, 'ab'],
]) {
  const size = RE2JS.compile(patternOf(source) && source.replace(/\\p\{L\}/, '\\pL')).programSize();
  const chars = Math.floor(PATTERN_BUDGET / size);
  const s = text.repeat(Math.ceil(chars / text.length)).slice(0, chars);
  const ms = median(
    [1, 2, 3].map(() => {
      resetPatternBudget();
      const a = process.hrtime.bigint();
      patternOf(source).test(s);
      return Number(process.hrtime.bigint() - a);
    }),
  );
  console.log(
    `budget: ${source.length > 30 ? `${source.slice(0, 30)}… (${source.length} chars)` : source} size ${size}: ${chars} chars in ${fmt(ms)} (${(ms / PATTERN_BUDGET).toFixed(1)} ns/unit)`,
  );
}

// 4. uniqueItems: the library's loop at the work bound, and 20,000 items past it.
const { UNIQUE_WORK_MAX } = await import(join(ROOT, 'dist', 'gate', 'schema', 'unique.js'));
// An item { k, v } weighs 10 units (8 for the object, 1 per member): n items cost n × 10n.
for (const [label, n] of [
  ["at the work bound (the library's loop)", Math.floor(Math.sqrt(UNIQUE_WORK_MAX / 10))],
  ['past the bound (canonical forms)', 20000],
]) {
  for (const [name, mod] of [
    ['now', now],
    ['before', was],
  ]) {
    if (mod === null || (name === 'before' && n > 5000)) continue;
    const tools = new mod.ToolSchemas({ protocolVersion: '2025-06-18' });
    tools.learnPage([{ name: 'u', inputSchema: { type: 'object', properties: { tags: { type: 'array', uniqueItems: true } } } }], true);
    const items = Array.from({ length: n }, (_, i) => ({ k: i, v: 'same prefix' }));
    const ms = median(
      [1, 2, 3].map(() => {
        const a = process.hrtime.bigint();
        const v = tools.checkArgumentsNow('u', { tags: items });
        if (!v.ok) throw new Error(JSON.stringify(v));
        return Number(process.hrtime.bigint() - a);
      }),
    );
    console.log(`uniqueItems, ${n} objects ${label}: ${name} ${fmt(ms)}`);
  }
}

// 5. The bomb, ^(a+)+$ against a run of a's and one other character.
for (const [name, mod, n] of [
  ['now', now, 40],
  ['now', now, 100000],
  ['before', was, 22],
  ['before', was, 24],
  ['before', was, 25],
]) {
  if (mod === null) continue;
  const tools = new mod.ToolSchemas({ protocolVersion: '2025-06-18' });
  tools.learnPage([{ name: 'b', inputSchema: { properties: { s: { pattern: '^(a+)+$' } } } }], true);
  const a = process.hrtime.bigint();
  const v = tools.checkArgumentsNow('b', { s: `${'a'.repeat(n)}!` });
  console.log(`bomb, ${n} characters: ${name} ${fmt(Number(process.hrtime.bigint() - a))} (${v.ok ? 'passed' : v.kind})`);
}

// 6. Numbers on their digits: the scan of an arguments' text for numbers a double does not hold (every checked call pays it).
const { inexactNumber } = await import(join(ROOT, 'dist', 'gate', 'schema', 'numbers.js'));
const small = Buffer.from('{"path":"/tmp/some/file.txt","n":12,"mode":"w","ids":[1,2,3,4567890123]}');
const large = Buffer.from(JSON.stringify({ path: '/tmp/x', content: 'plain text, 1234567890, more text; '.repeat(30000) }));
const escapes = Buffer.from(JSON.stringify({ path: '/tmp/x', content: 'text 1234567890 "quoted" \\ '.repeat(40000) }));
for (const [label, buf, n] of [
  ['a small call', small, 200000],
  [`${(large.length / 1048576).toFixed(1)} MiB of plain string`, large, 50],
  [`${(escapes.length / 1048576).toFixed(1)} MiB of string, an escaped quote every 30 bytes`, escapes, 50],
]) {
  console.log(`numbers: ${label}: ${fmt(median([1, 2, 3].map(() => time(() => inexactNumber(buf, 0, buf.length), n))))}`);
}
