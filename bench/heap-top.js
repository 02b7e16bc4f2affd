#!/usr/bin/env node
// Where a small call's allocations come from (issue 16): one mcpguard
// connection, `--warmup` untimed calls, then `--calls` calls under V8's
// sampling heap profiler (bench/fixtures/gc-probe.js), objects collected by
// the GC included. Prints bytes per call by allocating function (self), and
// by the first mcpguard frame (dist/) on each sample's stack.
// With --stacks=N, also the N stacks (leaf first, 8 frames) that allocate most.
//   node bench/heap-top.js [--calls=10000] [--warmup=5000] [--top=30] [--stacks=0] [-- mcpguard options]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { probedCalls } from './lib/tail.js';
import { benchHome } from './lib/proc.js';
import { ECHO_SERVER, NODE, guarded } from './lib/variants.js';

const { values, positionals } = parseArgs({
  options: {
    calls: { type: 'string', default: '10000' },
    warmup: { type: 'string', default: '5000' },
    top: { type: 'string', default: '30' },
    stacks: { type: 'string', default: '0' },
  },
  allowPositionals: true,
});
const calls = Number(values.calls);
const file = join(mkdtempSync(join(benchHome, 'heap-')), 'profile.json');
const result = await probedCalls(guarded([NODE, ECHO_SERVER], positionals), calls, Number(values.warmup), { heapProfile: file });
const profile = JSON.parse(readFileSync(file, 'utf8'));
rmSync(benchHome, { recursive: true, force: true });

const self = new Map();
const byOwn = new Map();
const byFile = new Map();
const byStack = new Map();
const add = (map, key, bytes) => map.set(key, (map.get(key) ?? 0) + bytes);
const where = (f) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/(dist|node_modules)\//, '$1/').replace(/^node:/, 'node:')}:${f.lineNumber + 1}`;
let total = 0;
(function walk(node, stack) {
  const here = [...stack, node.callFrame];
  const bytes = node.selfSize;
  if (bytes > 0) {
    total += bytes;
    add(self, where(node.callFrame), bytes);
    const own = [...here].reverse().find((f) => f.url.includes('/dist/'));
    add(byOwn, own === undefined ? '(no mcpguard frame)' : where(own), bytes);
    add(byStack, [...here].reverse().slice(0, 8).map(where).join('\n                  < '), bytes);
    add(byFile, own === undefined ? "(no mcpguard frame: Node's streams, timers, ticks)" : own.url.replace(/^.*\/dist\//, 'dist/'), bytes);
  }
  for (const child of node.children) walk(child, here);
})(profile.head, []);

const show = (title, map) => {
  process.stdout.write(`\n${title}\n`);
  for (const [key, bytes] of [...map].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
    process.stdout.write(`${(bytes / calls).toFixed(0).padStart(7)} B/call  ${key}\n`);
  }
};
process.stdout.write(
  `mcpguard ${positionals.join(' ')}: ${calls} calls after ${values.warmup}; sampled ${(total / calls).toFixed(0)} B/call; probe ${result.bytesPerCall.toFixed(0)} B/call, ${result.scavengesPer10k.toFixed(1)} scavenges/10k, CPU ${result.cpuPerCall.toFixed(1)} µs/call\n`,
);
show('by allocating function (self)', self);
show('by nearest mcpguard frame', byOwn);
show('by the file of the nearest mcpguard frame', byFile);
if (Number(values.stacks) > 0) show('by stack (leaf first)', new Map([...byStack].sort((a, b) => b[1] - a[1]).slice(0, Number(values.stacks))));
