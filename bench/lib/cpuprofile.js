// Reading a V8 .cpuprofile (from `node --cpu-prof`): self time and total
// (inclusive) time per function, and self time per file. Each sample lasts
// until the next one (timeDeltas[i + 1]); the last one gets the mean interval.
//   node bench/lib/cpuprofile.js FILE.cpuprofile [top]
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';

function keyOf(frame) {
  const name = frame.functionName || '(anonymous)';
  if (frame.url === '') return name;
  return `${name} ${basename(frame.url)}:${frame.lineNumber + 1}`;
}

/**
 * Sums a profile. Times are in ms. With `sinceNs` / `untilNs` (values of
 * process.hrtime.bigint(): V8 and libuv both read CLOCK_MONOTONIC on Linux),
 * only samples taken in that window count.
 */
export function summarize(profile, { sinceNs = null, untilNs = null } = {}) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const { samples, timeDeltas } = profile;
  const mean = (profile.endTime - profile.startTime) / Math.max(1, samples.length);
  const self = new Map();
  const total = new Map();
  const files = new Map();
  let all = 0;
  let idle = 0;
  const sinceUs = sinceNs === null ? -Infinity : Number(sinceNs / 1000n);
  const untilUs = untilNs === null ? Infinity : Number(untilNs / 1000n);
  let at = profile.startTime;
  for (let i = 0; i < samples.length; i++) {
    at += timeDeltas[i];
    const ms = (i + 1 < timeDeltas.length ? timeDeltas[i + 1] : mean) / 1000;
    if (at < sinceUs || at > untilUs) continue;
    const node = byId.get(samples[i]);
    const key = keyOf(node.callFrame);
    all += ms;
    if (key === '(idle)') {
      idle += ms;
      continue;
    }
    self.set(key, (self.get(key) ?? 0) + ms);
    const file = node.callFrame.url === '' ? key : basename(node.callFrame.url);
    files.set(file, (files.get(file) ?? 0) + ms);
    const seen = new Set();
    for (let id = node.id; id !== undefined; id = parent.get(id)) {
      const k = keyOf(byId.get(id).callFrame);
      if (seen.has(k)) continue;
      seen.add(k);
      total.set(k, (total.get(k) ?? 0) + ms);
    }
  }
  const sorted = (m) => [...m.entries()].sort((a, b) => b[1] - a[1]);
  return { allMs: all, idleMs: idle, busyMs: all - idle, self: sorted(self), total: sorted(total), files: sorted(files) };
}

/** A readable report of the top `top` entries of each view. */
export function report(summary, top = 15) {
  const { busyMs, allMs, idleMs } = summary;
  const pct = (ms) => `${((100 * ms) / busyMs).toFixed(1).padStart(5)}%`;
  const rows = (list) => list.slice(0, top).map(([k, ms]) => `  ${ms.toFixed(1).padStart(9)} ms ${pct(ms)}  ${k}`);
  return [
    `profile: ${allMs.toFixed(0)} ms sampled, ${idleMs.toFixed(0)} ms idle, ${busyMs.toFixed(0)} ms busy (shares below are of busy time)`,
    'self time by function:',
    ...rows(summary.self),
    'self time by file:',
    ...rows(summary.files),
    'total (inclusive) time by function:',
    ...rows(summary.total.filter(([k]) => !k.startsWith('('))),
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [file, top] = process.argv.slice(2);
  console.log(report(summarize(JSON.parse(readFileSync(file, 'utf8'))), Number(top ?? 15)));
}
