// Micro-benchmark of the pins (src/pins): what one tools/list of 200 tools
// costs mcpguard on its way to the client.
//
//   npm run build && node bench/pins-hash.js [--quick]
//
// The 200 tools are server-everything's 13 (bench/fixtures/everything-tools.json),
// repeated under new names. Rows (median over rounds, per whole list):
// - digest: pinnedPart + canonical JSON + SHA-256 of each of the 200 tools;
// - compare: PinGuard.listed on the 200 tools against their pin (nothing changed:
//   the steady state of every later session, no file written);
// - first pin: PinGuard.listed in a fresh state directory (hash, and write the
//   0600 file: temporary file, fsync, rename);
// - hidden characters (ToolHooks.page, --sanitize on): the byte test that finds
//   nothing, and the walk of every tool when one character is hidden;
// - a whole page: pins compare and hidden-character check, as the gate runs it
//   (the relay's scan and the gate's JSON.parse of the list come before, not timed).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { digest, pinnedPart } from '../dist/pins/definition.js';
import { PinGuard } from '../dist/pins/guard.js';
import { ToolHooks } from '../dist/pins/hooks.js';
import { scanJson } from '../dist/wire/json-scan.js';
import { median } from './lib/stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const QUICK = process.argv.includes('--quick');
const ROUNDS = QUICK ? 30 : 300;
const base = JSON.parse(readFileSync(join(ROOT, 'bench', 'fixtures', 'everything-tools.json'), 'utf8')).tools;
const tools = Array.from({ length: 200 }, (_, i) => ({ ...base[i % base.length], name: `${base[i % base.length].name}_${i}` }));
const frame = Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: 2, result: { tools } })}\n`);
const quiet = { diag: () => {}, record: () => {} };

function time(fn) {
  const samples = [];
  for (let i = 0; i < ROUNDS; i++) {
    const start = process.hrtime.bigint();
    fn(i);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}

const dirs = [];
const stateDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'mcpguard-bench-pins-'));
  dirs.push(dir);
  return dir;
};
const guard = (dir, mode = 'ask') => new PinGuard({ mode, name: null, command: 'bench server', stateDir: dir }, quiet);

// Warm the code paths once.
for (let i = 0; i < 20; i++) for (const t of tools) digest(pinnedPart(t));

const rows = [];
rows.push([
  'digest 200 tools',
  time(() => {
    for (const t of tools) digest(pinnedPart(t));
  }),
]);
const steady = stateDir();
guard(steady).listed(tools, true, true);
rows.push(['compare 200 tools with their pin (new PinGuard: reads the file)', time(() => guard(steady).listed(tools, true, true))]);
const loaded = guard(steady);
loaded.listed(tools, true, true);
rows.push(['compare 200 tools with their pin (pin loaded)', time(() => loaded.listed(tools, true, true))]);
rows.push(['first pin of 200 tools (hash + write 0600 file, fsync, rename)', time(() => guard(stateDir()).listed(tools, true, true))]);
const scanned = () => {
  const message = scanJson(frame).value;
  const result = message.members.get('result');
  const node = scanJson(frame, result.members.get('tools').start, result.members.get('tools').end).value;
  return { result, node };
};
// The relay has scanned the frame and the gate has parsed the list already (its own cost, before pins): not timed here.
const { result, node } = scanned();
const off = new ToolHooks(
  guard(steady, 'off'),
  { definitions: true, results: false },
  () => {},
  () => {},
);
rows.push(['hidden-character check of the page (nothing hidden: the byte test)', time(() => off.page(frame, result, node, tools, true))]);
const hiddenTools = tools.map((t, i) => (i === 0 ? { ...t, description: `${t.description}\u200b` } : t));
const hiddenFrame = Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: 2, result: { tools: hiddenTools } })}\n`);
const hiddenScan = (() => {
  const r = scanJson(hiddenFrame).value.members.get('result');
  return { r, n: scanJson(hiddenFrame, r.members.get('tools').start, r.members.get('tools').end).value };
})();
rows.push([
  'hidden-character walk of the page (one U+200B: every tool walked)',
  time(() => off.page(hiddenFrame, hiddenScan.r, hiddenScan.n, hiddenTools, true)),
]);
const both = new ToolHooks(
  loaded,
  { definitions: true, results: false },
  () => {},
  () => {},
);
rows.push(['a whole page: pins compare + hidden-character check (--on-tool-change ask)', time(() => both.page(frame, result, node, tools, true))]);
for (const dir of dirs) rmSync(dir, { recursive: true, force: true });

console.log(`pins: one tools/list of 200 tools (${frame.length} bytes), median of ${ROUNDS} rounds`);
const width = Math.max(...rows.map(([label]) => label.length));
for (const [label, ms] of rows) console.log(`  ${label.padEnd(width)}  ${ms.toFixed(3)} ms`);
