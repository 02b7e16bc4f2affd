/**
 * Rate rules: `"limit": {"calls": N, "per": "1m"}` on a policy rule. The
 * rule matches a call once dispatching it would make more than N calls of
 * that tool, through that rule, within the last `per` of this session; below
 * the limit it does not match and evaluation goes on.
 *
 * What counts is a call the server is given: the gate takes a slot when it
 * lets a call go (decide() only says which limits the call would count
 * against), and a call that then never reaches the server (cancelled,
 * withdrawn, its audit record not written, the server's stdin closed) gives
 * its slot back. A call denied or refused anywhere uses nothing up.
 *
 * The window slides: each (rule, tool) keeps the times of its last N
 * dispatches, so the answer is exact and the memory is N numbers per tool
 * a limit rule has seen in its window. The clock is injectable (tests drive
 * it) and monotonic by default: a wall-clock jump neither frees nor blocks calls.
 */
import { performance } from 'node:perf_hooks';

/** A compiled `limit` clause. */
export interface RateLimit {
  calls: number;
  perMs: number;
  /** `per` as written, for reasons. */
  per: string;
}

/** A (rule, tool) window a call would count against if dispatched. */
export interface RateCount {
  rule: number;
  tool: string;
  limit: RateLimit;
}

/** Most calls a limit may allow per window: each is a number kept in memory. */
export const MAX_LIMIT_CALLS = 100_000;
/** Windows kept before the empty ones are swept (each tool seen by each limit rule has one). */
const SWEEP_AT = 1024;

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** Longest duration a rule may name: the longest a Node timer can wait (about 24.8 days). */
export const MAX_RULE_MS = 2 ** 31 - 1;

/** A rule's duration (`"250ms"`, `"30s"`, `"1m"`, `"1h"`, `"1d"`) in ms; throws an Error naming `key` and the value. */
export function ruleDuration(raw: unknown, key: string): number {
  const match = typeof raw === 'string' ? /^([1-9][0-9]{0,9})(ms|s|m|h|d)$/.exec(raw) : null;
  const ms = match === null ? NaN : Number(match[1]) * UNITS[match[2]!]!;
  if (!Number.isSafeInteger(ms) || ms > MAX_RULE_MS)
    throw new Error(`${key} must be a duration such as "250ms", "30s", "1m", "1h" or "1d" (at most 24 days), got ${JSON.stringify(raw)}`);
  return ms;
}

/** Check and compile a `limit` clause; throws an Error saying what is wrong (the caller names the rule). */
export function buildLimit(raw: unknown): RateLimit {
  const shape = '"limit" must be an object: {"calls": N, "per": "1m"}';
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(shape);
  const o = raw as Record<string, unknown>;
  for (const key of Object.keys(o)) if (key !== 'calls' && key !== 'per') throw new Error(`"limit": unknown key ${JSON.stringify(key)} (known: calls, per)`);
  if (!Number.isSafeInteger(o.calls) || (o.calls as number) < 1 || (o.calls as number) > MAX_LIMIT_CALLS)
    throw new Error(`"limit"."calls" must be a whole number from 1 to ${MAX_LIMIT_CALLS}, got ${JSON.stringify(o.calls ?? null)}`);
  return { calls: o.calls as number, perMs: ruleDuration(o.per, '"limit"."per"'), per: o.per as string };
}

/** How a limit is said in a reason: `3 calls per 1m to "shell"`. */
export function limitText(count: RateCount): string {
  const { calls, per } = count.limit;
  return `${calls} call${calls === 1 ? '' : 's'} per ${per} to ${JSON.stringify(count.tool)}`;
}

/**
 * The windows of one session. Lives as long as the gate, which lives as long
 * as the session: a restarted server does not reset them.
 */
export class RateBook {
  /** Times of dispatch, oldest first, by window key. */
  private readonly windows = new Map<string, number[]>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Ms until the window of `count` has room again (0: it has room now). */
  wait(count: RateCount): number {
    const times = this.windows.get(key(count));
    if (times === undefined) return 0;
    const now = this.now();
    prune(times, now - count.limit.perMs);
    return times.length < count.limit.calls ? 0 : Math.max(1, times[0]! + count.limit.perMs - now);
  }

  /**
   * Take a slot in each window for a call about to be dispatched. When one is
   * full (a call dispatched while this one waited for a person), nothing is
   * taken and that window is returned with its wait; else null, and `taken`
   * holds what release() gives back.
   */
  take(counts: readonly RateCount[], taken: Array<[string, number]>): { count: RateCount; waitMs: number } | null {
    for (const count of counts) {
      const waitMs = this.wait(count);
      if (waitMs > 0) return { count, waitMs };
    }
    if (this.windows.size >= SWEEP_AT) this.sweep();
    const now = this.now();
    for (const count of counts) {
      const k = key(count);
      let times = this.windows.get(k);
      if (times === undefined) this.windows.set(k, (times = []));
      times.push(now);
      taken.push([k, now]);
    }
    return null;
  }

  /** A call that took slots never reached the server: its slots are free again. */
  release(taken: ReadonlyArray<[string, number]>): void {
    for (const [k, at] of taken) {
      const times = this.windows.get(k);
      const i = times === undefined ? -1 : times.lastIndexOf(at);
      if (i >= 0) times!.splice(i, 1);
    }
  }

  /** Windows kept (for tests of the memory bound). */
  get size(): number {
    return this.windows.size;
  }

  /** Drop the windows whose every dispatch is older than its rule's `per` (their keys carry it). */
  private sweep(): void {
    const now = this.now();
    for (const [k, times] of this.windows) {
      const perMs = Number(k.slice(0, k.indexOf(':')));
      prune(times, now - perMs);
      if (times.length === 0) this.windows.delete(k);
    }
  }
}

/** `per:rule:tool`: the window's length first, so a sweep can read it. */
function key(count: RateCount): string {
  return `${count.limit.perMs}:${count.rule}:${count.tool}`;
}

/** Drop the times at or before `cutoff` (they left the window). */
function prune(times: number[], cutoff: number): void {
  let n = 0;
  while (n < times.length && times[n]! <= cutoff) n++;
  if (n > 0) times.splice(0, n);
}
