/**
 * The servers of a JSON or JSONC config file (comments and trailing commas
 * allowed, as VS Code, Zed and Claude Code accept them), located by
 * jsonc-parser's syntax tree: every span is an offset into the text as read,
 * so an edit changes those bytes and no other.
 */
import type { Node, ParseError } from 'jsonc-parser';
import { GuardError } from '../base/errors.js';
import type { Entry, Item, Span } from './wrap.js';

type Jsonc = typeof import('jsonc-parser');
let loaded: Jsonc | null = null;

/** jsonc-parser, loaded on first use: only install, uninstall and clients need it. */
async function jsonc(): Promise<Jsonc> {
  return (loaded ??= await import('jsonc-parser'));
}

/**
 * Every server entry under `key` (and, with `projects`, under each
 * projects["<path>"][key], Claude Code's local scope). A file that does not
 * parse is refused whole: nothing in it is edited.
 */
export async function jsonEntries(text: string, key: string, projects: boolean): Promise<Entry[]> {
  const { parseTree, findNodeAtLocation, printParseErrorCode } = await jsonc();
  if (text.trim() === '') return [];
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false, allowEmptyContent: true });
  const bad = errors[0];
  if (bad !== undefined) throw new GuardError('install_parse', `cannot parse it: ${printParseErrorCode(bad.error)} at ${where(text, bad.offset)}`, 1);
  if (root === undefined || root.type !== 'object') throw new GuardError('install_parse', 'cannot parse it: not a JSON object', 1);
  const found: Entry[] = [];
  const collect = (servers: Node | undefined, scope: string | null): void => {
    if (servers?.type !== 'object') return;
    once(text, servers);
    for (const p of servers.children ?? []) {
      once(text, p.children?.[1], true);
      found.push(entryOf(text, p, scope, findNodeAtLocation));
    }
  };
  once(text, root, false, projects ? [key, 'projects'] : [key]);
  collect(findNodeAtLocation(root, [key]), null);
  const projectsNode = projects ? findNodeAtLocation(root, ['projects']) : undefined;
  if (projectsNode?.type === 'object') {
    once(text, projectsNode);
    for (const p of projectsNode.children ?? []) {
      once(text, p.children?.[1], false, [key]);
      collect(p.children?.[1] === undefined ? undefined : findNodeAtLocation(p.children[1], [key]), String(p.children?.[0]?.value));
    }
  }
  return found;
}

/**
 * Refuse an object on the way to a server (or, with `deep`, anywhere in its
 * entry) that holds a key twice (of `only`, if given): the agents keep the
 * last (JSON.parse, jsonc-parser's parse), the tree lookup finds the first,
 * so install would edit one command while the agent runs the other, and
 * `clients` would call an unguarded server guarded.
 */
function once(text: string, node: Node | undefined, deep = false, only?: readonly string[]): void {
  if (node === undefined) return;
  const seen = new Set<string>();
  for (const p of node.type === 'object' ? (node.children ?? []) : []) {
    const k = p.children?.[0];
    const name = String(k?.value);
    if (k === undefined || (only !== undefined && !only.includes(name))) continue;
    if (seen.has(name))
      throw new GuardError(
        'install_parse',
        `cannot parse it: the key ${JSON.stringify(name)} is given twice (at ${where(text, k.offset)}); the agent reads the last one and mcpguard would edit the first, so it edits neither`,
        1,
      );
    seen.add(name);
  }
  if (deep) for (const c of node.children ?? []) once(text, node.type === 'object' ? c.children?.[1] : c, true);
}

function where(text: string, offset: number): string {
  const before = text.slice(0, offset).split('\n');
  return `line ${before.length}, column ${before[before.length - 1]!.length + 1}`;
}

const span = (n: Node): Span => ({ start: n.offset, end: n.offset + n.length });
const item = (n: Node): Item => ({ ...span(n), value: n.type === 'string' ? (n.value as string) : n.type === 'array' || n.type === 'object' ? null : n.value });

/** The property node named `name` of an object node. */
function member(obj: Node, name: string): Node | undefined {
  return obj.children?.find((p) => p.children?.[0]?.value === name);
}

/** The whitespace in front of `offset`: what separates members where the new one goes. */
function spaceBefore(text: string, offset: number): string {
  let i = offset;
  while (i > 0 && /[ \t\r\n]/.test(text[i - 1]!)) i--;
  return text.slice(i, offset);
}

function entryOf(text: string, prop: Node, scope: string | null, find: Jsonc['findNodeAtLocation']): Entry {
  const name = String(prop.children?.[0]?.value);
  const value = prop.children?.[1];
  const base = {
    name,
    scope,
    env: {},
    addArgs: () => {
      throw new Error('no command');
    },
    addedArgs: () => null,
  };
  if (value?.type !== 'object') return { ...base, remote: null, command: null, args: null };
  // Zed's older form: "command": { "path": ..., "args": [...], "env": {...} }.
  const commandNode = find(value, ['command']);
  const holder = commandNode?.type === 'object' ? commandNode : value;
  const commandKey = holder === value ? 'command' : 'path';
  const cmdProp = member(holder, commandKey);
  const argsProp = member(holder, 'args');
  const env: Record<string, string> = {};
  for (const e of [find(value, ['env']), holder === value ? undefined : find(holder, ['env'])]) {
    for (const p of e?.type === 'object' ? (e.children ?? []) : []) {
      if (p.children?.[1]?.type === 'string') env[String(p.children[0]!.value)] = p.children[1].value as string;
    }
  }
  if (cmdProp?.children?.[1] === undefined) {
    const url = ['url', 'serverUrl', 'httpUrl'].find((k) => member(value, k) !== undefined);
    return { ...base, env, remote: url !== undefined ? `a remote server (${url})` : 'no command (not a stdio server)', command: null, args: null };
  }
  const colon = text.slice(cmdProp.children[0]!.offset + cmdProp.children[0]!.length, cmdProp.children[1].offset);
  const argsNode = argsProp?.children?.[1];
  const args =
    argsNode === undefined
      ? null
      : argsNode.type === 'array'
        ? { open: argsNode.offset + 1, close: argsNode.offset + argsNode.length - 1, items: (argsNode.children ?? []).map(item) }
        : { open: argsNode.offset, close: argsNode.offset, items: [{ ...span(argsNode), value: null }] };
  return {
    ...base,
    env,
    remote: null,
    command: item(cmdProp.children[1]),
    args,
    addArgs: (arrayText) => ({ offset: cmdProp.offset, length: 0, content: `"args"${colon}${arrayText},${spaceBefore(text, cmdProp.offset)}` }),
    addedArgs: () => {
      if (argsProp === undefined || argsNode === undefined || argsProp.offset > cmdProp.offset) return null;
      const expected = `"args"${colon}${text.slice(argsNode.offset, argsNode.offset + argsNode.length)},${spaceBefore(text, argsProp.offset)}`;
      return text.slice(argsProp.offset, cmdProp.offset) === expected ? { start: argsProp.offset, end: cmdProp.offset } : null;
    },
  };
}
