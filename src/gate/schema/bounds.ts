/**
 * Bounds on the work one check can do, decided once when a schema is
 * compiled. `$ref` makes a schema a graph, so its text can be small and its
 * checks huge or endless:
 *
 * - a cycle of subschemas that all apply to the same value (`allOf`,
 *   `anyOf`, `$ref`, `if`/`then` …) never ends, whatever the arguments: the
 *   schema is refused. A cycle that passes through a member or an item
 *   (`properties`, `items` …) is a recursive schema; it goes one level
 *   deeper into the arguments each time round, so the arguments bound it.
 * - with `$ref`s followed (each cycle cut where it closes), the schema may
 *   nest at most MAX_SCHEMA_DEPTH subschemas (the stack, as for the text)
 *   and expand to at most MAX_EXPANDED_SUBSCHEMAS (an `allOf` of two
 *   `$ref`s to the next level doubles the work per level: 2^20 subschemas
 *   from a schema of 20 lines).
 *
 * Both walks keep their own stack, so a long `$ref` chain cannot overflow
 * mcpguard's.
 */
import { unusable } from './inspect.js';
import { childrenOf, SAME_VALUE_KEYWORDS } from './keywords.js';
import { MAX_EXPANDED_SUBSCHEMAS, MAX_SCHEMA_DEPTH } from './limits.js';
import { isObject } from '../../base/values.js';

type Node = Record<string, unknown>;
/** The targets of each node's `$ref` / `$recursiveRef`, resolved by the caller. */
export type RefTargets = ReadonlyMap<Node, readonly unknown[]>;

/** Throws GuardError('schema_unusable') when `root` breaks a bound. */
export function checkBounds(root: unknown, targets: RefTargets): void {
  if (!isObject(root)) return;
  refuseEndlessCycles(root, targets);
  measure(root, targets);
}

function edges(node: Node, targets: RefTargets, sameValueOnly: boolean): unknown[] {
  const out: unknown[] = [];
  for (const child of childrenOf(node, false)) {
    if (!sameValueOnly || SAME_VALUE_KEYWORDS.has(child.keyword)) out.push(child.schema);
  }
  const refs = targets.get(node);
  if (refs !== undefined) out.push(...refs);
  return out;
}

interface Frame {
  node: Node;
  next: unknown[];
  i: number;
}

/** Depth-first search over same-value edges only: a back edge is a cycle that never moves into the value. */
function refuseEndlessCycles(root: Node, targets: RefTargets): void {
  const state = new Map<Node, 'open' | 'done'>();
  const stack: Frame[] = [{ node: root, next: edges(root, targets, true), i: 0 }];
  state.set(root, 'open');
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.i === top.next.length) {
      state.set(top.node, 'done');
      stack.pop();
      continue;
    }
    const child = top.next[top.i++];
    if (!isObject(child)) continue;
    const seen = state.get(child);
    if (seen === 'open') throw unusable('a $ref cycle applies the schema to the same value again and again (it never ends)');
    if (seen === 'done') continue;
    state.set(child, 'open');
    stack.push({ node: child, next: edges(child, targets, true), i: 0 });
  }
}

interface MeasureFrame extends Frame {
  size: number;
}

/** Expanded size, with each subschema's size memoised so a DAG costs its number of nodes, not of paths. */
function measure(root: Node, targets: RefTargets): void {
  const size = new Map<Node, number>();
  const open = new Set<Node>([root]);
  const stack: MeasureFrame[] = [{ node: root, next: edges(root, targets, false), i: 0, size: 1 }];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (top.i === top.next.length) {
      stack.pop();
      open.delete(top.node);
      size.set(top.node, top.size);
      if (stack.length > 0) add(stack[stack.length - 1]!, top.size);
      continue;
    }
    const child = top.next[top.i++];
    if (!isObject(child) || open.has(child)) {
      add(top, 1);
      continue;
    }
    const known = size.get(child);
    if (known !== undefined) {
      add(top, known);
      continue;
    }
    if (stack.length > MAX_SCHEMA_DEPTH) {
      throw unusable(`with its $refs followed, the schema nests deeper than ${MAX_SCHEMA_DEPTH} subschemas`);
    }
    open.add(child);
    stack.push({ node: child, next: edges(child, targets, false), i: 0, size: 1 });
  }
}

function add(frame: MeasureFrame, n: number): void {
  frame.size += n;
  if (frame.size > MAX_EXPANDED_SUBSCHEMAS) {
    throw unusable(`with its $refs followed, the schema expands to more than ${MAX_EXPANDED_SUBSCHEMAS} subschemas`);
  }
}
