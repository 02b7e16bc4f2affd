/**
 * `uniqueItems` in bounded time. The library compares every item with every
 * other (deepCompareStrict for objects): 8,000 items took 5 s, and there is
 * no hook to change how. So before a check the work that loop could do on
 * the value is counted (linear); past UNIQUE_WORK_MAX every array in the
 * value is checked for a repeated item by its canonical form (linear-ish:
 * one sorted-key serialisation per item):
 *
 * - none repeats anywhere: `uniqueItems` holds wherever it applies, so the
 *   library checks the value with it switched off (exact, and linear);
 * - one repeats: the call is refused as not checkable (fail closed), saying
 *   so; the library's loop is never run on it.
 */

/**
 * Items compared times the size of what is compared (see sizeOf), summed over
 * the value's arrays, up to which the library's own loop runs. Measured
 * (bench/patterns.js, load average 9): about 12 ns a unit for small objects,
 * less for primitives, so ~26 ms a check at most: 1,400 numbers, or 450
 * objects of two members.
 */
export const UNIQUE_WORK_MAX = 2 * 1024 * 1024;

type Node = Record<string, unknown>;
/** Comparing two objects or arrays costs deepCompareStrict this many times comparing two primitives, before their members. */
const OBJECT_COST = 8;

/** What to do about `uniqueItems` for one value: check as is, check with it off (no array repeats), or refuse. */
export function uniqueVerdict(value: unknown): 'as-is' | 'off' | string {
  if (work(value) <= UNIQUE_WORK_MAX) return 'as-is';
  const repeated = repeatingArray(value);
  if (repeated === null) return 'off';
  return `an array of ${repeated} items repeats an item, and is too large to check against uniqueItems within mcpguard's bound`;
}

/** The size of each value in the tree, and Σ over arrays of length × the size of their items (stops counting past the bound). */
function work(root: unknown): number {
  // Post-order, on a stack of its own: values may nest deeper than mcpguard's stack.
  const sizes = new Map<object, number>();
  const stack: Array<{ value: unknown; open: boolean }> = [{ value: root, open: false }];
  let total = 0;
  while (stack.length > 0) {
    const top = stack.pop()!;
    const v = top.value;
    if (typeof v !== 'object' || v === null) continue;
    const members: unknown[] = Array.isArray(v) ? v : Object.values(v);
    if (!top.open) {
      stack.push({ value: v, open: true });
      for (const m of members) if (typeof m === 'object' && m !== null) stack.push({ value: m, open: false });
      continue;
    }
    let size = OBJECT_COST;
    for (const m of members) size += sizeOf(m, sizes);
    sizes.set(v, size);
    if (Array.isArray(v)) {
      total += v.length * size;
      if (total > UNIQUE_WORK_MAX) return total;
    }
  }
  return total;
}

/** A primitive is 1 (a long string more); an object or array OBJECT_COST more than its members: deepCompareStrict's fixed cost. */
function sizeOf(v: unknown, sizes: Map<object, number>): number {
  if (typeof v === 'string') return 1 + (v.length >> 4);
  if (typeof v === 'object' && v !== null) return sizes.get(v) ?? 1;
  return 1;
}

/** The length of an array in the value with two equal items (deepCompareStrict's equality), or null. */
function repeatingArray(root: unknown): number | null {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    const members: unknown[] = Array.isArray(v) ? v : Object.values(v);
    if (Array.isArray(v)) {
      // Primitives by value (a Set's SameValueZero is === here: JSON has no NaN), objects and arrays by canonical form.
      const primitives = new Set<unknown>();
      const objects = new Set<string>();
      for (const item of v) {
        const set: Set<unknown> = typeof item === 'object' && item !== null ? objects : primitives;
        const key = set === objects ? canonical(item) : item;
        if (set.has(key)) return v.length;
        set.add(key);
      }
    }
    for (const m of members) stack.push(m);
  }
  return null;
}

/**
 * The value as text, each object's keys sorted: equal for two values exactly
 * when deepCompareStrict finds them equal (String(-0) is "0", as -0 === 0).
 */
function canonical(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v !== 'object' || v === null) return String(v);
  let out: string;
  if (Array.isArray(v)) {
    out = '[';
    for (const item of v) out += `${canonical(item)},`;
    return `${out}]`;
  }
  const keys = Object.keys(v);
  if (keys.length > 1) keys.sort();
  out = '{';
  for (const k of keys) out += `${JSON.stringify(k)}:${canonical((v as Node)[k])},`;
  return `${out}}`;
}
