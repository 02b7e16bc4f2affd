/**
 * `mcpguard policy test FILE --tool NAME [--args JSON] [--annotations JSON] [--json]`:
 * what the policy decides for one call, which rule decided it, and why. The
 * same load (loadPolicy) and the same decide() as the relay, over arguments
 * read as the gate reads a call's (CallArgs over their bytes), so a policy
 * can be tried before a server runs behind it. Paths are judged on this
 * machine, from the current directory, as the relay would judge them here.
 * It evaluates one call in a fresh session: no rate limit is reached, and the
 * limits the call would count in are listed instead.
 */
import { parseArgs } from 'node:util';
import { EXIT_USAGE, GuardError } from '../base/errors.js';
import { isObject } from '../base/values.js';
import { jsonLine } from '../mask/escape.js';
import { processMasker, shownText } from '../mask/mask.js';
import type { JsonNode } from '../wire/json-scan.js';
import { parseFileJson } from '../wire/json-file.js';
import { loadPolicy } from './load.js';
import { decide, verdictWhy } from './policy.js';
import { limitsJson, limitsText } from './verdict.js';
import { CallArgs } from './tools.js';

/** Run `mcpguard policy ACTION ...` (argv after `policy`); resolves to the exit code. */
export async function runPolicyCommand(argv: readonly string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'test') throw usage(`policy: expected 'test', got ${action === undefined ? 'nothing' : `'${action}'`} (see mcpguard help policy)`);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rest);
  } catch (error) {
    throw usage(`policy test: ${(error as Error).message}`);
  }
  const [file, extra] = parsed.positionals;
  if (file === undefined || extra !== undefined) throw usage('policy test takes one policy FILE (see mcpguard help policy)');
  const tool = parsed.values.tool;
  if (tool === undefined || tool === '') throw new GuardError('bad_option', '--tool expects the name of a tool');
  const text = parsed.values.args ?? '{}';
  jsonObject('args', text); // checked here; decide() reads them from their bytes, as the gate does
  const annotations = parsed.values.annotations === undefined ? null : jsonObject('annotations', parsed.values.annotations);
  const policy = (await loadPolicy(file))!;
  const bytes = Buffer.from(text, 'utf8');
  // As the relay decides with its defaults: --secrets-in-args deny-env; a fresh session's rate windows.
  const verdict = decide(policy, tool, new CallArgs(bytes, { start: 0, end: bytes.length } as JsonNode), annotations, { secrets: 'deny-env' });
  const why = verdictWhy(verdict);
  if (parsed.values.json === true) {
    const masker = processMasker();
    const reason = verdict.reason === null ? null : masker.text(verdict.reason);
    process.stdout.write(`${jsonLine({ decision: verdict.decision, rule: verdict.rule, reason, why: masker.text(why), ...limitsJson(verdict) })}\n`);
  } else {
    process.stdout.write(`${verdict.decision}: ${shownText(why)}\n${limitsText(verdict)}`);
  }
  return 0;
}

function parse(args: string[]) {
  return parseArgs({
    args,
    options: { tool: { type: 'string' }, args: { type: 'string' }, annotations: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
}

/** An option's JSON object (no key twice, as the gate reads a call). */
function jsonObject(option: string, text: string): Record<string, unknown> {
  const parsed = parseFileJson(text);
  if (!parsed.ok || !isObject(parsed.value))
    throw new GuardError('bad_option', `--${option} expects a JSON object, got '${text}'${parsed.ok ? '' : `: ${parsed.reason}`}`);
  return parsed.value;
}

function usage(message: string): GuardError {
  return new GuardError('bad_usage', message, EXIT_USAGE);
}
