/**
 * Which JSON Schema dialect a tool's schema is written in. The MCP spec says:
 * the schema's own `$schema` when it has one; otherwise JSON Schema 2020-12
 * from protocol 2025-11-25 on, and draft-07 before it (the SDKs that made
 * those schemas wrote draft-07). mcpguard checks draft-07, 2019-09 and
 * 2020-12; any other `$schema` makes the schema unusable (fail closed), never
 * a guess at a near dialect.
 */
import { GuardError } from '../../base/errors.js';
import { clip } from '../../base/values.js';

/** The dialects the engine checks, spelled as the library names them. */
export type Dialect = '7' | '2019-09' | '2020-12';

/** The first protocol revision whose schemas default to 2020-12. */
export const DEFAULT_2020_FROM = '2025-11-25';

/**
 * `$schema` URIs by dialect. Both schemes are accepted: the identifiers are
 * names, not addresses (nothing is fetched), and generators differ on the
 * scheme; an empty fragment (`#`) is the same name.
 */
const BY_URI: ReadonlyMap<string, Dialect> = new Map([
  ['json-schema.org/draft-07/schema', '7'],
  ['json-schema.org/draft/2019-09/schema', '2019-09'],
  ['json-schema.org/draft/2020-12/schema', '2020-12'],
]);

/** Human names, for reasons and errors. */
export const DIALECT_NAMES: Readonly<Record<Dialect, string>> = {
  '7': 'draft-07',
  '2019-09': 'draft 2019-09',
  '2020-12': 'draft 2020-12',
};

/** The dialect a `$schema` value names, or undefined for one mcpguard does not check. */
export function dialectOfUri(uri: string): Dialect | undefined {
  const m = /^https?:\/\/(.*?)#?$/.exec(uri);
  return m === null ? undefined : BY_URI.get(m[1]!);
}

/** The dialect of a schema without `$schema`, from the session's protocol version (null: not known yet, the current spec's default). */
export function defaultDialect(protocolVersion: string | null | undefined): Dialect {
  if (typeof protocolVersion !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(protocolVersion)) return '2020-12';
  return protocolVersion >= DEFAULT_2020_FROM ? '2020-12' : '7';
}

/**
 * The dialect `schema` is checked in: its root `$schema`, else the default
 * for the protocol. Throws GuardError('schema_unusable') naming the
 * `$schema` when it is not one mcpguard checks.
 */
export function resolveDialect(schema: unknown, protocolVersion: string | null | undefined): Dialect {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema) || !Object.hasOwn(schema, '$schema')) {
    return defaultDialect(protocolVersion);
  }
  const uri = (schema as Record<string, unknown>).$schema;
  if (typeof uri !== 'string') throw new GuardError('schema_unusable', '/$schema: must be a string');
  const dialect = dialectOfUri(uri);
  if (dialect === undefined) {
    throw new GuardError('schema_unusable', `unsupported dialect ${JSON.stringify(clip(uri, 101))} in $schema (mcpguard checks draft-07, 2019-09 and 2020-12)`);
  }
  return dialect;
}
