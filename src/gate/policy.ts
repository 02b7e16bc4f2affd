/**
 * The policy: which tool calls may run, which must be asked about, which are
 * refused. A JSON file, loaded and checked once at start (a file that does
 * not parse, or a rule that is not understood, stops mcpguard: a policy that
 * silently means less than it says is worse than none).
 *
 *   { "default": "allow", "hide_denied": true,
 *     "rules": [ { "tool": "delete_*", "decision": "ask" },
 *                { "tool": "exec", "when": { ...JSON Schema over the arguments... }, "decision": "deny", "reason": "..." },
 *                { "annotations": { "destructiveHint": true }, "decision": "ask" } ] }
 *
 * The first rule that matches decides, else `default`. `when` is a JSON
 * Schema over the call's arguments, run by the same engine as the tools' own
 * schemas: no matcher language of its own. `annotations` are the server's
 * claims about its tool, so a rule keyed on them may only ask or deny.
 * `paths` fences path arguments to roots (paths.ts); a path it cannot judge
 * is handled like unknown annotations: the stricter of both outcomes;
 * `hosts` does the same for URL arguments (hosts.ts). `limit` matches once
 * the call would exceed a rate (rates.ts); `timeout` sets the call's deadline
 * (a rule with only a timeout decides nothing and evaluation goes on);
 * `secrets` matches arguments that carry a secret (secrets.ts).
 */
import { GuardError, EXIT_USAGE } from '../base/errors.js';
import type { ArgsValue } from './tools.js';
import { isObject } from '../base/values.js';
import { buildPaths, judgePaths, type PathPlace, type PathRule } from './paths.js';
import { buildHosts, judgeHosts, type HostRule } from './hosts.js';
import type { NamedJudgement } from './named-args.js';
import { buildLimit, ruleDuration, type RateCount, type RateLimit } from './rates.js';
import { findSecret, secretText } from './secrets.js';
import { finish, FRESH, join, overText, stricter, STRICTNESS, type DecideContext, type Extra } from './verdict.js';

export { overText, type DecideContext } from './verdict.js';

export type PolicyDecision = 'allow' | 'ask' | 'deny';
const DECISIONS: readonly PolicyDecision[] = ['allow', 'ask', 'deny'];

/** A compiled `when` clause: does this argument value match? (`args`: where the value came from, its bytes too when known.) */
export type Predicate = (value: unknown, args?: ArgsValue) => boolean;
/** Compiles a `when` schema; throws an Error saying what is wrong with it. */
export type CompileWhen = (schema: object) => Predicate;

export interface Rule {
  /** 0-based position in the file, as records keep it (`decision.rule`); messages for people say index + 1. */
  index: number;
  tool: RegExp | null;
  toolText: string | null;
  when: Predicate | null;
  annotations: Record<string, unknown> | null;
  /** A `paths` clause (paths.ts), or null. */
  paths: PathRule | null;
  /** A `hosts` clause (hosts.ts), or null. */
  hosts: HostRule | null;
  /** A `limit` clause (rates.ts), or null. */
  limit: RateLimit | null;
  /** `timeout` in ms, or null: the deadline of the calls this rule matches. */
  timeoutMs: number | null;
  /** `secrets: true`: the rule matches only arguments that carry a secret (secrets.ts). */
  secrets: boolean;
  /** null: a rule with only a `timeout`, which decides nothing (evaluation goes on). */
  decision: PolicyDecision | null;
  reason: string | null;
}

export interface Policy {
  defaultDecision: PolicyDecision;
  hideDenied: boolean;
  rules: Rule[];
  /** Any rule reads the arguments (so they must be parsed to decide). */
  readsArguments: boolean;
  /** Some rule has a `limit` (the session then keeps a RateBook). */
  hasLimits: boolean;
  /** Some rule has a `timeout`. */
  hasTimeouts: boolean;
  /** Some rule has `secrets` (the policy then says what secrets in arguments get, not --secrets-in-args). */
  namesSecrets: boolean;
}

