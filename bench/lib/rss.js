// Memory of another process from procfs (Linux): VmHWM is the kernel's own
// peak-RSS counter, so a sampler only has to read it before the process exits;
// VmRSS is sampled too, to see the shape. Nothing here needs a dependency
// (DEPENDENCIES.md: a direct procfs read costs ~85 µs per sample).
import { readFileSync } from 'node:fs';

/** {hwmKiB, rssKiB} of a live pid, or null once it is gone (or off Linux). */
export function readMemory(pid) {
  let text;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return null;
  }
  const hwm = /^VmHWM:\s+(\d+) kB/m.exec(text);
  const rss = /^VmRSS:\s+(\d+) kB/m.exec(text);
  if (hwm === null || rss === null) return null; // a zombie has no memory lines
  return { hwmKiB: Number(hwm[1]), rssKiB: Number(rss[1]) };
}

/**
 * Sample a pid every `intervalMs` until stopped. `stop()` returns the largest
 * VmHWM and VmRSS seen, the number of samples and the time of the last one.
 */
export function sampleMemory(pid, intervalMs = 20) {
  let peakHwmKiB = 0;
  let peakRssKiB = 0;
  let samples = 0;
  let lastAt = 0n;
  const tick = () => {
    const m = readMemory(pid);
    if (m === null) return;
    samples++;
    lastAt = process.hrtime.bigint();
    if (m.hwmKiB > peakHwmKiB) peakHwmKiB = m.hwmKiB;
    if (m.rssKiB > peakRssKiB) peakRssKiB = m.rssKiB;
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  return {
    /** Take one more sample now (call from the exit path, before reaping if possible). */
    tick,
    stop() {
      clearInterval(timer);
      return { peakHwmKiB, peakRssKiB, samples, lastAt };
    },
  };
}
