/**
 * Keeps mcpguard's memory flat under a flood of child output. Every read from
 * a pipe arrives in a fresh 64 KiB buffer whose memory lives outside the V8
 * heap; V8 frees it only when a collection finds the wrapper dead, and by
 * default it waits for tens of MiB of such "external" memory first. A minor
 * collection every few MiB of output frees them early: measured on a 1 GiB
 * stderr flood, peak RSS 83 → 54 MiB, and the drain got faster, not slower
 * (bench/run.js, flood row). Without an exposed `gc` this does nothing.
 *
 * Each collection costs ~0.45 ms. Stderr is what floods: nothing paces it,
 * and it is drained as fast as the child writes. Stdout is paced by the
 * protocol (and paused when the client stops reading), and a 1 MiB result
 * paid ~110 µs of collections when its bytes counted fully: stdout bytes count
 * a quarter, so a stdout flood (noise lines) is still reclaimed every 16 MiB.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Output bytes between two minor collections. */
export const RECLAIM_EVERY_BYTES = 4 * 1024 * 1024;
/** A byte of stdout counts this fraction of a stderr byte toward RECLAIM_EVERY_BYTES. */
export const STDOUT_WEIGHT = 1 / 4;

type MinorGc = (options: { type: 'minor' }) => void;

function exposeGc(): MinorGc | null {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as MinorGc) : null;
  } catch {
    return null;
  }
}

/**
 * Keep V8's young generation at its first size. V8 doubles it whenever the
 * bytes that survived since the last doubling exceed its size, so over a
 * long run it grows to its maximum (2 x 16 MiB semi-spaces on 64-bit) and the
 * process's resident memory with it, though what mcpguard allocates dies
 * young (a relayed call, a view's row). Growth factor 1 keeps it at its first
 * size for a little more collecting: a relay idle after 2,000 calls holds
 * ~5 MiB less (bench/README.md, idle row), `activity` of 200,000 calls peaks
 * at ~80 MB instead of ~90. The flag is read each time V8 would grow the
 * space, so setting it after start takes effect. Any failure only costs memory.
 */
export function keepYoungGenerationSmall(): void {
  try {
    setFlagsFromString('--semi-space-growth-factor=1');
  } catch {
    /* an engine without the flag */
  }
}

export class ReadBufferReclaimer {
  private readonly gc = exposeGc();
  private since = 0;

  constructor(private readonly everyBytes: number = RECLAIM_EVERY_BYTES) {}

  /** Count bytes just read from a pipe (stdout ones at STDOUT_WEIGHT); collect once enough have gone by. */
  account(bytes: number, stream: 'stdout' | 'stderr' = 'stderr'): void {
    this.since += stream === 'stdout' ? bytes * STDOUT_WEIGHT : bytes;
    if (this.since < this.everyBytes || this.gc === null) return;
    this.since = 0;
    this.gc({ type: 'minor' });
  }
}
