/**
 * Where records live, and the permissions they live with. Records name the
 * commands an agent ran and the tools it called, so the directory is 0700 and
 * each file 0600, whatever the umask says.
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { GuardError } from '../errors.js';

/**
 * The record directory: `explicit` (from --record-dir), else `$MCPGUARD_HOME`,
 * else `$XDG_STATE_HOME/mcpguard`, else `~/.local/state/mcpguard`. Empty
 * variables count as unset, and so does a relative XDG_STATE_HOME (the XDG spec
 * says to ignore it). Always returns an absolute path; creates nothing.
 */
export function resolveRecordDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit !== undefined && explicit !== '') return resolve(explicit);
  if (env.MCPGUARD_HOME) return resolve(env.MCPGUARD_HOME);
  const state = env.XDG_STATE_HOME;
  if (state && isAbsolute(state)) return join(state, 'mcpguard');
  return join(env.HOME || homedir(), '.local', 'state', 'mcpguard');
}

/**
 * Create `dir` (and missing parents) and make it mode 0700. An existing
 * directory is tightened too: a group-readable record directory would show
 * other users what ran. Throws GuardError `ERR_RECORD_DIR` when that fails.
 */
export function ensureRecordDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!statSync(dir).isDirectory()) throw new Error('not a directory');
    // mkdir's mode is filtered by the umask, and an existing directory keeps its own.
    chmodSync(dir, 0o700);
  } catch (error) {
    throw new GuardError('ERR_RECORD_DIR', `cannot use record directory '${dir}': ${describe(error)}`);
  }
}

/** An fs error as "ENOSPC: no space left on device", without the stack. */
export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
