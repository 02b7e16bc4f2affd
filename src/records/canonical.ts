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
  const keys = new Set<string>();
  collectKeys(value, keys, [], []);
  // With an array replacer, JSON.stringify writes every object's members in the
  // array's order (integer-like keys included, which plain enumeration would put
  // first). It is several times faster than concatenating the text ourselves.
  return JSON.stringify(value, [...keys].sort());
}

// Every object key at any depth, checking on the way that JSON can spell each value.
// `trail` holds the keys and indexes down to `value`; it becomes text only for an error.
function collectKeys(value: unknown, keys: Set<string>, ancestors: object[], trail: (string | number)[]): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return;
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical: ${pathOf(trail)} is ${value}, which JSON cannot represent`);
      return;
    case 'object':
      if (value === null) return;
      break;
    default:
      throw new TypeError(`canonical: ${pathOf(trail)} is a ${typeof value}, which JSON cannot represent`);
  }
  const object = value as { toJSON?: () => unknown } & Record<string, unknown>;
  if (typeof object.toJSON === 'function') return collectKeys(object.toJSON(), keys, ancestors, trail);
  if (ancestors.includes(object)) throw new TypeError(`canonical: ${pathOf(trail)} refers back to itself`);
  ancestors.push(object);
  if (Array.isArray(object)) {
    // An index loop reaches holes too; JSON.stringify writes them, like undefined, as null.
    for (let i = 0; i < object.length; i++) {
      if (object[i] === undefined) continue;
      trail.push(i);
      collectKeys(object[i], keys, ancestors, trail);
      trail.pop();
    }
  } else {
    for (const key of Object.keys(object)) {
      if (object[key] === undefined) continue;
      keys.add(key);
      trail.push(key);
      collectKeys(object[key], keys, ancestors, trail);
      trail.pop();
    }
  }
  ancestors.pop();
}

function pathOf(trail: (string | number)[]): string {
  return `$${trail.map((step) => (typeof step === 'number' ? `[${step}]` : `.${step}`)).join('')}`;
}
