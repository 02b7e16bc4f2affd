/**
 * `mcpguard policy test FILE --tool NAME [--args JSON] [--annotations JSON | --tools LIST] [--json]`:
 * what the policy decides for one call, which rule decided it, and why. The
 * same load (loadPolicy) and the same decide() as the relay, over arguments
 * read as the gate reads a call's (CallArgs over their bytes), so a policy
 * can be tried before a server runs behind it. Paths are judged on this
 * machine, from the current directory, as the relay would judge them here.
 * It evaluates one call in a fresh session: no rate limit is reached, and the
 * limits the call would count in are listed instead.
 * With --tools (a saved tools/list), the tool's own definition counts: its
 * inputSchema checked first by the gate's ToolBook, then its annotations.
 *
 * `mcpguard policy check FILE [--tools LIST] [--json]`: the lint of
 * policy-check.ts.
 */
import { parseArgs } from 'node:util';
import { readCapped } from '../base/capped-read.js';
import { EXIT_USAGE, GuardError } from '../base/errors.js';
import { isObject } from '../base/values.js';
import { jsonLine, writeOut } from '../mask/escape.js';
import { processMasker, shownText } from '../mask/mask.js';
import type { JsonNode } from '../wire/json-scan.js';
import { parseFileJson } from '../wire/json-file.js';
import { loadPolicy } from './load.js';
import { lintPolicy, type ListedTool } from './policy-check.js';
import { decide, type PolicyVerdict, verdictWhy } from './policy.js';
import { limitsJson, limitsText } from './verdict.js';
import { loadEngine, ToolSchemas } from './schema/schema.js';
import { CallArgs, ToolBook } from './tools.js';

/** `policy check` found something (a linter's 1; bad usage and a policy not understood stay 125). */
export const EXIT_FINDINGS = 1;
/** Most bytes read from a --tools file (a large server's whole list, schemas and all). */
const MAX_TOOLS_BYTES = 16 * 1024 * 1024;

/** Run `mcpguard policy ACTION ...` (argv after `policy`); resolves to the exit code. */
export async function runPolicyCommand(argv: readonly string[]): Promise<number> {
  const [action, ...rest] = argv;
  if (action !== 'test' && action !== 'check')
    throw usage(`policy: expected 'test' or 'check', got ${action === undefined ? 'nothing' : `'${action}'`} (see mcpguard help policy)`);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(rest, action);
  } catch (error) {
    throw usage(`policy ${action}: ${(error as Error).message}`);
  }
  const [file, extra] = parsed.positionals;
  if (file === undefined || extra !== undefined) throw usage(`policy ${action} takes one policy FILE (see mcpguard help policy)`);
  const tools = parsed.values.tools === undefined ? null : readToolList(parsed.values.tools);
  if (action === 'check') return check(file, tools, parsed.values.json === true);
  const tool = parsed.values.tool;
  if (tool === undefined || tool === '') throw new GuardError('bad_option', '--tool expects the name of a tool');
  const text = parsed.values.args ?? '{}';
  jsonObject('args', text); // checked here; decide() reads them from their bytes, as the gate does
  if (tools !== null && parsed.values.annotations !== undefined)
    throw new GuardError('bad_option', "--annotations and --tools both give the tool's annotations: give one");
  const book = tools === null ? null : toolBook(tools, tool, parsed.values.tools!);
  const annotations =
    book !== null ? book.annotations(tool) : parsed.values.annotations === undefined ? null : jsonObject('annotations', parsed.values.annotations);
  const policy = (await loadPolicy(file))!;
  const bytes = Buffer.from(text, 'utf8');
  const args = new CallArgs(bytes, { start: 0, end: bytes.length } as JsonNode);
  if (book !== null) {
    // The gate's own check, before the policy: arguments the tool's inputSchema refuses never reach it.
    await loadEngine();
    const schema = book.checkNow(tool, args)!;
    if (!schema.ok) return said(parsed.values.json === true, { decision: 'rejected', rule: null, reason: schema.reason, why: schema.reason });
  }
  // As the relay decides with its defaults: --secrets-in-args deny-env; a fresh session's rate windows.
  const verdict = decide(policy, tool, args, annotations, { secrets: 'deny-env' });
  return said(parsed.values.json === true, { ...verdict, why: verdictWhy(verdict) }, verdict);
}

