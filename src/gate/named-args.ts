/**
 * What path and host rules share: the arguments they name (JSON Pointers; an
 * array of strings there is one value per element), and how the values'
 * judgements add up to the rule's: `outside` matches when any value falls
 * outside, `within` when all fall inside; a value that cannot be judged
 * makes the answer 'unknown' (the stricter outcome, in decide()) unless
 * another value already settles it. An absent argument names nothing and is
 * skipped, but `within` needs at least one value to claim anything of.
 */
import { isObject } from '../base/values.js';
import { processMasker } from '../mask/mask.js';

/** One named argument: the pointer as written (for reasons) and its reference tokens. */
export interface NamedArg {
  text: string;
  tokens: string[];
}

/** How a call's arguments stand against a rule: matched, not, or cannot be known; and why, for the reason. */
export interface NamedJudgement {
  match: boolean | 'unknown';
  why: string | null;
}

/** One value's judgement: where it leads (quoted only for a reason) and whether that is inside; or why it cannot be judged. */
export type OneJudgement = { leads: string; inside: boolean } | { unknown: string };

/** Check `"args"` of a `paths` or `hosts` clause (`key` names it); throws an Error saying what is wrong. */
export function namedArgs(raw: unknown, key: string): NamedArg[] {
  if (!Array.isArray(raw) || raw.length === 0 || !raw.every((a) => typeof a === 'string'))
    throw new Error(`"${key}"."args" must be a non-empty array of JSON Pointers (such as "/path")`);
  return (raw as string[]).map((text) => {
    if (text !== '' && (!text.startsWith('/') || /~[^01]|~$/.test(text)))
      throw new Error(`"${key}"."args": ${JSON.stringify(text)} is not a JSON Pointer (such as "/path")`);
    const tokens =
      text === ''
        ? []
        : text
            .slice(1)
            .split('/')
            .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
    return { text, tokens };
  });
}

/**
 * Judge the named arguments of one call. `what` words where a value leads
 * ("host"; '' for a path) and `against` lists the roots or hosts: both are
 * quoted only when a reason is written (calls that pass pay for none of it).
 */
export function judgeNamed(
  named: NamedArg[],
  mode: 'within' | 'outside',
  args: unknown,
  one: (value: string) => OneJudgement,
  what: string,
  against: readonly string[],
): NamedJudgement {
  let unknown: string | null = null;
  let present = false;
  const inside: string[] = [];
  for (const arg of named) {
    const found = at(args, arg.tokens);
    // Absent: the call names nothing there (the server's own default is its configuration, not the caller's choice).
    if (found === undefined) continue;
    present = true;
    const values = Array.isArray(found) ? found : [found];
    for (const value of values) {
      if (typeof value !== 'string') {
        unknown ??= `${arg.text} is not a string`;
        continue;
      }
      const read = one(value);
      if ('unknown' in read) {
        unknown ??= `${arg.text} ${shown(value)} cannot be judged: ${read.unknown}`;
        continue;
      }
      if (!read.inside) {
        const why = `${arg.text} is ${what}${shown(read.leads)}, outside ${against.map(shown).join(', ')}`;
        return mode === 'outside' ? { match: true, why } : { match: false, why: null };
      }
      if (mode === 'within') inside.push(`${arg.text} is ${what}${shown(read.leads)}`);
    }
  }
  // `within` claims something of the call's values: with none given, that claim cannot be made.
  if (!present && mode === 'within') unknown = `none of ${named.map((a) => a.text).join(', ')} is given`;
  if (unknown !== null) return { match: 'unknown', why: `${unknown}; taken as the stricter outcome` };
  return mode === 'within'
    ? { match: true, why: inside.length > 0 ? `${inside.join(', ')}, within ${against.map(shown).join(', ')}` : null }
    : { match: false, why: null };
}

function at(value: unknown, tokens: string[]): unknown {
  let here = value;
  for (const token of tokens) {
    if (Array.isArray(here)) here = /^(0|[1-9][0-9]*)$/.test(token) ? here[Number(token)] : undefined;
    else if (isObject(here)) here = Object.hasOwn(here, token) ? here[token] : undefined;
    else return undefined;
  }
  return here;
}

/** A value as a reason quotes it: JSON-quoted (control characters escaped), clipped, secrets masked. */
export function shown(text: string): string {
  return processMasker().text(JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text));
}
