/**
 * Attribute pairs the span builder makes for span after span (the session's
 * id, `network.transport`, a tool's name, a guardrail's verdict), made once
 * and shared, with their protobuf encoding made once too (encode-proto.ts
 * copies it). A call's span then allocates only what is its own: its ids,
 * times and durations. Values come from both sides (a tool's name, a method),
 * so each key keeps a bounded number of them; past that, pairs are made per
 * span as before.
 */
import { keyValue, preencode, stringField, Writer } from './encode-proto.js';
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

/**
 * Consecutive shared pairs written as one: their KeyValue bytes, tagged as a
 * span's attributes (field 9) and as an event's (field 3), concatenated once.
 * A span then copies one run where it looked up and copied each pair.
 */
export interface AttrRun {
  readonly pairs: readonly Pair[];
  readonly span: Uint8Array;
  readonly event: Uint8Array;
}

/** A run of `pairs` (shared pairs from attr(), so that their encoding is made once). */
export function attrRun(pairs: readonly Pair[]): AttrRun {
  return { pairs, span: encodeRun(pairs, 9), event: encodeRun(pairs, 3) };
}

function encodeRun(pairs: readonly Pair[], field: number): Uint8Array {
  const w = new Writer(256);
  for (const kv of pairs) keyValue(w, field, kv);
  return Buffer.from(w.done());
}

type Key = string | number | boolean | null;

/** Runs kept per cache: the shapes calls take in a session are few (a handful of tools and states). */
const RUNS_KEPT = 8;

/**
 * Runs by up to five key values (compared with ===, no string made to look
 * one up), the last RUNS_KEPT kept; past that the oldest is replaced. The
 * caller makes a run from exactly the values it keys it by, so a run found
 * is the run those values make.
 */
export class RunCache {
  private readonly keys: Key[] = [];
  private readonly runs: AttrRun[] = [];
  private next = 0;

  find(a: Key, b: Key, c: Key, d: Key, e: Key): AttrRun | null {
    const k = this.keys;
    for (let i = 0; i < this.runs.length; i++) {
      const at = 5 * i;
      if (k[at] === a && k[at + 1] === b && k[at + 2] === c && k[at + 3] === d && k[at + 4] === e) return this.runs[i]!;
    }
    return null;
  }

  put(a: Key, b: Key, c: Key, d: Key, e: Key, run: AttrRun): AttrRun {
    const i = this.runs.length < RUNS_KEPT ? this.runs.length : this.next;
    this.next = (i + 1) % RUNS_KEPT;
    this.runs[i] = run;
    const at = 5 * i;
    this.keys[at] = a;
    this.keys[at + 1] = b;
    this.keys[at + 2] = c;
    this.keys[at + 3] = d;
    this.keys[at + 4] = e;
    return run;
  }
}

/** masker.text of a value that repeats from call to call (a method, a tool's name), the last one kept. */
export class LastText {
  private masker: unknown = null;
  private input = '';
  private output = '';

  of(masker: { text(input: string): string }, input: string): string {
    if (input !== this.input || masker !== this.masker) {
      this.output = masker.text(input);
      this.input = input;
      this.masker = masker;
    }
    return this.output;
  }
}

/** The key of an attribute a span writes with its own value (an id, a duration): its KeyValue.key field encoded once. */
export class OwnKey {
  readonly field: Uint8Array;

  constructor(readonly text: string) {
    this.field = stringField(1, text);
  }
}
