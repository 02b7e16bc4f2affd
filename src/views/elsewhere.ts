/**
 * Where else records may be. The relay writes where its own environment
 * points (records/location.ts), and that is the environment the client
 * passed, not the user's shell: the SDK v1 stdio transport keeps only HOME,
 * LOGNAME, PATH, SHELL, TERM and USER, and fastmcp's MCPConfig drops
 * XDG_STATE_HOME and MCPGUARD_HOME too. Such a session records under
 * ~/.local/state/mcpguard while a shell with XDG_STATE_HOME set reads
 * another directory and finds nothing. So a view that finds no session says
 * where it looked and why there, and names each other place this user's
 * sessions could have gone that does hold some, with the option that reads it.
 */
import { homedir } from 'node:os';
import { isAbsolute } from 'node:path';
import { listLogFiles } from '../records/read.js';
import { recordDirFor, resolveRecordDir } from '../records/location.js';
import { printable } from './format.js';

/** A record directory a view may read, and what chose it. */
interface Place {
  dir: string;
  why: string;
}

/** What chose the record directory for `explicit` (--record-dir) in `env`, in words, by resolveRecordDir's rule. */
export function chosenBy(explicit: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit !== undefined && explicit !== '') return 'from --record-dir';
  if (env.MCPGUARD_HOME) return 'from $MCPGUARD_HOME';
  if (env.XDG_STATE_HOME && isAbsolute(env.XDG_STATE_HOME)) return 'from $XDG_STATE_HOME';
  return 'by default (neither MCPGUARD_HOME nor XDG_STATE_HOME is set)';
}

/**
 * The other places this user's sessions may be ($MCPGUARD_HOME,
 * $XDG_STATE_HOME/mcpguard, ~/.local/state/mcpguard by $HOME and by the
 * password database), each with its number of session logs; only those
 * that hold any, never `dir` itself.
 */
export function otherPlaces(dir: string, env: NodeJS.ProcessEnv = process.env): Array<Place & { logs: number }> {
  const bare = { ...env, MCPGUARD_HOME: '', XDG_STATE_HOME: '' };
  const candidates: Place[] = [
    ...(env.MCPGUARD_HOME ? [{ dir: resolveRecordDir(undefined, { ...bare, MCPGUARD_HOME: env.MCPGUARD_HOME }), why: '$MCPGUARD_HOME' }] : []),
    ...(env.XDG_STATE_HOME ? [{ dir: resolveRecordDir(undefined, { ...bare, XDG_STATE_HOME: env.XDG_STATE_HOME }), why: '$XDG_STATE_HOME/mcpguard' }] : []),
    { dir: resolveRecordDir(undefined, bare), why: 'the default, where a client that passes neither MCPGUARD_HOME nor XDG_STATE_HOME to mcpguard records' },
    { dir: resolveRecordDir(undefined, { ...bare, HOME: homedir() }), why: 'the default for your home directory' },
  ];
  const seen = new Set([dir]);
  const found: Array<Place & { logs: number }> = [];
  for (const c of candidates) {
    const real = safeDirFor(c.dir);
    if (real === null || seen.has(real)) continue;
    seen.add(real);
    const logs = countLogs(real);
    if (logs > 0) found.push({ dir: real, why: c.why, logs });
  }
  return found;
}

/**
 * What a view that found no session in `dir` adds on stderr: where it looked
 * and what chose that directory (`said`: the view already named the
 * directory), then the other places that hold sessions, each with the
 * command (`command` and its `args` again) that reads it.
 */
export function nothingHereNote(
  command: string,
  dir: string,
  explicit: string | undefined,
  said: boolean,
  args: readonly string[] = [],
  env: NodeJS.ProcessEnv = process.env,
): string {
  const chosen = `the record directory ${chosenBy(explicit, env)}`;
  let text = `mcpguard ${command}: ${said ? `'${printable(dir)}' is ${chosen}` : `no sessions in '${printable(dir)}', ${chosen}`}\n`;
  for (const other of otherPlaces(dir, env)) {
    text += `mcpguard ${command}: ${other.logs} session log${other.logs === 1 ? '' : 's'} in '${printable(other.dir)}' (${other.why}); read ${other.logs === 1 ? 'it' : 'them'} with: ${['mcpguard', command, ...args, '--record-dir', other.dir].map(shellWord).join(' ')}\n`;
  }
  return text;
}

function countLogs(dir: string): number {
  try {
    return listLogFiles(dir).length;
  } catch {
    return 0; // missing, or not ours to read: nothing to point at
  }
}

function safeDirFor(dir: string): string | null {
  try {
    return recordDirFor(dir);
  } catch {
    return null;
  }
}

/** `word` as one shell word to copy: bare when it is plainly safe, else in single quotes (control characters escaped). */
function shellWord(word: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(word) ? word : `'${printable(word).replace(/'/g, `'\\''`)}'`;
}
