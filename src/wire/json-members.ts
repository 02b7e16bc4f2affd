/**
 * The members of the objects json-scan.ts records, behind the read side of a
 * Map (MemberMap). A small call's two frames record four objects (the
 * request, its params, the response, its result) with two to four members
 * each, and what they cost was most of the scanner's allocations per call,
 * so they are kept as small as the members allow:
 *
 * - up to two members: one object with a field per name and value;
 * - up to four: the same with four pairs;
 * - up to eight: names and values alternating in one exact-size array
 *   (lookups compare at most eight names);
 * - more: a Map.
 *
 * A scalar member starting in the first MiB and shorter than 256 bytes is
 * kept as one small integer (type, start and length) rather than a node: its
 * node is made only when `get` or iteration asks for it, and kept, so every
 * ask gets the same node. The JSON-RPC envelope's scalars (`jsonrpc`, `id`,
 * `method`, a tool's name) are read through `readMember`, which fills the
 * caller's scratch node instead, and so never get one. The packed integer
 * holds the type and span themselves: nothing reads the frame's bytes later.
 * Keys are unique (the scan rejects repeats); a map never changes once
 * handed out.
 */
import type { JsonNode, JsonType, MemberMap } from './json-scan.js';

/** A recorded member's value: its node, or a packed scalar (see `packScalar`). */
export type MemberValue = JsonNode | number;

/** JsonType by code, for packed scalars. */
const SCALAR_TYPES: readonly JsonType[] = ['string', 'number', 'true', 'false', 'null'];
/** A scalar is packed when it starts before this offset ... */
const PACKED_START_LIMIT = 1 << 20;
/** ... and is shorter than this: `((start * 256) + length) * 8 + type code` then stays below 2^31 (a V8 small integer, no allocation). */
const PACKED_LENGTH_LIMIT = 1 << 8;
/** Objects with more members than this get a Map. */
const LIST_LIMIT = 8;

/** The code of a scalar's type in SCALAR_TYPES, from its first byte (a valid scalar's). */
function scalarCode(firstByte: number): number {
  if (firstByte === 0x22) return 0;
  if (firstByte === 0x74) return 2;
  if (firstByte === 0x66) return 3;
  if (firstByte === 0x6e) return 4;
  return 1;
}

/** A recorded scalar member's value: packed when it fits, else its node. */
export function scalarValue(firstByte: number, start: number, end: number): MemberValue {
  if (start >= PACKED_START_LIMIT || end - start >= PACKED_LENGTH_LIMIT) return { type: SCALAR_TYPES[scalarCode(firstByte)]!, start, end };
  return ((start * PACKED_LENGTH_LIMIT + (end - start)) << 3) | scalarCode(firstByte);
}

function nodeOf(value: MemberValue): JsonNode {
  if (typeof value !== 'number') return value;
  const span = value >>> 3;
  return { type: SCALAR_TYPES[value & 7]!, start: span >>> 8, end: (span >>> 8) + (span & 0xff) };
}

function readValue(value: MemberValue, into: JsonNode): void {
  if (typeof value === 'number') {
    const span = value >>> 3;
    into.type = SCALAR_TYPES[value & 7]!;
    into.start = span >>> 8;
    into.end = (span >>> 8) + (span & 0xff);
  } else {
    into.type = value.type;
    into.start = value.start;
    into.end = value.end;
  }
}

/** What the three small containers share: lookups by slot, nodes made on first ask. */
abstract class SlotMembers implements MemberMap {
  abstract readonly size: number;
  /** The slot of `key`, or -1. */
  protected abstract slot(key: string): number;
  protected abstract name(slot: number): string;
  protected abstract value(slot: number): MemberValue;
  protected abstract keep(slot: number, node: JsonNode): void;

  get(key: string): JsonNode | undefined {
    const slot = this.slot(key);
    return slot < 0 ? undefined : this.nodeAt(slot);
  }

  has(key: string): boolean {
    return this.slot(key) >= 0;
  }

  /** See `readMember`. */
  read(key: string, into: JsonNode): boolean {
    const slot = this.slot(key);
    if (slot < 0) return false;
    readValue(this.value(slot), into);
    return true;
  }

  *keys(): IterableIterator<string> {
    for (let i = 0; i < this.size; i++) yield this.name(i);
  }

  *[Symbol.iterator](): IterableIterator<[string, JsonNode]> {
    for (let i = 0; i < this.size; i++) yield [this.name(i), this.nodeAt(i)];
  }

  private nodeAt(slot: number): JsonNode {
    const value = this.value(slot);
    if (typeof value !== 'number') return value;
    const node = nodeOf(value);
    this.keep(slot, node);
    return node;
  }
}

/** Up to two members, in fields. */
class TwoMembers extends SlotMembers {
  readonly size: number;
  private readonly k0: string | undefined;
  private v0: MemberValue;
  private readonly k1: string | undefined;
  private v1: MemberValue;

