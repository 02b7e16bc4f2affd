#!/usr/bin/env node
// The scanner alone, in MiB per CPU second (this process's CPU time: on a
// shared machine wall time would count waiting for a CPU) per payload kind
// (bench/lib/payloads.js), beside
// the reference scanner (today's before the long-run path, test/reference/)
// and the native floors: buffer.isUtf8 and one memchr pass (indexOf of a byte
// that is not there). Variants interleaved per round, medians over rounds.
// Then the warm-up-order check: fresh processes warm the scanner up in
// different orders of payload kinds and time the long ASCII string after;
// a deoptimised string() that never recovers shows up as one order far slower.
//
//   node bench/scan.js [--quick] [--size=1MiB]
//   node bench/scan.js --order=KIND,KIND,...   (one warm-up order, used by the check itself)
import { isUtf8 } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { KINDS, payload } from './lib/payloads.js';

const { values: args } = parseArgs({ options: { quick: { type: 'boolean', default: false }, size: { type: 'string', default: '1' }, order: { type: 'string' } } });
const SIZE = Math.round(Number.parseFloat(args.size) * 2 ** 20);
const { scanJson } = await import('../dist/json-scan.js');
const reference = await import('../test/reference/json-scan-be66652.js');

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
  { name: 'isUtf8', run: (buf) => { if (!isUtf8(buf)) throw new Error('not UTF-8'); } },
  { name: 'memchr', run: (buf) => { if (buf.indexOf(0) !== -1) throw new Error('NUL'); } },
];
const rows = [];
for (const kind of Object.keys(KINDS)) {
  const buf = payload(kind, SIZE);
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
process.stdout.write(`${'kind'.padEnd(22)}${'scanner'.padStart(8)}${'today'.padStart(8)}${'ratio'.padStart(7)}${'isUtf8'.padStart(8)}${'memchr'.padStart(8)}\n`);
for (const r of rows) {
  process.stdout.write(`${r.kind.padEnd(22)}${fmt(r.scanner)}${fmt(r.reference)}${(r.scanner / r.reference).toFixed(2).padStart(6)}×${fmt(r.isUtf8)}${fmt(r.memchr)}\n`);
}

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
  for (let p = 0; p < (args.quick ? 1 : 3); p++) runs.push(Number(execFileSync(process.execPath, [self, `--order=${order.join(',')}`, `--size=${args.size}`], { encoding: 'utf8', timeout: 120_000 }).trim()));
  results.push({ order, runs });
}
const best = Math.max(...results.map((r) => median(r.runs)));
process.stdout.write(`\nwarm-up order check: long ASCII string MiB per CPU second after warming up in each order (fresh processes; the check uses each order's median)\n`);
let worst = Infinity;
for (const { order, runs } of results) {
  // A scanner that stays deoptimised is slow in every process of its order; one slow process is noise.
  worst = Math.min(worst, median(runs));
  process.stdout.write(`  ${runs.map((x) => String(x).padStart(6)).join(' ')}  after ${order.join(' → ')}\n`);
}
const ok = worst >= 0.5 * best;
process.stdout.write(`  slowest / fastest = ${(worst / best).toFixed(2)} ${ok ? '✓ no order leaves the scanner deoptimised' : '✗ an order leaves the scanner slow (deoptimised?): see node --trace-deopt'}\n`);
