/**
 * A fixed-size ring of items waiting for export: pushing onto a full ring
 * drops the oldest item (the newest calls matter most to whoever is looking
 * at a trace now), and says so, so the exporter can count it.
 */
export class Ring<T> {
  private readonly items: Array<T | undefined>;
  private head = 0;
  length = 0;

  constructor(readonly capacity: number) {
    this.items = new Array<T | undefined>(capacity);
  }

  /** Adds `item`; true when the oldest item was dropped to make room. */
  push(item: T): boolean {
    const full = this.length === this.capacity;
    this.items[(this.head + this.length) % this.capacity] = item;
    if (full) this.head = (this.head + 1) % this.capacity;
    else this.length += 1;
    return full;
  }

  /** Removes and returns up to `n` of the oldest items. */
  take(n: number): T[] {
    const out: T[] = [];
    while (out.length < n && this.length > 0) {
      out.push(this.items[this.head] as T);
      this.items[this.head] = undefined;
      this.head = (this.head + 1) % this.capacity;
      this.length -= 1;
    }
    return out;
  }

  /** Empties the ring; returns how many items it held. */
  clear(): number {
    const n = this.length;
    this.take(n);
    return n;
  }
}
