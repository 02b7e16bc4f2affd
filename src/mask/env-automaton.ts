/**
 * Which env secret values a masked stretch of bytes may be in the middle of.
 *
 * The redactor confirms an env value by its first ENV_COMMIT_BYTES and drops
 * the rest as it arrives. Dropping "while the bytes still follow that value"
 * is not enough: the text may go on as another value with the same first 64
 * bytes, or the real occurrence may start a little later (`AAAA…AAAsecret`
 * after an extra `A`), or a value may start inside a token or header that was
 * masked for another reason and run past its end. An Aho-Corasick automaton
 * over all the values answers all three: its state after a byte is the
 * longest value prefix that ends there. The redactor keeps dropping while that
 * prefix began before the current byte, i.e. inside what was already masked.
 *
 * It runs only on bytes that are being masked, never on the clean stream.
 */

export interface EnvNode {
  /** Length of the value prefix this node stands for. */
  readonly depth: number;
  readonly next: Map<number, EnvNode>;
  fail: EnvNode | null;
}

export class EnvAutomaton {
  readonly root: EnvNode = node(0);
  /** Length of the longest value: older bytes cannot be part of a value that is still open. */
  readonly longest: number;

  constructor(values: readonly Buffer[]) {
    let longest = 0;
    for (const v of values) {
      longest = Math.max(longest, v.length);
      let at = this.root;
      for (const b of v) {
        let child = at.next.get(b);
        if (child === undefined) at.next.set(b, (child = node(at.depth + 1)));
        at = child;
      }
    }
    this.longest = longest;
    // Failure links, breadth first: a node's link is the longest proper suffix that is also a prefix.
    const queue: EnvNode[] = [];
    for (const child of this.root.next.values()) {
      child.fail = this.root;
      queue.push(child);
    }
    for (let k = 0; k < queue.length; k++) {
      const parent = queue[k]!;
      for (const [b, child] of parent.next) {
        child.fail = this.step(parent.fail!, b);
        queue.push(child);
      }
    }
  }

  /** The state after `at` reads `b`. */
  step(at: EnvNode, b: number): EnvNode {
    let n: EnvNode | null = at;
    while (n !== null) {
      const child = n.next.get(b);
      if (child !== undefined) return child;
      n = n.fail;
    }
    return this.root;
  }

  /** The state after reading `buf[from..to)` from `at`; only the last `longest` bytes can matter. */
  feed(at: EnvNode, buf: Buffer, from: number, to: number): EnvNode {
    let n = at;
    if (to - from >= this.longest) {
      n = this.root;
      from = to - this.longest;
    }
    for (let i = from; i < to; i++) n = this.step(n, buf[i]!);
    return n;
  }

  /** The node for the first `length` bytes of `value` (a value the automaton was built with). */
  prefix(value: Buffer, length: number): EnvNode {
    let n = this.root;
    for (let i = 0; i < length; i++) n = n.next.get(value[i]!)!;
    return n;
  }
}

function node(depth: number): EnvNode {
  return { depth, next: new Map(), fail: null };
}
