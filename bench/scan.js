#!/usr/bin/env node
// The scanner alone, in MiB per CPU second (this process's CPU time: on a
// shared machine wall time would count waiting for a CPU) per payload kind
// (bench/lib/payloads.js), beside
// the reference scanner (today's before the long-run path, test/reference/)
// and the native floors: buffer.isUtf8 and one memchr pass (indexOf of a byte
// that is not there). Variants interleaved per round, medians over rounds.
// The "pre-scanned" column is what a large frame costs mcpguard in all: the
// frame fed to the pre-scan (src/wire/json-prescan.ts: UTF-8 and the SIMD string
// check) in 64 KiB reads as the splitter does while it arrives, then the
// scanner at the newline, which steps over the strings found valid.
// `--before=DIR` (a built checkout: DIR/dist/) adds that build's scanner and
// pre-scanned figures, interleaved with these (before/after in one run).
// Then the warm-up-order check: fresh processes warm the scanner up in
// different orders of payload kinds and time the long ASCII string after;
// a deoptimised string() that never recovers shows up as one order far slower.
//
//   node bench/scan.js [--quick] [--size=1MiB] [--before=DIR]
//   node bench/scan.js --order=KIND,KIND,...   (one warm-up order, used by the check itself)
import { isUtf8 } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { KINDS, payload } from './lib/payloads.js';

const { values: args } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, size: { type: 'string', default: '1' }, order: { type: 'string' }, before: { type: 'string' } },
});
const SIZE = Math.round(Number.parseFloat(args.size) * 2 ** 20);
const { scanJson } = await import('../dist/wire/json-scan.js');
const { FramePrescan } = await import('../dist/wire/json-prescan.js');
const reference = await import('../test/wire/reference/json-scan-be66652.js');
const before =
  args.before === undefined
    ? null
    : {
        scan: (await import(pathToFileURL(resolve(args.before, 'dist/wire/json-scan.js')).href)).scanJson,
        Prescan: (await import(pathToFileURL(resolve(args.before, 'dist/wire/json-prescan.js')).href)).FramePrescan,
      };

/** The tool result text of the single-flight rows (bench/fixtures/echo-server.js): prose with an escape every ~13 bytes. */
const ECHO_PARAGRAPH = 'entry {"path": "src/app.ts", "ok": true}\tüñíçødé — 数据 ✓ the quick brown fox jumps over the lazy dog\n';
const kindsHere = {
  ...KINDS,
  'tool result text (echo)': (size) =>
    Buffer.from(
      `{"jsonrpc":"2.0","id":7,"result":${JSON.stringify({ content: [{ type: 'text', text: ECHO_PARAGRAPH.repeat(Math.ceil(size / 115)) }], isError: false })}}`,
    ),
};

/** Reads of this size, as a pipe hands them to the splitter. */
const READ_BYTES = 64 * 1024;

/** `buf` pre-scanned as it would arrive, in reads, then scanned whole (the scanner steps over the strings the pre-scan found valid). */
function prescanned(scan, Prescan) {
  const pre = new Prescan();
  return (buf) => {
    for (let filled = Math.min(READ_BYTES, buf.length); ; filled = Math.min(filled + READ_BYTES, buf.length)) {
      pre.advance(buf, filled);
      if (filled === buf.length) break;
    }
    // The notes attach to the Buffer object the line event carries: a fresh one per frame, as there.
    const frame = buf.subarray(0);
    pre.finish(frame);
    check(scan(frame));
  };
}

function check(result) {
  if (!result.ok) throw new Error(`bench payload rejected: ${result.reason} at ${result.offset}`);
}