  constructor(stack: ReadonlyArray<string | MemberValue>, from: number, count: number) {
    super();
    this.size = count;
    this.k0 = count > 0 ? (stack[from] as string) : undefined;
    this.v0 = count > 0 ? (stack[from + 1] as MemberValue) : 0;
    this.k1 = count > 1 ? (stack[from + 2] as string) : undefined;
    this.v1 = count > 1 ? (stack[from + 3] as MemberValue) : 0;
  }

  protected slot(key: string): number {
    return this.k0 === key ? 0 : this.k1 === key ? 1 : -1;
  }

  protected name(slot: number): string {
    return (slot === 0 ? this.k0 : this.k1)!;
  }

  protected value(slot: number): MemberValue {
    return slot === 0 ? this.v0 : this.v1;
  }

  protected keep(slot: number, node: JsonNode): void {
    if (slot === 0) this.v0 = node;
    else this.v1 = node;
  }
}

/** Three or four members, in fields. */
class FourMembers extends SlotMembers {
  readonly size: number;
  private readonly k0: string;
  private v0: MemberValue;
  private readonly k1: string;
  private v1: MemberValue;
  private readonly k2: string;
  private v2: MemberValue;
  private readonly k3: string | undefined;
  private v3: MemberValue;

  constructor(stack: ReadonlyArray<string | MemberValue>, from: number, count: number) {
    super();
    this.size = count;
    this.k0 = stack[from] as string;
    this.v0 = stack[from + 1] as MemberValue;
    this.k1 = stack[from + 2] as string;
    this.v1 = stack[from + 3] as MemberValue;
    this.k2 = stack[from + 4] as string;
    this.v2 = stack[from + 5] as MemberValue;
    this.k3 = count > 3 ? (stack[from + 6] as string) : undefined;
    this.v3 = count > 3 ? (stack[from + 7] as MemberValue) : 0;
  }

  protected slot(key: string): number {
    return this.k0 === key ? 0 : this.k1 === key ? 1 : this.k2 === key ? 2 : this.k3 === key ? 3 : -1;
  }

  protected name(slot: number): string {
    return (slot === 0 ? this.k0 : slot === 1 ? this.k1 : slot === 2 ? this.k2 : this.k3)!;
  }

  protected value(slot: number): MemberValue {
    return slot === 0 ? this.v0 : slot === 1 ? this.v1 : slot === 2 ? this.v2 : this.v3;
  }

  protected keep(slot: number, node: JsonNode): void {
    if (slot === 0) this.v0 = node;
    else if (slot === 1) this.v1 = node;
    else if (slot === 2) this.v2 = node;
    else this.v3 = node;
  }
}

/** Up to LIST_LIMIT members: names and values alternating in one array of exactly their size. */
class ListMembers extends SlotMembers {
  constructor(private readonly entries: Array<string | MemberValue>) {
    super();
  }

  get size(): number {
    return this.entries.length >> 1;
  }

  protected slot(key: string): number {
    const { entries } = this;
    for (let i = 0; i < entries.length; i += 2) if (entries[i] === key) return i >> 1;
    return -1;
  }

  protected name(slot: number): string {
    return this.entries[2 * slot] as string;
  }

  protected value(slot: number): MemberValue {
    return this.entries[2 * slot + 1] as MemberValue;
  }

  protected keep(slot: number, node: JsonNode): void {
    this.entries[2 * slot + 1] = node;
  }
}

/** No members: one shared map (nothing in it can change). */
const NO_MEMBERS = new TwoMembers([], 0, 0);

/** The members in `stack[from, to)` (name, value, name, value, ...) as a new MemberMap that shares nothing with the stack. */
export function membersFrom(stack: ReadonlyArray<string | MemberValue>, from: number, to: number): MemberMap {
  const count = (to - from) >> 1;
  if (count === 0) return NO_MEMBERS;
  if (count <= 2) return new TwoMembers(stack, from, count);
  if (count <= 4) return new FourMembers(stack, from, count);
  if (count <= LIST_LIMIT) return new ListMembers(stack.slice(from, to));
  const map = new Map<string, JsonNode>();
  for (let i = from; i < to; i += 2) map.set(stack[i] as string, nodeOf(stack[i + 1] as MemberValue));
  return map;
}

/**
 * Member `key` of a recorded object read into `into` (its type, start and
 * end; `members` and `items` are left as they are): `members.get(key)`
 * without making a node for a scalar member that has none yet. False, and
 * `into` untouched, when there is no such member. `into` is the caller's
 * (a scratch node it reuses): nothing keeps it.
 */
export function readMember(members: MemberMap, key: string, into: JsonNode): boolean {
  if (members instanceof SlotMembers) return members.read(key, into);
  const node = members.get(key);
  if (node === undefined) return false;
  readValue(node, into);
  return true;
}
