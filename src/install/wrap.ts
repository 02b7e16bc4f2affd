/**
 * Putting mcpguard in front of one server entry and taking it out again, as
 * text edits that touch only the command value and the front of the args
 * array. The original command's own text (escapes and all) moves into args
 * behind `--` and moves back on uninstall, and the elements install inserted
 * are removed as the one range they were inserted as: so uninstall gives back
 * the original bytes, whatever the file's formatting. The file format (JSONC,
 * TOML) only finds the spans (jsonc.ts, toml.ts).
 */
import { basename } from 'node:path';

/** A range of the file's text. */
export interface Span {
  start: number;
  end: number;
}
/** A value's range and what it holds (a string, or anything else install will not touch). */
export interface Item extends Span {
  value: unknown;
}
/** Replace `length` characters at `offset` with `content`. */
export interface Edit {
  offset: number;
  length: number;
  content: string;
}

/** One server entry as found in a config file. */
export interface Entry {
  name: string;
  /** Where it is besides its file: Claude Code's local scope names the project; null elsewhere. */
  scope: string | null;
  /** Why it cannot be guarded (no command: a url/http/sse server), or null. */
  remote: string | null;
  command: Item | null;
  /** open: just after '['; close: at ']'; null when the entry has no args. */
  args: { open: number; close: number; items: Item[] } | null;
  /** The edit that adds `args = arrayText` in front of the command (an entry without args). */
  addArgs(arrayText: string): Edit;
  /** The args member's range when its text is exactly what addArgs writes for its array, else null. */
  addedArgs(): Span | null;
  /** The entry's env (strings only), for masking and for starting it as the agent would. */
  env: Record<string, string>;
}

/** What an entry is, for `clients` and for deciding what install and uninstall do. */
export type Status = 'remote' | 'guarded' | 'unguarded' | 'unusual';

const isString = (item: Item): boolean => typeof item.value === 'string';
const stem = (path: string): string =>
  basename(path.replace(/\\/g, '/'))
    .replace(/\.(js|cmd|exe|ps1)$/i, '')
    .toLowerCase();

/**
 * Where mcpguard's own arguments start in args when the entry runs mcpguard
 * (under any path: `mcpguard`, `/x/bin/mcpguard.js`, or node with
 * mcpguard.js as its first argument), else null.
 */
export function guardArgsAt(entry: Entry): number | null {
  const command = entry.command?.value;
  if (typeof command !== 'string') return null;
  if (stem(command) === 'mcpguard') return 0;
  const first = entry.args?.items[0]?.value;
  if (/^node(js)?$/.test(stem(command)) && typeof first === 'string' && stem(first) === 'mcpguard') return 1;
  return null;
}

/** The entry's status. */
export function statusOf(entry: Entry): Status {
  if (entry.remote !== null) return 'remote';
  if (entry.command === null || !isString(entry.command) || (entry.args !== null && !entry.args.items.every(isString))) return 'unusual';
  return guardArgsAt(entry) === null ? 'unguarded' : 'guarded';
}

/** The entry's command line as it runs now. */
export function commandLine(entry: Entry): string[] {
  const command = entry.command?.value;
  return [typeof command === 'string' ? command : '?', ...(entry.args?.items ?? []).map((i) => String(i.value))];
}

/**
 * The edits that make an unguarded entry run `command guard... <its command>
 * <its args>`: `command` (the node running mcpguard) replaces the command
 * value; `guard` (mcpguard.js, options, --name, --) and the old command's text
 * go in front of the first argument, separated as the array already is.
 */
export function installEdits(text: string, entry: Entry, command: string, guard: readonly string[]): Edit[] {
  const old = entry.command!;
  const args = entry.args;
  // Args that install adds are marked by `--name=NAME` (one element): uninstall then knows to remove the
  // member, not to leave `args: []` (an entry written as `"args": [], "command": ...` looks the same otherwise).
  const at = guard.lastIndexOf('--name', guard.length - 3);
  const own = args === null && at >= 0 ? [...guard.slice(0, at), `--name=${guard[at + 1]}`, ...guard.slice(at + 2)] : guard;
  const inserted = [...own.map((s) => JSON.stringify(s)), text.slice(old.start, old.end)];
  const edits: Edit[] = [{ offset: old.start, length: old.end - old.start, content: JSON.stringify(command) }];
  if (args === null) {
    edits.push(entry.addArgs(`[${inserted.join(', ')}]`));
  } else if (args.items.length === 0) {
    edits.push({ offset: args.close, length: 0, content: inserted.join(', ') });
  } else {
    const sep = separator(text, args);
    edits.push({ offset: args.items[0]!.start, length: 0, content: inserted.join(sep) + sep });
  }
  return edits.sort((a, b) => a.offset - b.offset);
}

/** The text between two elements (a comma and whitespace), or ", " when that holds anything else (a comment). */
function separator(text: string, args: NonNullable<Entry['args']>): string {
  const [a, b] = args.items;
  const sep = b !== undefined ? text.slice(a!.end, b.start) : `,${text.slice(args.open, a!.start)}`;
  return /^[ \t]*,[ \t\r\n]*$/.test(sep) && sep !== ',' ? sep : ', ';
}

/**
 * The edits that give a guarded entry its own command back: the element after
 * `--` becomes the command again (its text as it is), and everything in front
 * of the original first argument goes. A string says why it cannot.
 */
export function uninstallEdits(text: string, entry: Entry): Edit[] | string {
  const at = guardArgsAt(entry);
  const items = entry.args?.items ?? [];
  // The first `--` that is not the value of --name (a server may be named "--").
  const dash = items.findIndex((item, i) => i >= (at ?? 0) && item.value === '--' && items[i - 1]?.value !== '--name');
  if (at === null || dash < 0 || dash + 1 >= items.length)
    return 'its mcpguard command has no "-- <command>" to restore (not written by mcpguard install); left as it is';
  const old = entry.command!;
  const original = items[dash + 1]!;
  const edits: Edit[] = [{ offset: old.start, length: old.end - old.start, content: text.slice(original.start, original.end) }];
  const rest = items[dash + 2];
  if (rest !== undefined) {
    edits.push({ offset: items[0]!.start, length: rest.start - items[0]!.start, content: '' });
  } else {
    // No argument of its own: drop the args member install added, or empty the array it filled.
    const added = items.slice(0, dash).some((i) => typeof i.value === 'string' && i.value.startsWith('--name=')) ? entry.addedArgs() : null;
    edits.push(
      added !== null
        ? { offset: added.start, length: added.end - added.start, content: '' }
        : { offset: items[0]!.start, length: original.end - items[0]!.start, content: '' },
    );
  }
  return edits.sort((a, b) => a.offset - b.offset);
}

/** `text` with non-overlapping `edits` applied. */
export function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = '';
  let at = 0;
  for (const e of [...edits].sort((a, b) => a.offset - b.offset)) {
    out += text.slice(at, e.offset) + e.content;
    at = e.offset + e.length;
  }
  return out + text.slice(at);
}
