/**
 * `mcpguard policy check`: a lint of a policy that loaded (loadPolicy
 * already refused what it does not understand). It reports rules that can
 * never decide a call, and, given the server's `tools/list`, tool patterns
 * that name no listed tool and listed tools no rule names while the default
 * allows. Every claim is one that holds for every call: where the answer is
 * not certain (a condition it does not know, a pattern too long to compare
 * within its budget) it says nothing.
 */
import { isObject } from '../base/values.js';
import type { Policy } from './policy.js';

/** One finding: the rule (its 0-based index, as `policy test` and the records count; null: not one rule), its kind, and a sentence. */
export interface Finding {
  rule: number | null;
  kind: 'unreachable' | 'shadowed' | 'unmatched' | 'default_only';
  message: string;
  /** The listed tool, for default_only. */
  tool?: string;
}

/** A tool as a `tools/list` result lists it (untrusted: only `name` is known to be a string). */
export type ListedTool = Readonly<Record<string, unknown>> & { readonly name: string };

/**
 * The keys that do not make a rule conditional. Any other key (`when`,
 * `paths`, `hosts`, `annotations`, and whatever later versions add: a rate
 * limit, a timeout, a secrets check) may keep the rule from matching some
 * call, so such a rule never makes another unreachable.
 */
const PLAIN_KEYS = new Set(['tool', 'decision', 'reason']);
/** The keys whose meaning this check knows; a rule with another key is not reported (it might not follow first-match). */
const KNOWN_KEYS = new Set([...PLAIN_KEYS, 'when', 'paths', 'hosts', 'annotations']);

/** Most cells of the containment table for one pair of patterns, and for one check: beyond them, nothing is claimed. */
const PAIR_CELLS = 1_000_000;
const TOTAL_CELLS = 50_000_000;

/** The findings for a loaded policy (`raw`: the same policy as parsed JSON, for its keys); `tools`: a tools/list, or null. */
export function lintPolicy(policy: Policy, raw: unknown, tools: readonly ListedTool[] | null): Finding[] {
  const rawRules = isObject(raw) && Array.isArray(raw.rules) ? (raw.rules as unknown[]) : [];
  const keysOf = (index: number): string[] => {
    const rule = rawRules[index];
    return isObject(rule) ? Object.keys(rule) : [];
  };
  const plain = (index: number) => keysOf(index).every((key) => PLAIN_KEYS.has(key));
  const pattern = (index: number) => policy.rules[index]!.toolText ?? '*';
  const findings: Finding[] = [];
  const budget = { cells: TOTAL_CELLS };
  let everything: number | null = null;
  for (const rule of policy.rules) {
    const j = rule.index;
    const known = keysOf(j).every((key) => KNOWN_KEYS.has(key));
    if (known && everything !== null) {
      findings.push({
        rule: j,
        kind: 'unreachable',
        message: `rule ${j + 1} is never reached: rule ${everything + 1} (${described(policy, everything)}) has no condition and matches every tool`,
      });
      continue;
    }
    if (known) {
      for (let i = 0; i < j; i++) {
        if (!plain(i) || globCovers(pattern(i), pattern(j), budget) !== true) continue;
        findings.push({
          rule: j,
          kind: 'shadowed',
          message: `rule ${j + 1} (${described(policy, j)}) is never reached: rule ${i + 1} (${described(policy, i)}) has no condition and matches every tool it names`,
        });
        break;
      }
    }
    if (everything === null && plain(j) && /^\**$/.test(pattern(j))) everything = j;
  }
  if (tools !== null) findings.push(...toolFindings(policy, tools));
  // In the order of the file (sort is stable): a rule's findings together, the tools no rule names last.
  return findings.sort((x, y) => (x.rule ?? Number.MAX_SAFE_INTEGER) - (y.rule ?? Number.MAX_SAFE_INTEGER));
}

/** Patterns that name no listed tool; and, when the default allows, listed tools that no rule could match. */
function toolFindings(policy: Policy, tools: readonly ListedTool[]): Finding[] {
  const findings: Finding[] = [];
  for (const rule of policy.rules) {
    if (rule.tool === null || tools.some((tool) => rule.tool!.test(tool.name))) continue;
    findings.push({
      rule: rule.index,
      kind: 'unmatched',
      message: `rule ${rule.index + 1}: "tool" ${JSON.stringify(rule.toolText)} matches none of the ${tools.length} listed tools`,
    });
  }
  // With ask or deny as the default, leaving tools to it is the design; with allow, a tool no rule names runs unasked.
  if (policy.defaultDecision !== 'allow') return findings;
  for (const tool of tools) {
    const annotations = isObject(tool.annotations) ? tool.annotations : {};
    const named = policy.rules.some(
      (rule) =>
        (rule.tool === null || rule.tool.test(tool.name)) &&
        (rule.annotations === null || Object.entries(rule.annotations).every(([key, value]) => annotations[key] === value)),
    );
    if (named) continue;
    findings.push({
      rule: null,
      kind: 'default_only',
      tool: tool.name,
      message: `tool ${JSON.stringify(tool.name)} is decided by the default (allow) alone: no rule names it`,
    });
  }
  return findings;
}

/** A rule in a few words: its tool pattern and its decision. */
function described(policy: Policy, index: number): string {
  const rule = policy.rules[index]!;
  return `${rule.toolText === null ? 'every tool' : JSON.stringify(rule.toolText)}, ${rule.decision}`;
}

/**
 * Whether every tool name `narrow` matches is matched by `wide` (both `*`
 * patterns, `*` any run of characters, the rest literal, as policy.ts reads
 * them). Decided by matching `narrow` itself, its `*`s as a symbol that only
 * a `*` of `wide` can absorb: if that fails, `narrow` with each `*` replaced
 * by a long run of a character `wide` does not contain is a name `wide`
 * does not match, so the answer is exact both ways. null: too large for the
 * budget (the caller then claims nothing). Compared in UTF-16 code units, as
 * the rule's RegExp (no `u` flag) compares.
 */
export function globCovers(wide: string, narrow: string, budget: { cells: number } = { cells: TOTAL_CELLS }): boolean | null {
  const a = collapse(wide);
  const b = collapse(narrow);
  const cells = (a.length + 1) * (b.length + 1);
  if (cells > PAIR_CELLS || cells > budget.cells) return null;
  budget.cells -= cells;
  // row[j]: a[0, i) matches b[0, j).
  let row = new Uint8Array(b.length + 1);
  row[0] = 1;
  for (let i = 1; i <= a.length; i++) {
    const next = new Uint8Array(b.length + 1);
    const star = a[i - 1] === '*';
    next[0] = star ? row[0]! : 0;
    for (let j = 1; j <= b.length; j++) {
      if (star) next[j] = row[j]! | next[j - 1]!;
      else next[j] = b[j - 1] !== '*' && a[i - 1] === b[j - 1] ? row[j - 1]! : 0;
    }
    row = next;
  }
  return row[b.length] === 1;
}

/** A pattern's code units, runs of `*` as one (they match the same names). */
function collapse(pattern: string): string {
  return pattern.replace(/\*+/g, '*');
}
