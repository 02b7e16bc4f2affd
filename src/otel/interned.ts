/**
 * Attribute pairs the span builder makes for span after span (the session's
 * id, `network.transport`, a tool's name, a guardrail's verdict), made once
 * and shared, with their protobuf encoding made once too (encode-proto.ts
 * copies it). A call's span then allocates only what is its own: its ids,
 * times and durations. Values come from both sides (a tool's name, a method),
 * so each key keeps a bounded number of them; past that, pairs are made per
 * span as before.
 */
import { preencode } from './encode-proto.js';
import type { AttributeValue } from './model.js';

/** Distinct values kept per key; the rest are made per span. */
export const MAX_VALUES = 256;

type Pair = readonly [string, AttributeValue];

const pairs = new Map<string, Map<string | number | boolean, Pair>>();

/** The shared `[key, value]` pair (keys are the builder's own literals; values bounded per key). Never for a per-call value such as a duration. */
export function attr(key: string, value: string | number | boolean): Pair {
  let byValue = pairs.get(key);
  if (byValue === undefined) {
    byValue = new Map();
    pairs.set(key, byValue);
  }
  let kv = byValue.get(value);
  if (kv === undefined) {
    kv = [key, value];
    if (byValue.size < MAX_VALUES) {
      preencode(kv);
      byValue.set(value, kv);
    }
  }
  return kv;
}

const joined = new Map<string, Map<string, string>>();

/** `${a} ${b}`, kept for the first MAX_VALUES b's of each a (a span's name: method and tool). */
export function spaced(a: string, b: string): string {
  let byB = joined.get(a);
  if (byB === undefined) {
    if (joined.size >= MAX_VALUES) return `${a} ${b}`;
    byB = new Map();
    joined.set(a, byB);
  }
  let s = byB.get(b);
  if (s === undefined) {
    s = `${a} ${b}`;
    if (byB.size < MAX_VALUES) byB.set(b, s);
  }
  return s;
}

/**
 * Items (a span's attribute pairs, its events) collected into one array kept
 * between spans; `take()` returns an array of exactly their number. A span's attributes then cost that one
 * array, not the stores a growing array leaves behind (a 3-element literal
 * pushed to 15 allocates twice). Not re-entrant: one list per kind of item.
 */
export class Collector<T> {
  private readonly items: T[] = [];
  private n = 0;

  /** Empties the list for a new item. */
  start(): this {
    this.n = 0;
    return this;
  }

  add(item: T): this {
    this.items[this.n++] = item;
    return this;
  }

  /** The items added since start(), as a new array of their exact length. */
  take(): T[] {
    return this.items.slice(0, this.n);
  }
}
