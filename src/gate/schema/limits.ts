/**
 * The bounds of the schema gate, in one place: inspect.ts and bounds.ts
 * enforce them, the documentation quotes them.
 */

/**
 * Deepest nesting of subschemas in the schema's text (`properties` →
 * `items` → `anyOf` … each counts one). Real tool schemas nest a handful of
 * levels; the library recurses once per level with large stack frames and
 * overflows Node's default stack between 500 and 5,000 levels, so 64 keeps a
 * wide margin wherever in mcpguard's own stack a check starts.
 */
export const MAX_SCHEMA_DEPTH = 64;

/**
 * Most subschemas one value may be checked against with every `$ref`
 * expanded. Tool schemas expand to tens or hundreds; the library checks
 * close to a million subschemas a second once warm (a third of that cold),
 * so the worst schema under the bound costs about 25 ms a check (60 ms the
 * first time).
 */
export const MAX_EXPANDED_SUBSCHEMAS = 20_000;
