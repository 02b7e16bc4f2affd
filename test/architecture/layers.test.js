// The layers of src/, held: the order is the one docs/architecture.md lists
// (lowest first), and no folder imports a folder above it — type imports and
// dynamic imports included, so there can be no cycle between folders either.
// Also the layout's other rules: at most two loose files in src/, no file over
// 500 lines, a test/ folder for every src/ folder.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../helpers/run.js';

const SRC = join(ROOT, 'src');

/** The layers, lowest first, as docs/architecture.md lists them under "## Layers" (`1. \`base/\` …`). */
function layers() {
  const doc = readFileSync(join(ROOT, 'docs', 'architecture.md'), 'utf8');
  const section = doc.split(/^## /m).find((s) => s.startsWith('Layers'));
  assert.ok(section, 'docs/architecture.md has a "## Layers" section');
  return [...section.matchAll(/^\d+\. `([a-z-]+)\/`/gm)].map((m) => m[1]);
}

function sources(dir = SRC) {
  return readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
}

/** Every relative module a file names: static imports and re-exports (type-only too) and dynamic import(). */
export function importsOf(text) {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const specs = [];
  // Either quote: the house writes '…', but a "…" import must not slip past.
  for (const m of code.matchAll(/\b(?:import|export)\s[^'";]*?\sfrom\s*(['"])([^'"]+)\1|\bimport\s*\(\s*(['"])([^'"]+)\3\s*\)|\bimport\s+(['"])([^'"]+)\5/g))
    specs.push(m[2] ?? m[4] ?? m[6]);
  return specs.filter((s) => s.startsWith('.'));
}

const folderOf = (file) => file.slice(SRC.length + 1).split('/')[0];

test('importsOf finds every form of import, and nothing in comments', () => {
  const text = [
    "import { a } from './a.js';",
    "import type { B } from '../b/b.js';",
    "export { c } from './c.js';",
    "export type { D } from './d.js';",
    "const e = await import('../e/e.js');",
    "import './f.js';",
    '// import { x } from "./no.js" and from \'./no2.js\'',
    "/* import { y } from './no3.js'; */",
    "import {\n  g,\n  type H,\n} from '../g/g.js';",
    "import { z } from 'node:fs';",
    'import { i } from "../i/i.js";',
    'const j = await import("./j.js");',
  ].join('\n');
  assert.deepEqual(importsOf(text).sort(), ['./a.js', '../b/b.js', './c.js', './d.js', '../e/e.js', './f.js', '../g/g.js', '../i/i.js', './j.js'].sort());
});

test('every folder of src/ is a layer in docs/architecture.md, and no folder imports one above it', () => {
  const order = layers();
  const rank = new Map(order.map((name, i) => [name, i]));
  const folders = readdirSync(SRC).filter((f) => statSync(join(SRC, f)).isDirectory());
  assert.deepEqual([...folders].sort(), [...order].sort(), 'the folders of src/ and the layers of docs/architecture.md');
  const upward = [];
  for (const file of sources()) {
    if (dirname(file) === SRC) continue;
    const from = folderOf(file);
    for (const spec of importsOf(readFileSync(file, 'utf8'))) {
      const target = normalize(join(dirname(file), spec));
      if (!target.startsWith(SRC + '/')) continue;
      const to = folderOf(target);
      if (to === from || !rank.has(to)) continue;
      if (rank.get(to) > rank.get(from)) upward.push(`${relative(ROOT, file)} imports ${spec} (${from} → ${to}, a layer above)`);
    }
  }
  assert.deepEqual(upward, [], `imports that go up a layer:\n${upward.join('\n')}`);
});

test('layout: at most two loose files in src/, none over 500 lines, a test/ folder for every src/ folder', () => {
  const loose = readdirSync(SRC).filter((f) => f.endsWith('.ts'));
  assert.ok(loose.length <= 2, `loose files in src/: ${loose.join(', ')}`);
  const long = sources()
    .map((f) => [relative(ROOT, f), readFileSync(f, 'utf8').split('\n').length - 1])
    .filter(([, n]) => n > 500);
  assert.deepEqual(long, [], 'files over 500 lines');
  const missing = readdirSync(SRC).filter((f) => statSync(join(SRC, f)).isDirectory() && !existsSync(join(ROOT, 'test', f)));
  assert.deepEqual(missing, [], 'src/ folders without a test/ folder');
});