/** What the policy decided for one call, and which rule decided it (null: the default). */
export interface PolicyVerdict {
  decision: PolicyDecision;
  rule: number | null;
  reason: string | null;
  /** The deadline a matching rule set (`timeout`), and which rule set it; absent: --call-timeout applies. */
  timeout?: { ms: number; rule: number } | undefined;
  /** The rate windows the call counts against if it is dispatched (limits it passed below); absent: none. */
  counts?: RateCount[] | undefined;
  /** The full window of the `limit` rule that matched (it decided the call); absent: none did. */
  over?: RateCount | undefined;
  /** The arguments carry a secret (a `secrets` rule or --secrets-in-args looked and found one): no session grant answers this call's question. */
  secret?: true | undefined;
}

const TOP_KEYS = new Set(['default', 'hide_denied', 'rules']);
const RULE_KEYS = new Set(['tool', 'when', 'annotations', 'paths', 'hosts', 'limit', 'timeout', 'secrets', 'decision', 'reason']);

/** Check an already-parsed policy value (a `policy` key inside --config). */
export function buildPolicy(raw: unknown, source: string, compileWhen: CompileWhen, place?: PathPlace): Policy {
  if (!isObject(raw)) throw bad(source, 'a policy must be a JSON object');
  for (const key of Object.keys(raw)) if (!TOP_KEYS.has(key)) throw bad(source, `unknown key ${JSON.stringify(key)} (known: ${[...TOP_KEYS].join(', ')})`);
  const defaultDecision = raw.default ?? 'allow';
  if (!isDecision(defaultDecision)) throw bad(source, `"default" must be one of ${DECISIONS.join(', ')}, got ${JSON.stringify(defaultDecision)}`);
  const hideDenied = raw.hide_denied ?? false;
  if (typeof hideDenied !== 'boolean') throw bad(source, `"hide_denied" must be true or false, got ${JSON.stringify(hideDenied)}`);
  const rulesRaw = raw.rules ?? [];
  if (!Array.isArray(rulesRaw)) throw bad(source, '"rules" must be an array');
  const rules = rulesRaw.map((rule, index) => buildRule(rule, index, source, compileWhen, place));
  return {
    defaultDecision,
    hideDenied,
    rules,
    readsArguments: rules.some(conditional),
    hasLimits: rules.some((r) => r.limit !== null),
    hasTimeouts: rules.some((r) => r.timeoutMs !== null),
    namesSecrets: rules.some((r) => r.secrets),
  };
}

function buildRule(raw: unknown, index: number, source: string, compileWhen: CompileWhen, place?: PathPlace): Rule {
  const where = `rule ${index + 1}`; // people count from 1; the record's `decision.rule` is the 0-based index
  if (!isObject(raw)) throw bad(source, `${where} must be an object`);
  for (const key of Object.keys(raw))
    if (!RULE_KEYS.has(key)) throw bad(source, `${where}: unknown key ${JSON.stringify(key)} (known: ${[...RULE_KEYS].join(', ')})`);
  // A rule with only a timeout sets the deadline and decides nothing: it needs no decision.
  const timeoutOnly = raw.decision === undefined && raw.timeout !== undefined;
  if (!timeoutOnly && !isDecision(raw.decision))
    throw bad(source, `${where}: "decision" must be one of ${DECISIONS.join(', ')}, got ${JSON.stringify(raw.decision ?? null)}`);
  if (timeoutOnly && (raw.limit !== undefined || raw.secrets !== undefined || raw.reason !== undefined))
    throw bad(source, `${where}: a rule with "limit", "secrets" or "reason" needs a "decision" (only a rule with just a "timeout" may go without)`);
  if (raw.secrets !== undefined && raw.secrets !== true)
    throw bad(source, `${where}: "secrets" must be true (leave it out otherwise), got ${JSON.stringify(raw.secrets)}`);
  if (raw.limit !== undefined && raw.decision === 'allow')
    throw bad(source, `${where}: a rule with "limit" may only ask or deny (it matches the calls over the limit)`);
  if (raw.tool !== undefined && (typeof raw.tool !== 'string' || raw.tool === '')) throw bad(source, `${where}: "tool" must be a tool name or a * pattern`);
  if (raw.reason !== undefined && typeof raw.reason !== 'string') throw bad(source, `${where}: "reason" must be a string`);
  if (raw.annotations !== undefined && !isObject(raw.annotations)) throw bad(source, `${where}: "annotations" must be an object`);
  if (raw.annotations !== undefined && raw.decision === 'allow') {
    throw bad(source, `${where}: a rule that matches "annotations" may only ask or deny (annotations are the server's own claims)`);
  }
  let when: Predicate | null = null;
  if (raw.when !== undefined) {
    if (!isObject(raw.when) && typeof raw.when !== 'boolean') throw bad(source, `${where}: "when" must be a JSON Schema (an object)`);
    try {
      when = compileWhen(raw.when as object);
    } catch (error) {
      const message = (error as Error).message;
      throw bad(source, `${where}: ${message.startsWith('"when"') ? message : `"when" is not a usable JSON Schema: ${message}`}`);
    }
  }
  let paths: PathRule | null = null;
  let hosts: HostRule | null = null;
  let limit: RateLimit | null = null;
  let timeoutMs: number | null = null;
  try {
    if (raw.paths !== undefined) paths = buildPaths(raw.paths, place);
    if (raw.hosts !== undefined) hosts = buildHosts(raw.hosts);
    if (raw.limit !== undefined) limit = buildLimit(raw.limit);
    if (raw.timeout !== undefined) timeoutMs = ruleDuration(raw.timeout, '"timeout"');
  } catch (error) {
    throw bad(source, `${where}: ${(error as Error).message}`);
  }
  return {
    index,
    tool: raw.tool === undefined ? null : glob(raw.tool as string),
    toolText: (raw.tool as string | undefined) ?? null,
    when,
    annotations: (raw.annotations as Record<string, unknown> | undefined) ?? null,
    paths,
    hosts,
    limit,
    timeoutMs,
    secrets: raw.secrets === true,
    decision: timeoutOnly ? null : (raw.decision as PolicyDecision),
    reason: (raw.reason as string | undefined) ?? null,
  };
}

