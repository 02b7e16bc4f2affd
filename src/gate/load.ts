/**
 * Loading the gate's inputs at start, before the server is started: the
 * policy (a file, or an object inside --config), checked completely, so a
 * policy that does not parse or a rule that is not understood stops mcpguard
 * with exit 125 and nothing running. The JSON Schema engine is loaded here
 * only when a rule has a `when` clause; otherwise it waits for the first
 * tool schema (start-up does not pay for it).
 */
import { readCapped } from '../base/capped-read.js';
import { GuardError } from '../base/errors.js';
import { parseFileJson } from '../wire/json-file.js';
import { buildPolicy, type Policy } from './policy.js';

/** Most bytes read from a policy file. */
export const MAX_POLICY_BYTES = 1024 * 1024;

/** Load and check a policy (a path, or the object itself); `parsed` sees the file's JSON value (`policy check` reads its rules' keys). */
export async function loadPolicy(value: unknown, parsed?: (raw: unknown) => void): Promise<Policy | null> {
  if (value === null || value === undefined) return null;
  let raw: unknown;
  let source: string;
  if (typeof value === 'string') {
    source = `'${value}'`;
    let read: ReturnType<typeof readCapped>;
    try {
      read = readCapped(value, MAX_POLICY_BYTES);
    } catch (error) {
      throw new GuardError('bad_policy', `--policy cannot read '${value}': ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
    if (read.tooBig) throw new GuardError('bad_policy', `--policy '${value}' holds more than ${MAX_POLICY_BYTES} bytes`);
    const parsed = parseFileJson(read.bytes.toString('utf8'));
    if (!parsed.ok && parsed.syntax) throw new GuardError('bad_policy', `policy '${value}': not JSON: ${parsed.reason}`);
    // A key given twice (`"decision": "deny"`, then `"allow"`): refused, never last-wins.
    if (!parsed.ok) throw new GuardError('bad_policy', `--policy '${value}': ${parsed.reason}`);
    raw = parsed.value;
  } else {
    source = '(the "policy" key of --config)';
    raw = value;
  }
  parsed?.(raw);
  const rules = (raw as { rules?: unknown })?.rules;
  const needsEngine = Array.isArray(rules) && rules.some((rule) => typeof rule === 'object' && rule !== null && 'when' in rule);
  if (!needsEngine)
    return buildPolicy(raw, source, () => {
      throw new Error('no engine');
    });
  const engine = await import('./schema/schema.js');
  await engine.loadEngine();
  return buildPolicy(raw, source, (schema) => engine.compileWhen(schema));
}
