/**
 * Where records live, and the permissions they live with. Records name the
 * commands an agent ran and the tools it called, so a directory mcpguard makes
 * is 0700 and each file 0600, whatever the umask says.
 *
 * mcpguard changes the mode of nothing it did not create: an existing
 * directory is checked, never chmodded. It is used when it is ours and nobody
 * else can write to it. A shared sticky directory such as /tmp is not written
 * to directly: records go to mcpguard's own 0700 subdirectory in it. Anything
 * else is refused with what is wrong and how to fix it.
 */
import { closeSync, constants, lstatSync, mkdirSync, openSync, readlinkSync, realpathSync, statfsSync, unlinkSync, type Stats } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { GuardError } from '../base/errors.js';

/**
 * The configured record directory: `explicit` (from --record-dir), else
 * `$MCPGUARD_HOME`, else `$XDG_STATE_HOME/mcpguard`, else
 * `~/.local/state/mcpguard`. Empty variables count as unset, and so does a
 * relative XDG_STATE_HOME (the XDG spec says to ignore it). Always returns an
 * absolute path; creates nothing. Where the files go is `recordDirFor` (reading)
 * or `ensureRecordDir` (writing) of this path.
 */
export function resolveRecordDir(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit !== undefined && explicit !== '') return resolve(explicit);
  if (env.MCPGUARD_HOME) return resolve(env.MCPGUARD_HOME);
  const state = env.XDG_STATE_HOME;
  if (state && isAbsolute(state)) return join(state, 'mcpguard');
  return join(env.HOME || homedir(), '.local', 'state', 'mcpguard');
}

/**
 * Make sure records can be written for the configured directory `dir` and
 * return where they go: `dir` itself (its real path when `dir` is a symlink
 * you or root own), or, when `dir` is a shared sticky directory, your own
 * subdirectory `mcpguard-<uid>` in it. Missing directories are created 0700
 * (missing parents too). Throws GuardError `ERR_RECORD_DIR`, naming the
 * directory and the fix, when the directory cannot be made or trusted.
 */
export function ensureRecordDir(dir: string): string {
  return locate(dir, true);
}

/**
 * `ensureRecordDir`, then prove a file can be created there: create and
 * remove an empty probe file. Run once before the server starts, so a
 * read-only, full or pseudo filesystem (procfs, sysfs) is an error naming the
 * directory now, not a failed session log after the server is running.
 * Throws GuardError `ERR_RECORD_DIR`.
 */