/**
 * Decide a call. `args` is read only when a rule with `when` is reached;
 * `annotations` are the tool's as the server advertised them, or null when
 * the server has not listed the tool (--validate-args off lets such a call
 * reach the policy). Unknown annotations are not "absent": a rule on them
 * might match or not, so the call gets the stricter of both outcomes (the
 * rule's decision, and what the rules after it decide). Annotation rules
 * only ask or deny, so this never lets through what a listing would stop.
 *
 * `context.rates` are the session's windows (none: a fresh session, where no
 * limit is reached); `context.secrets` is --secrets-in-args, which applies
 * only when no rule names `secrets` (the policy then says it all). A `limit`
 * rule below its limit does not match and the verdict lists it in `counts`
 * (the gate takes the slots if it dispatches); the first matching rule with a
 * `timeout` sets `timeout`, and a rule with only a timeout lets evaluation go on.
 */
export function decide(policy: Policy, tool: string, args: ArgsValue, annotations: Record<string, unknown> | null, context?: DecideContext): PolicyVerdict {
  let floor: PolicyVerdict | null = null;
  // What rules add besides a decision; rules without these keys leave them untouched (no per-call work).
  const extra: Extra = { timeout: undefined, counts: undefined, over: undefined, secret: undefined };
  for (const rule of policy.rules) {
    const match = matchesTool(rule, tool, annotations);
    if (match === false) continue;
    if (rule.when !== null && !rule.when(args.value(), args)) continue;
    const named = rule.paths === null && rule.hosts === null ? null : judgeArgs(rule, args.value());
    if (named?.match === false) continue;
    const sure = match === true && named?.match !== 'unknown';
    let why = named?.why ?? null;
    if (rule.secrets) {
      // Looked for once, the first time a rule (or --secrets-in-args) needs it.
      const found = (extra.secret ??= findSecret(args.value()));
      if (found === null) continue;
      why = join(why, secretText(found));
    }
    if (rule.limit !== null) {
      const count: RateCount = { rule: rule.index, tool, limit: rule.limit };
      const waitMs = (context?.rates ?? FRESH).wait(count);
      if (waitMs === 0) {
        // Below the limit: no match; the call uses a slot only if it is dispatched.
        if (sure) (extra.counts ??= []).push(count);
        continue;
      }
      why = join(why, overText(count, waitMs));
      if (sure) extra.over = count;
    }
    if (rule.timeoutMs !== null && sure && extra.timeout === undefined) extra.timeout = { ms: rule.timeoutMs, rule: rule.index };
    if (rule.decision === null) continue;
    const reason = why === null ? rule.reason : rule.reason === null ? why : `${rule.reason}; ${why}`;
    // A secret the card could not mask (deep inside a string) is never shown to a person.
    const verdict: PolicyVerdict =
      rule.secrets && extra.secret?.deep === true && rule.decision === 'ask'
        ? { decision: 'deny', rule: rule.index, reason: `${reason}; denied: an approval card could not mask it` }
        : { decision: rule.decision, rule: rule.index, reason };
    if (sure) return finish(stricter(floor, verdict), policy, args, context, extra);
    // Unknown (annotations not listed, or a path that cannot be judged): this rule's decision becomes a floor.
    const unknown = match === 'unknown' ? "the tool's annotations are unknown: the server has not listed it" : null;
    if (floor === null || STRICTNESS[rule.decision] > STRICTNESS[floor.decision]) floor = { ...verdict, reason: join(reason, unknown) };
  }
  return finish(stricter(floor, { decision: policy.defaultDecision, rule: null, reason: null }), policy, args, context, extra);
}