/** CPU seconds (this process, user + system) per call of `fn`. */
function cpuPer(fn, iterations) {
  const start = process.cpuUsage();
  for (let i = 0; i < iterations; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6 / iterations;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (args.order !== undefined) {
  // One fresh process: warm up in the given order, then time the long ASCII string.
  const kinds = args.order.split(',');
  for (const kind of kinds) {
    const buf = payload(kind, SIZE);
    for (let i = 0; i < 300; i++) check(scanJson(buf));
  }
  const ascii = payload('long ASCII string', SIZE);
  const samples = [];
  // CPU time, not wall time: on a shared machine, waiting for a CPU would pass for a slow scanner.
  for (let r = 0; r < 15; r++) samples.push(cpuPer(() => check(scanJson(ascii)), 20));
  process.stdout.write(`${(SIZE / 2 ** 20 / median(samples)).toFixed(0)}\n`);
  process.exit(0);
}

const rounds = args.quick ? 5 : 15;
const variants = [
  { name: 'scanner', run: (buf) => check(scanJson(buf)) },
  { name: 'reference', run: (buf) => check(reference.scanJson(buf)) },
  { name: 'prescanned', run: prescanned(scanJson, FramePrescan) },
  ...(before === null
    ? []
    : [
        { name: 'scanner before', run: (buf) => check(before.scan(buf)) },
        { name: 'prescanned before', run: prescanned(before.scan, before.Prescan) },
      ]),
  {
    name: 'isUtf8',
    run: (buf) => {
      if (!isUtf8(buf)) throw new Error('not UTF-8');
    },
  },
  {
    name: 'memchr',
    run: (buf) => {
      if (buf.indexOf(0) !== -1) throw new Error('NUL');
    },
  },
];
const rows = [];
for (const kind of Object.keys(kindsHere)) {
  const buf = kindsHere[kind](SIZE);
  const mib = buf.length / 2 ** 20;
  const samples = Object.fromEntries(variants.map((v) => [v.name, []]));
  // Iterations per sample: about 20 ms of the reference scanner.
  const iterations = Math.max(3, Math.round(0.02 / cpuPer(() => variants[1].run(buf), 3)));
  for (let r = -1; r < rounds; r++) {
    for (const v of r % 2 === 0 ? variants : [...variants].reverse()) {
      const s = cpuPer(() => v.run(buf), iterations);
      if (r >= 0) samples[v.name].push(mib / s);
    }
  }
  rows.push({ kind, bytes: buf.length, ...Object.fromEntries(variants.map((v) => [v.name, median(samples[v.name])])) });
}

const fmt = (x) => x.toFixed(0).padStart(8);
process.stdout.write(`scanner MiB per CPU second per payload kind (${(SIZE / 2 ** 20).toFixed(2)} MiB lines, median of ${rounds} interleaved rounds)\n`);
const beforeHeads = before === null ? '' : `${'scan bef'.padStart(9)}${'pre bef'.padStart(9)}`;
process.stdout.write(
  `${'kind'.padEnd(24)}${'scanner'.padStart(8)}${'today'.padStart(8)}${'ratio'.padStart(7)}${'pre-scanned'.padStart(12)}${beforeHeads}${'isUtf8'.padStart(8)}${'memchr'.padStart(8)}\n`,
);
for (const r of rows) {
  const beforeCells = before === null ? '' : ` ${fmt(r['scanner before'])} ${fmt(r['prescanned before'])}`;
  process.stdout.write(
    `${r.kind.padEnd(24)}${fmt(r.scanner)}${fmt(r.reference)}${(r.scanner / r.reference).toFixed(2).padStart(6)}×${fmt(r.prescanned).padStart(12)}${beforeCells}${fmt(r.isUtf8)}${fmt(r.memchr)}\n`,
  );
}
if (before !== null) process.stdout.write(`(scan bef / pre bef: the build in ${args.before})\n`);

// Warm-up orders: each in a fresh process.
const ORDERS = [
  ['long ASCII string'],
  ['dense escapes', 'long ASCII string'],
  ['many small keys', 'dense escapes', 'multibyte text'],
  ['source code as JSON', 'many small keys'],
  ['dense escapes', 'many small keys', 'source code as JSON', 'multibyte text'],
];
const self = fileURLToPath(import.meta.url);
const results = [];
for (const order of ORDERS) {
  const runs = [];
  for (let p = 0; p < (args.quick ? 1 : 3); p++)
    runs.push(
      Number(execFileSync(process.execPath, [self, `--order=${order.join(',')}`, `--size=${args.size}`], { encoding: 'utf8', timeout: 120_000 }).trim()),
    );
  results.push({ order, runs });
}
const best = Math.max(...results.map((r) => median(r.runs)));
process.stdout.write(
  `\nwarm-up order check: long ASCII string MiB per CPU second after warming up in each order (fresh processes; the check uses each order's median)\n`,
);
let worst = Infinity;
for (const { order, runs } of results) {
  // A scanner that stays deoptimised is slow in every process of its order; one slow process is noise.
  worst = Math.min(worst, median(runs));
  process.stdout.write(`  ${runs.map((x) => String(x).padStart(6)).join(' ')}  after ${order.join(' → ')}\n`);
}
const ok = worst >= 0.5 * best;
process.stdout.write(
  `  slowest / fastest = ${(worst / best).toFixed(2)} ${ok ? '✓ no order leaves the scanner deoptimised' : '✗ an order leaves the scanner slow (deoptimised?): see node --trace-deopt'}\n`,
);
