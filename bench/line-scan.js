#!/usr/bin/env node
// The line path alone: classifyFrame (UTF-8, the line scan, the JSON-RPC
// shape) on whole lines, this build against `--before=DIR` (a built
// checkout: DIR/dist/), interleaved per round (A B … B A), medians of CPU
// time. Written for the bare-CR rule (a CR is whitespace only as the line's
// last byte), which sits in the scanner's whitespace loop: the rows are a
// small compact tools/call (the latency path), the same with spaces between
// every token and a CRLF end, and 1 MiB of many small keys with spaces
// between every token (the most whitespace a line can have per byte).
//
//   node bench/line-scan.js --before=DIR [--rounds=15]
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

const { values: args } = parseArgs({ options: { before: { type: 'string' }, rounds: { type: 'string', default: '15' } } });
if (args.before === undefined) throw new Error('--before=DIR is required (a built checkout to compare with)');
const load = async (root) => (await import(pathToFileURL(resolve(root, 'dist/wire/jsonrpc.js')).href)).classifyFrame;
const variants = [
  { name: 'this build', classify: await load(new URL('..', import.meta.url).pathname) },
  { name: 'before', classify: await load(args.before) },
];

const call = {
  jsonrpc: '2.0',
  id: 4711,
  method: 'tools/call',
  params: { name: 'read_text_file', arguments: { path: '/home/alice/projects/notes.md', head: 40 } },
};
/** JSON with a space after every token (no newline: it is one line). */
const spaced = (value) => JSON.stringify(value, null, 1).replace(/\n */g, ' ');
const keys = {};
// About 17 bytes a key spaced: 2^20 / 17 keys make about 1 MiB.
for (let i = 0; i < 2 ** 20 / 17; i++) keys[`k${i}`] = i % 3 === 0 ? `v${i}` : i;
const rows = [
  { kind: 'small tools/call, compact', line: Buffer.from(`${JSON.stringify(call)}\n`) },
  { kind: 'small tools/call, spaced, CRLF', line: Buffer.from(`${spaced(call)}\r\n`) },
  { kind: '1 MiB many small keys, spaced', line: Buffer.from(`{ "jsonrpc": "2.0", "id": 1, "result": { "content": [ ${spaced(keys)} ] } }\n`) },
];

function cpuPer(fn, iterations) {
  const start = process.cpuUsage();
  for (let i = 0; i < iterations; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1e6 / iterations;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const rounds = Number(args.rounds);
const out = [];
for (const { kind, line } of rows) {
  const run = (v) => () => {
    const got = v.classify(line, { allowBatch: false });
    if (got.kind === 'invalid') throw new Error(`${kind}: ${got.reason}`);
  };
  // About 30 ms per sample.
  const iterations = Math.max(3, Math.round(0.03 / cpuPer(run(variants[0]), 200)));
  const samples = variants.map(() => []);
  for (let r = -2; r < rounds; r++) {
    const order = r % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const s = cpuPer(run(variants[i]), iterations);
      if (r >= 0) samples[i].push(s);
    }
  }
  const [now, before] = samples.map(median);
  const small = line.length < 64 * 1024;
  const fmt = (s) => (small ? `${(s * 1e9).toFixed(0)} ns` : `${(line.length / 2 ** 20 / s).toFixed(0)} MiB/s`);
  out.push(`${kind.padEnd(32)} ${fmt(now).padStart(12)} ${fmt(before).padStart(12)}   ${(now / before).toFixed(3)}× the time`);
}
process.stdout.write(`classifyFrame per line, median of ${rounds} interleaved rounds (CPU time): this build, before (${args.before})\n${out.join('\n')}\n`);