/** A verdict in words, as the refusal, the card and `policy test` say it (rules counted from 1). */
export function verdictWhy(verdict: PolicyVerdict): string {
  // A verdict of no rule with a reason is --secrets-in-args, whose reason says so.
  if (verdict.rule === null && verdict.reason !== null) return verdict.reason;
  return verdict.rule === null
    ? `the policy's default is ${verdict.decision}`
    : `policy rule ${verdict.rule + 1}${verdict.reason === null ? '' : ` (${verdict.reason})`}`;
}

/**
 * Whether every call of this tool is denied whatever its arguments (for
 * hide_denied): a `when` rule that could let some calls through keeps it visible.
 */
export function alwaysDenied(policy: Policy, tool: string, annotations: Record<string, unknown> | null): boolean {
  for (const rule of policy.rules) {
    const match = matchesTool(rule, tool, annotations);
    if (match === false || rule.decision === null) continue;
    // Unknown annotations: denied either way only if this rule denies outright and so do the rules after it.
    if (match === 'unknown' && !conditional(rule) && rule.decision === 'deny') continue;
    if (match === 'unknown') return false;
    if (!conditional(rule)) return rule.decision === 'deny';
    if (rule.decision !== 'deny') return false;
  }
  return policy.defaultDecision === 'deny';
}

/** A rule's `paths` and `hosts` together: both must match; either unknown (and neither false) is unknown. */
function judgeArgs(rule: Rule, value: unknown): NamedJudgement {
  const paths = rule.paths === null ? null : judgePaths(rule.paths, value);
  if (paths?.match === false || rule.hosts === null) return paths!;
  const hosts = judgeHosts(rule.hosts, value);
  if (paths === null || hosts.match === false) return hosts;
  const why = [paths.why, hosts.why].filter((w) => w !== null).join('; ');
  return { match: paths.match === true && hosts.match === true ? true : 'unknown', why: why === '' ? null : why };
}

/** Whether a rule may match some calls of a tool and not others (it reads the arguments, or counts calls). */
function conditional(rule: Rule): boolean {
  return rule.when !== null || rule.paths !== null || rule.hosts !== null || rule.limit !== null || rule.secrets;
}

/** true or false; 'unknown' when only the annotations could decide and they are not known. */
function matchesTool(rule: Rule, tool: string, annotations: Record<string, unknown> | null): boolean | 'unknown' {
  if (rule.tool !== null && !rule.tool.test(tool)) return false;
  if (rule.annotations !== null) {
    if (annotations === null) return 'unknown';
    for (const [key, value] of Object.entries(rule.annotations)) if (annotations[key] !== value) return false;
  }
  return true;
}

/** `*` matches any run of characters; everything else is literal. */
function glob(pattern: string): RegExp {
  const parts = pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\/-]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`, 's');
}

function isDecision(value: unknown): value is PolicyDecision {
  return typeof value === 'string' && (DECISIONS as readonly string[]).includes(value);
}

function bad(source: string, message: string): GuardError {
  return new GuardError('bad_policy', `policy ${source}: ${message}`, EXIT_USAGE);
}
