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
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { homedir } from 'node:os';
import { posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isObject } from '../base/values.js';
import { judgeNamed, namedArgs, shown, type NamedArg, type NamedJudgement, type OneJudgement } from './named-args.js';

/** A compiled `paths` clause. */
export interface PathRule {
  args: NamedArg[];
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

/** Symlinks followed on one path before it is taken as a loop (Linux's own limit). */
const MAX_LINKS = 40;
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Check and compile a `paths` clause; throws an Error saying what is wrong (the caller names the rule). */
export function buildPaths(raw: unknown, place: PathPlace = { cwd: process.cwd(), home: homedir() }): PathRule {
  if (!isObject(raw)) throw new Error('"paths" must be an object: {"args": [JSON Pointers], "within" or "outside": [roots]}');
  for (const key of Object.keys(raw))
    if (!['args', 'within', 'outside'].includes(key)) throw new Error(`"paths": unknown key ${JSON.stringify(key)} (known: args, within, outside)`);
  const args = namedArgs(raw.args, 'paths');
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

/** Judge a call's arguments against the rule (named-args.ts says how the values add up). */
export function judgePaths(rule: PathRule, args: unknown): NamedJudgement {
  const one = (value: string): OneJudgement => {
    const read = resolvePath(value, rule);
    return 'unknown' in read ? read : { leads: read.path, inside: rule.roots.some((root) => within(read.path, root)) };
  };
  return judgeNamed(rule.args, rule.mode, args, one, '', rule.roots);
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

/**
 * Where an absolute path leads (walk() below says how), in the common case at
 * a fraction of the cost: the directory part by one realpath(3) (the C
 * library follows each component as the kernel does, one readlink each, where
 * walk() pays an lstat from JavaScript per component), then one lstat of the
 * last name. Exact, not a cache: whenever that is not the whole story (the
 * directory part does not resolve, the last name is a symlink, even a
 * dangling one that a write would follow out of the root, or is `.`/`..`),
 * the component walk decides, and words what it cannot judge.
 */
function physical(path: string): { path: string } | { unknown: string } {
  const slash = path.lastIndexOf('/');
  const leaf = path.slice(slash + 1);
  if (leaf === '' || leaf === '.' || leaf === '..') return walk(path);
  let full: string;
  try {
    const dir = realpathSync.native(slash === 0 ? '/' : path.slice(0, slash));
    full = dir === '/' ? `/${leaf}` : `${dir}/${leaf}`;
    const stat = lstatSync(full, { throwIfNoEntry: false });
    if (stat?.isSymbolicLink()) return walk(path);
  } catch {
    return walk(path); // ENOENT on the way, ENOTDIR, ELOOP, ENAMETOOLONG, EACCES: the walk says which, and where
  }
  return { path: full };
}

/** Follow an absolute path component by component, as the kernel does, for as long as it exists; the rest is lexical. */
function walk(path: string): { path: string } | { unknown: string } {
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
        // throwIfNoEntry: a path still to be created is common, and a thrown ENOENT costs 3× the lstat.
        const stat = lstatSync(next, { throwIfNoEntry: false });
        if (stat === undefined) exists = false;
        else link = stat.isSymbolicLink();
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOTDIR') return { unknown: `${code ?? 'error'} at ${shown(next)}` };
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
