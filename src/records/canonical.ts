/**
 * Canonical JSON for the hash chain. The verifier recomputes every hash from the
 * parsed record, so writer and verifier must agree byte for byte on one spelling
 * of each value: object keys sorted by UTF-16 code units, no whitespace, strings
 * and numbers exactly as JSON.stringify prints them (for the values records hold
 * this is RFC 8785, JCS).
 *
 * Anything JSON cannot spell faithfully (NaN, Infinity, bigint, functions,
 * symbols, cycles) throws instead of being turned into `null`: a record that
 * reads back differently from what was hashed would be evidence of nothing.
 * `undefined` follows JSON.stringify: an object member is left out, an array
 * element becomes `null`, so the written line parses back to the hashed value.
 */
export function canonical(value: unknown): string {
  if (value === undefined) throw new TypeError('canonical: the value is undefined');
  const walk: Walk = { ancestors: [], trail: [], digitKeys: false };
  const sorted = sortedCopy(value, walk);
  // The fast path: JSON.stringify of objects whose keys were inserted in order.
  if (!walk.digitKeys) return JSON.stringify(sorted);
  // JS objects enumerate integer-like keys ("7", "10") first whatever the insertion
  // order, so such trees are written member by member in sorted order. (An array
  // replacer for JSON.stringify would apply its key list to every nested object and
  // read inherited names like "__proto__" off objects that lack them.)
  return writeSorted(sorted);
}

/** JSON text of a checked, copied tree, with object keys in sorted order. */
function writeSorted(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : writeSorted(item))).join(',')}]`;
  const object = value as Record<string, unknown>;
  const members = Object.keys(object)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${writeSorted(object[key])}`);
  return `{${members.join(',')}}`;
}

interface Walk {
  ancestors: object[];
  /** Keys and indexes down to the current value; made into text only for an error. */
  trail: (string | number)[];
  digitKeys: boolean;
}

// A copy with every object's keys inserted in sorted order, checking on the way
// that JSON can spell each value.
function sortedCopy(value: unknown, walk: Walk): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical: ${pathOf(walk.trail)} is ${value}, which JSON cannot represent`);
      return value;
    case 'object':
      if (value === null) return null;
      break;
    default:
      throw new TypeError(`canonical: ${pathOf(walk.trail)} is a ${typeof value}, which JSON cannot represent`);
  }
  const object = value as { toJSON?: () => unknown } & Record<string, unknown>;
  if (typeof object.toJSON === 'function') return sortedCopy(object.toJSON(), walk);
  if (walk.ancestors.includes(object)) throw new TypeError(`canonical: ${pathOf(walk.trail)} refers back to itself`);
  walk.ancestors.push(object);
  let copy: unknown[] | Record<string, unknown>;
  if (Array.isArray(object)) {
    // An index loop reaches holes too; undefined elements stay undefined and print as null.
    copy = new Array<unknown>(object.length);
    for (let i = 0; i < object.length; i++) copy[i] = object[i] === undefined ? undefined : step(walk, i, object[i]);
  } else {
    copy = {};
    for (const key of Object.keys(object).sort()) {
      if (object[key] === undefined) continue;
      if (!walk.digitKeys && /^\d+$/.test(key)) walk.digitKeys = true;
      const member = step(walk, key, object[key]);
      // Assigning "__proto__" would set the prototype; JSON.parse makes it an own key, and so must we.
      if (key === '__proto__') Object.defineProperty(copy, key, { value: member, enumerable: true, writable: true, configurable: true });
      else copy[key] = member;
    }
  }
  walk.ancestors.pop();
  return copy;
}

function step(walk: Walk, at: string | number, value: unknown): unknown {
  walk.trail.push(at);
  const copy = sortedCopy(value, walk);
  walk.trail.pop();
  return copy;
}

function pathOf(trail: (string | number)[]): string {
  return `$${trail.map((at) => (typeof at === 'number' ? `[${at}]` : `.${at}`)).join('')}`;
}
