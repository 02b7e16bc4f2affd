/**
 * Path rules: `"paths": {"args": ["/path", ...], "within": [roots]}` (or
 * `"outside"`). The named arguments (JSON Pointers; an array of strings there
 * counts as one path per element) are judged as the server will use them:
 * `~` is the home directory, a relative path is against the server's working
 * directory (mcpguard's own: the child inherits it), a `file://` URI is its
 * path, and where the path exists on this machine its symlinks are followed,
 * component by component as the kernel does. Roots are resolved the same way
 * once, at load.
 *
 * An absent argument names no path and is skipped (with `within`, at least
 * one named argument must be given). A value that cannot be judged (not a
 * string, a control character,
 * a `~user`, a symlink loop, a name too long for this machine, `..` after a
 * symlink where the kernel and a lexical resolver disagree) makes the rule
 * match as "unknown": the call then gets the stricter of the rule's decision
 * and what the later rules decide (decide() in policy.ts), so a path the gate
 * cannot read is never waved through by an allow rule nor escapes a deny.
 */
import { lstatSync, readlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { processMasker } from '../mask/mask.js';
import { isObject } from '../base/values.js';

/** A compiled `paths` clause. */
export interface PathRule {
  /** The pointers as written (for reasons) and as reference tokens. */
  args: { text: string; tokens: string[] }[];
  mode: 'within' | 'outside';
  /** The roots, resolved (absolute, symlinks followed where they exist). */
  roots: string[];
  cwd: string;
  home: string;
}

/** Where relative paths and `~` point: the server's working directory and home. */
export interface PathPlace {
  cwd: string;
  home: string;
}

/** How a call's arguments stand against a path rule: matched, not, or cannot be known; and why, for the reason. */
export interface PathJudgement {
  match: boolean | 'unknown';
  why: string | null;
}

/** Symlinks followed on one path before it is taken as a loop (Linux's own limit). */
const MAX_LINKS = 40;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Check and compile a `paths` clause; throws an Error saying what is wrong (the caller names the rule). */
export function buildPaths(raw: unknown, place: PathPlace = { cwd: process.cwd(), home: homedir() }): PathRule {
  if (!isObject(raw)) throw new Error('"paths" must be an object: {"args": [JSON Pointers], "within" or "outside": [roots]}');
  for (const key of Object.keys(raw))
    if (!['args', 'within', 'outside'].includes(key)) throw new Error(`"paths": unknown key ${JSON.stringify(key)} (known: args, within, outside)`);
  if (!Array.isArray(raw.args) || raw.args.length === 0 || !raw.args.every((a) => typeof a === 'string'))
    throw new Error('"paths"."args" must be a non-empty array of JSON Pointers (such as "/path")');
  const args = (raw.args as string[]).map((text) => ({ text, tokens: pointer(text) }));
  if ((raw.within === undefined) === (raw.outside === undefined)) throw new Error('"paths" needs exactly one of "within" or "outside"');
  const mode = raw.within !== undefined ? 'within' : 'outside';
  const list = raw[mode];
  if (!Array.isArray(list) || list.length === 0 || !list.every((r) => typeof r === 'string'))
    throw new Error(`"paths"."${mode}" must be a non-empty array of directories`);
  const roots = (list as string[]).map((root) => {
    if (root.startsWith('file:')) throw new Error(`"paths" root ${JSON.stringify(root)}: write a directory, not a URI`);
    if (!posix.isAbsolute(expandHome(root, place.home) ?? '')) throw new Error(`"paths" root ${JSON.stringify(root)} is not absolute (after ~)`);
    const read = resolvePath(root, place);
    if ('unknown' in read) throw new Error(`"paths" root ${JSON.stringify(root)}: ${read.unknown}`);
    return read.path;
  });
  return { args, mode, roots, cwd: place.cwd, home: place.home };
}

/**
 * Judge a call's arguments: `outside` matches when any named path falls
 * outside every root, `within` when all fall inside one; a path that cannot
 * be judged makes the answer 'unknown' unless another already settles it.
 */
export function judgePaths(rule: PathRule, args: unknown): PathJudgement {
  let unknown: string | null = null;
  let present = false;
  const inside: string[] = [];
  for (const arg of rule.args) {
    const found = at(args, arg.tokens);
    // Absent: the call names no path there (the server's own default is its configuration, not the caller's choice).
    if (found === undefined) continue;
    present = true;
    const values = Array.isArray(found) ? found : [found];
    for (const value of values) {
      if (typeof value !== 'string') {
        unknown ??= `${arg.text} is not a string`;
        continue;
      }
      const read = resolvePath(value, rule);
      if ('unknown' in read) {
        unknown ??= `${arg.text} ${shown(value)} cannot be judged: ${read.unknown}`;
        continue;
      }
      if (!rule.roots.some((root) => within(read.path, root))) {
        const why = `${arg.text} is ${shown(read.path)}, outside ${rule.roots.map(shown).join(', ')}`;
        return rule.mode === 'outside' ? { match: true, why } : { match: false, why: null };
      }
      inside.push(`${arg.text} is ${shown(read.path)}`);
    }
  }
  // `within` claims something of the call's paths: with none named, that claim cannot be made.
  if (!present && rule.mode === 'within') unknown = `none of ${rule.args.map((a) => a.text).join(', ')} is given`;
  if (unknown !== null) return { match: 'unknown', why: `${unknown}; taken as the stricter outcome` };
  return rule.mode === 'within' ? { match: true, why: inside.length > 0 ? `${inside.join(', ')}, within the roots` : null } : { match: false, why: null };
}

/**
 * Where a path argument leads, as the server would open it: absolute, `.`,
 * `..` and repeated slashes gone, symlinks followed as far as the path exists.
 * Both readings of `..` are tried (the kernel's, after symlinks, and a lexical
 * one first, as servers that normalise before opening do); if they disagree
 * the path cannot be judged.
 */
export function resolvePath(value: string, place: PathPlace): { path: string } | { unknown: string } {
  let text = value;
  if (/^file:/i.test(text)) {
    try {
      text = fileURLToPath(new URL(text));
    } catch (error) {
      return { unknown: `not a local file URI (${(error as Error).message})` };
    }
  }
  if (CONTROL.test(text)) return { unknown: 'it holds a control character' };
  const expanded = expandHome(text, place.home);
  if (expanded === null) return { unknown: "a ~user path (whose home is the server's to know)" };
  const raw = expanded.startsWith('/') ? expanded : `${place.cwd}/${expanded}`;
  const kernel = physical(raw);
  if ('unknown' in kernel || !raw.includes('..')) return kernel;
  const lexical = physical(posix.resolve(raw));
  if ('unknown' in lexical) return lexical;
  return lexical.path === kernel.path ? kernel : { unknown: `'..' after a symlink: ${shown(kernel.path)} or ${shown(lexical.path)}` };
}

/** `~` and `~/...` to the home directory; null for `~user`. */
function expandHome(text: string, home: string): string | null {
  if (text === '~') return home;
  if (text.startsWith('~/')) return home + text.slice(1);
  return text.startsWith('~') ? null : text;
}

/** Follow an absolute path component by component, as the kernel does, for as long as it exists; the rest is lexical. */
function physical(path: string): { path: string } | { unknown: string } {
  const queue = path.split('/');
  let current = '';
  let exists = true;
  let links = 0;
  while (queue.length > 0) {
    const part = queue.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = current.slice(0, current.lastIndexOf('/'));
      continue;
    }
    const next = `${current}/${part}`;
    if (exists) {
      let link = false;
      try {
        link = lstatSync(next).isSymbolicLink();
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') return { unknown: `${code ?? 'error'} at ${shown(next)}` };
        exists = false;
      }
      if (link) {
        if (++links > MAX_LINKS) return { unknown: 'a symlink loop' };
        const target = readlinkSync(next);
        queue.unshift(...target.split('/'));
        if (target.startsWith('/')) current = '';
        continue;
      }
    }
    current = next;
  }
  return { path: current === '' ? '/' : current };
}

function within(path: string, root: string): boolean {
  return path === root || path.startsWith(root === '/' ? '/' : `${root}/`);
}

/** RFC 6901 reference tokens; throws on a pointer that is not one. */
function pointer(text: string): string[] {
  if (text === '') return [];
  if (!text.startsWith('/') || /~[^01]|~$/.test(text)) throw new Error(`"paths"."args": ${JSON.stringify(text)} is not a JSON Pointer (such as "/path")`);
  return text
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
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

/** A path as a reason quotes it: JSON-quoted (control characters escaped), secrets masked. */
function shown(path: string): string {
  return processMasker().text(JSON.stringify(path.length > 200 ? `${path.slice(0, 200)}…` : path));
}