export function ensureWritableRecordDir(configured: string): string {
  const dir = ensureRecordDir(configured);
  const probe = join(dir, `.mcpguard-probe-${process.pid}-${Date.now().toString(36)}`);
  let fd: number;
  try {
    fd = openSync(probe, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  } catch (error) {
    throw refusal(
      configured,
      `cannot hold mcpguard's files: creating a file in ${dir === configured ? 'it' : `'${dir}'`} failed: ${whyNotWritable(error, dir)}`,
    );
  }
  closeSync(fd);
  try {
    unlinkSync(probe);
  } catch {
    /* a file that cannot be removed is harmless: readers only read *.jsonl */
  }
  return dir;
}

/**
 * Where records written for the configured directory `dir` are, by the same
 * rule as `ensureRecordDir`, without creating or judging anything but the
 * sticky directory's subdirectory (which must be yours, as the writer demands).
 * The result may not exist.
 */
export function recordDirFor(dir: string): string {
  return locate(dir, false);
}

/** The name of mcpguard's own subdirectory in a shared sticky directory. */
export function sharedSubdirName(uid: number | null = currentUid()): string {
  return `mcpguard-${uid ?? 'user'}`;
}

const SHARED_WRITE = 0o022;
const STICKY = 0o1000;

function locate(configured: string, writing: boolean): string {
  let dir = configured;
  let st = lstatOrNull(dir);
  if (st === null) {
    if (!writing) return dir;
    makePrivateDirs(configured);
    st = attempt(configured, () => lstatSync(dir));
  }
  let via = '';
  if (st.isSymbolicLink()) {
    // Only you or root can have made a symlink you or root own: that one was set up on purpose.
    // It is resolved once here, so nothing later follows it again.
    if (writing && !trustedOwner(st.uid)) {
      throw refusal(
        configured,
        `is a symbolic link owned by uid ${st.uid}; mcpguard follows a symlink for its records only when you or root own it. Use the directory it points to directly, if you trust it, or choose another`,
      );
    }
    const target = attempt(configured, () => readlinkSync(configured));
    try {
      dir = realpathSync(configured);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
        throw refusal(configured, `is a symbolic link to '${target}', which cannot be followed: ${describe(error)}`);
      throw refusal(
        configured,
        `is a symbolic link to '${target}', which does not exist${writing ? '; mcpguard creates no directory through a symlink: create it, or point --record-dir at a directory' : ''}`,
      );
    }
    st = attempt(configured, () => lstatSync(dir));
    via = `(a symbolic link to '${dir}') `;
  }
  if (!st.isDirectory()) throw refusal(configured, `${via}is not a directory`);
  if ((st.mode & SHARED_WRITE) === 0) {
    if (writing && !ownedByMe(st)) throw refusal(configured, `${via}is owned by uid ${st.uid}, not by you (uid ${currentUid()}); choose a directory you own`);
    return dir;
  }
  if ((st.mode & STICKY) === 0) {
    if (!writing) return dir;
    throw refusal(
      configured,
      `${via}is ${writableBy(st.mode)} (mode ${octal(st.mode)}), so others could delete or replace records in it; run chmod go-w '${dir}', or choose another record directory`,
    );
  }
  // Shared and sticky, like /tmp: others cannot remove or rename what is ours in it, so our own subdirectory is safe.
  const own = join(dir, sharedSubdirName());
  if (writing) attempt(configured, () => makePrivateDir(own));
  const ownSt = lstatOrNull(own);
  if (ownSt === null) {
    if (writing) throw refusal(own, 'vanished right after it was created');
    return own;
  }
  const problem = ownSt.isSymbolicLink()
    ? 'is a symbolic link'
    : !ownSt.isDirectory()
      ? 'is not a directory'
      : !ownedByMe(ownSt)
        ? `is owned by uid ${ownSt.uid}, not by you (uid ${currentUid()})`
        : (ownSt.mode & 0o077) !== 0
          ? `has mode ${octal(ownSt.mode)}, not 0700`
          : null;
  if (problem !== null) {
    throw refusal(
      own,
      `(mcpguard's own directory in the shared '${dir}') ${problem}; mcpguard does not change it: remove it, or choose another record directory`,
    );
  }
  return own;
}

/**
 * Create `dir` and its missing parents, one level at a time. Not
 * mkdirSync({ recursive: true }): given a path whose parent exists but cannot
 * hold it (/proc/nope, a dangling symlink on the way), Node's recursive mkdir
 * steps back on ENOENT and forward on the parent's EEXIST for ever, at 100%
 * CPU. Here a level that cannot be made is an error at once.
 */
function makePrivateDirs(configured: string): void {
  const missing: string[] = [];
  for (let at = configured; lstatOrNull(at) === null; at = dirname(at)) {
    missing.unshift(at);
    if (dirname(at) === at) break;
  }
  for (const path of missing) {
    try {
      makePrivateDir(path);
    } catch (error) {
      const parent = dirname(path);
      const code = (error as NodeJS.ErrnoException).code;
      const link = code === 'ENOENT' ? danglingTarget(parent) : null;
      const why =
        link !== null
          ? `its parent '${parent}' is a symbolic link to '${link}', which does not exist`
          : code === 'ENOENT'
            ? `its parent '${parent}' exists but cannot hold a directory${filesystemNote(parent)}`
            : `${describe(error)}${filesystemNote(parent)}`;
      throw new GuardError('ERR_RECORD_DIR', `cannot create record directory '${configured}'${path === configured ? '' : ` (at '${path}')`}: ${why}`);
    }
  }
}

/** The target of `path` when it is a symlink that leads nowhere, else null. */
function danglingTarget(path: string): string | null {
  try {
    if (!lstatSync(path).isSymbolicLink()) return null;
    const target = readlinkSync(path);
    try {
      realpathSync(path);
      return null;
    } catch {
      return target;
    }
  } catch {
    return null;
  }
}

// Kernel pseudo-filesystems by their statfs magic (linux/magic.h): nothing of mcpguard's can live there.
const PSEUDO_FILESYSTEMS = new Map([
  [0x9fa0, 'procfs'],
  [0x62656572, 'sysfs'],
  [0x63677270, 'cgroup2'],
  [0x27e0eb, 'cgroup'],
  [0x64626720, 'debugfs'],
]);

/** " (on procfs, a kernel pseudo-filesystem)" when `path` is on one, else "". */
function filesystemNote(path: string): string {
  try {
    const name = PSEUDO_FILESYSTEMS.get(Number(statfsSync(path).type));
    return name === undefined ? '' : ` ('${path}' is on ${name}, a kernel pseudo-filesystem that holds no files of yours)`;
  } catch {
    return ''; // macOS and others report no such magic numbers; the errno says enough there
  }
}

/** Why creating a file in `dir` failed, in words. */
function whyNotWritable(error: unknown, dir: string): string {
  const code = (error as NodeJS.ErrnoException).code;
  const note = filesystemNote(dir);
  const what = describe(error).replace(/, open '.*$/s, ''); // the probe file's name means nothing to the reader
  if (code === 'EROFS') return `${what} (the filesystem is mounted read-only)`;
  if (code === 'EACCES' || code === 'EPERM') {
    let st: Stats | null = null;
    try {
      st = lstatSync(dir);
    } catch {
      /* reported below without the mode */
    }
    const mode = st === null ? '' : ` (mode ${octal(st.mode)}, owner uid ${st.uid}; you are uid ${currentUid()})`;
    return `${what}${mode}${note}`;
  }
  return `${what}${note}`;
}

/**
 * mkdir under a umask of 077, so what mcpguard creates is exactly 0700 (a
 * stricter umask cannot take the owner's bits). No chmod by path afterwards:
 * a path can be swapped for a symlink between the mkdir and the chmod.
 */
export function makePrivateDir(dir: string): void {
  const previous = process.umask(0o077);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    process.umask(previous);
  }
}

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new GuardError('ERR_RECORD_DIR', `cannot use record directory '${path}': ${describe(error)}`);
  }
}

function attempt<T>(dir: string, action: () => T): T {
  try {
    return action();
  } catch (error) {
    throw new GuardError('ERR_RECORD_DIR', `cannot use record directory '${dir}': ${describe(error)}`);
  }
}

function refusal(dir: string, problem: string): GuardError {
  return new GuardError('ERR_RECORD_DIR', `record directory '${dir}' ${problem}`);
}

// No uid (Windows): there is no owner to compare, so ownership is not checked.
function currentUid(): number | null {
  return typeof process.geteuid === 'function' ? process.geteuid() : null;
}

function ownedByMe(st: Stats): boolean {
  const uid = currentUid();
  return uid === null || st.uid === uid;
}

function trustedOwner(uid: number): boolean {
  const me = currentUid();
  return me === null || uid === me || uid === 0;
}

function writableBy(mode: number): string {
  if ((mode & 0o022) === 0o022) return 'group- and world-writable';
  return (mode & 0o020) !== 0 ? 'group-writable' : 'world-writable';
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}

/** An fs error as "ENOSPC: no space left on device", without the stack. */
export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