/** What `policy test` prints: `decision: why`, or one JSON object; exit 0 whatever the decision. */
function said(json: boolean, outcome: { decision: string; rule: number | null; reason: string | null; why: string }, verdict?: PolicyVerdict): number {
  if (json) {
    const masker = processMasker();
    const reason = outcome.reason === null ? null : masker.text(outcome.reason);
    process.stdout.write(
      `${jsonLine({ decision: outcome.decision, rule: outcome.rule, reason, why: masker.text(outcome.why), ...(verdict === undefined ? {} : limitsJson(verdict)) })}\n`,
    );
  } else {
    // The schema's refusal names each failing place on a line of its own: those lines stay lines; elsewhere every control character is written out.
    process.stdout.write(
      `${outcome.decision}: ${writeOut(processMasker().text(outcome.why), outcome.decision === 'rejected')}\n${verdict === undefined ? '' : limitsText(verdict)}`,
    );
  }
  return 0;
}

async function check(file: string, tools: ListedTool[] | null, json: boolean): Promise<number> {
  let raw: unknown;
  const policy = (await loadPolicy(file, (value) => (raw = value)))!;
  const findings = lintPolicy(policy, raw, tools);
  if (json) {
    const masker = processMasker();
    process.stdout.write(`${jsonLine(findings.map((f) => ({ ...f, message: masker.text(f.message) })))}\n`);
  } else if (findings.length === 0) {
    process.stdout.write(
      `${shownText(file)}: no findings (${count(policy.rules.length, 'rule')}${tools === null ? '' : `, ${count(tools.length, 'listed tool')}`})\n`,
    );
  } else {
    for (const f of findings) process.stdout.write(`${f.kind}: ${shownText(f.message)}\n`);
  }
  return findings.length === 0 ? 0 : EXIT_FINDINGS;
}

/** The gate's ToolBook over a saved list (no server behind it: the tool must be listed). */
function toolBook(tools: ListedTool[], tool: string, file: string): ToolBook {
  if (!tools.some((t) => t.name === tool)) {
    const names = tools.slice(0, 10).map((t) => JSON.stringify(t.name));
    throw new GuardError(
      'bad_option',
      `--tool ${JSON.stringify(tool)} is not in --tools '${file}' (it lists ${tools.length}: ${names.join(', ')}${tools.length > 10 ? ', …' : ''})`,
    );
  }
  const noServer = {
    toChild: () => {
      throw new Error('policy test has no server');
    },
    diag: () => {},
  };
  // One page, learned as the relay learns a tools/list answer; the session's protocol version is not known here.
  const schemas = new ToolSchemas();
  schemas.learnPage([...tools], true, null);
  return new ToolBook(
    schemas,
    noServer,
    (n) => `policy-test-${n}`,
    () => null,
  );
}

/**
 * A saved tools/list: the `result` object (`{"tools": [...]}`), the whole
 * JSON-RPC response, or a bare array of tools. Each tool must be an object
 * with a string `name`, and no name listed twice (the gate trusts neither).
 */
export function readToolList(path: string): ListedTool[] {
  let read: ReturnType<typeof readCapped>;
  try {
    read = readCapped(path, MAX_TOOLS_BYTES);
  } catch (error) {
    throw new GuardError('bad_option', `--tools cannot read '${path}': ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
  if (read.tooBig) throw new GuardError('bad_option', `--tools '${path}' holds more than ${MAX_TOOLS_BYTES} bytes`);
  const parsed = parseFileJson(read.bytes.toString('utf8'));
  if (!parsed.ok) throw new GuardError('bad_option', `--tools '${path}': not JSON: ${parsed.reason}`);
  let list: unknown = parsed.value;
  if (isObject(list) && isObject(list.result)) list = list.result;
  if (isObject(list)) list = list.tools;
  if (!Array.isArray(list))
    throw new GuardError('bad_option', `--tools '${path}': expected a tools/list result ({"tools": [...]}), its JSON-RPC response, or an array of tools`);
  const seen = new Set<string>();
  list.forEach((tool, i) => {
    if (!isObject(tool) || typeof tool.name !== 'string')
      throw new GuardError('bad_option', `--tools '${path}': tools[${i}] is not a tool with a string "name"`);
    if (seen.has(tool.name)) throw new GuardError('bad_option', `--tools '${path}': the tool ${JSON.stringify(tool.name)} is listed twice`);
    seen.add(tool.name);
  });
  return list as ListedTool[];
}

function parse(args: string[], action: 'test' | 'check') {
  const parsed = parseArgs({
    args,
    options: { tool: { type: 'string' }, args: { type: 'string' }, annotations: { type: 'string' }, tools: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
  if (action === 'check')
    for (const name of ['tool', 'args', 'annotations'] as const)
      if (parsed.values[name] !== undefined) throw new Error(`--${name} is an option of policy test, not of policy check`);
  return parsed;
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

/** `1 rule`, `2 rules`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
