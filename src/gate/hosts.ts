/**
 * Host rules: `"hosts": {"args": ["/url"], "within": ["docs.python.org",
 * "*.mozilla.org"]}` (or `"outside"`). Each named argument is parsed by the
 * WHATWG URL parser (`new URL`, as fetch and most servers parse it) and its
 * hostname judged as that parser sees it: IDN as punycode, lower case, IPv4
 * in any of its spellings as dotted decimal, IPv6 in brackets, userinfo not
 * part of it (`https://good.com@evil.com` is evil.com), one trailing dot
 * dropped. A value that does not parse, holds a backslash, space or control
 * character (where parsers disagree), has no host, or has a scheme whose
 * host the parser leaves opaque cannot be judged: the stricter outcome.
 */
import { isObject } from '../base/values.js';
import { judgeNamed, namedArgs, shown, type NamedArg, type NamedJudgement, type OneJudgement } from './named-args.js';

/** A compiled `hosts` clause. */
export interface HostRule {
  args: NamedArg[];
  mode: 'within' | 'outside';
  /** Exact hostnames, as the URL parser writes them. */
  exact: Set<string>;
  /** `*.example.com` as `.example.com`: any name below it (not the name itself). */
  suffixes: string[];
  /** The patterns as written, for reasons. */
  patterns: readonly string[];
}

const DISPUTED = /[\\\u0000-\u0020\u007f-\u009f]/;

/** Schemes whose hosts the URL parser reads as domains or IP addresses (not opaque strings); `file` has no remote host. */
const SPECIAL = new Set(['http:', 'https:', 'ws:', 'wss:', 'ftp:']);

/** Check and compile a `hosts` clause; throws an Error saying what is wrong (the caller names the rule). */
export function buildHosts(raw: unknown): HostRule {
  if (!isObject(raw)) throw new Error('"hosts" must be an object: {"args": [JSON Pointers], "within" or "outside": [hosts]}');
  for (const key of Object.keys(raw))
    if (!['args', 'within', 'outside'].includes(key)) throw new Error(`"hosts": unknown key ${JSON.stringify(key)} (known: args, within, outside)`);
  const args = namedArgs(raw.args, 'hosts');
  if ((raw.within === undefined) === (raw.outside === undefined)) throw new Error('"hosts" needs exactly one of "within" or "outside"');
  const mode = raw.within !== undefined ? 'within' : 'outside';
  const list = raw[mode];
  if (!Array.isArray(list) || list.length === 0 || !list.every((h) => typeof h === 'string'))
    throw new Error(`"hosts"."${mode}" must be a non-empty array of host names (exact, or *.example.com)`);
  const exact = new Set<string>();
  const suffixes: string[] = [];
  for (const pattern of list as string[]) {
    const wild = pattern.startsWith('*.');
    const host = hostOf(`http://${wild ? pattern.slice(2) : pattern}/`);
    if (host === null || /[/?#@:]/.test(wild ? pattern.slice(2) : pattern.replace(/^\[.*\]$/, '')))
      throw new Error(`"hosts": ${JSON.stringify(pattern)} is not a host name (exact, or *.example.com; no scheme, port or path)`);
    if (wild && isIp(host)) throw new Error(`"hosts": ${JSON.stringify(pattern)}: a * pattern needs a domain, not an IP address`);
    if (wild) suffixes.push(`.${host}`);
    else exact.add(host);
  }
  return { args, mode, exact, suffixes, patterns: list as string[] };
}

/** Judge a call's arguments against the rule (named-args.ts says how the values add up). */
export function judgeHosts(rule: HostRule, args: unknown): NamedJudgement {
  const one = (value: string): OneJudgement => {
    const read = judgeUrl(value);
    if ('unknown' in read) return read;
    const inside = rule.exact.has(read.host) || (!isIp(read.host) && rule.suffixes.some((s) => read.host.endsWith(s)));
    return { leads: read.host, inside };
  };
  return judgeNamed(rule.args, rule.mode, args, one, 'host ', rule.patterns);
}

/** The host a URL argument leads to, as the WHATWG URL parser reads it; or why it cannot be judged. */
export function judgeUrl(value: string): { host: string } | { unknown: string } {
  // The URL parser drops tabs and newlines and reads `\` as `/`; other parsers (Python's urllib) do not, and would
  // find another host in `https://good.com\@evil.com`. Where parsers disagree, the call cannot be judged.
  if (DISPUTED.test(value)) return { unknown: 'a backslash, space or control character, which URL parsers read differently' };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { unknown: 'not a URL' };
  }
  if (!SPECIAL.has(url.protocol)) return { unknown: `the scheme ${shown(url.protocol)} has no host this rule can read` };
  const host = url.hostname.endsWith('.') ? url.hostname.slice(0, -1) : url.hostname;
  return host === '' ? { unknown: 'no host' } : { host };
}

function hostOf(href: string): string | null {
  let host: string;
  try {
    host = new URL(href).hostname;
  } catch {
    return null;
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  return host === '' ? null : host;
}

function isIp(host: string): boolean {
  return host.startsWith('[') || /^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$/.test(host);
}
