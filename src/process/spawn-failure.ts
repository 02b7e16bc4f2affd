/**
 * Why a command could not be started, in words a person can act on, and the
 * exit status a shell would give. Node reports a script whose `#!` interpreter
 * is missing exactly like a missing command (ENOENT), so on ENOENT and EACCES
 * the command is looked up again the way exec does (a name with a `/` is a
 * path, any other name is searched in the child's PATH) and the file found is
 * examined. This runs only after a spawn failed; a start that works costs
 * nothing here.
 *
 *   127  not found: no such command, or an empty command
 *   126  found but not executable: permission, a missing #! interpreter (as
 *        bash reports it), a missing ELF loader, any other exec error
 */
import { accessSync, closeSync, constants, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND } from '../base/errors.js';

export interface SpawnFailure {
  /** What mcpguard exits with. */
  status: number;
  /** Why, without the command: "command not found", "permission denied (…)", … */
  why: string;
}

export interface SpawnPlace {
  cwd?: string | undefined;
  env?: NodeJS.ProcessEnv;
}

/** libuv's search path when the child's environment has no PATH. */
const DEFAULT_PATH = '/usr/bin:/bin';
/** Bytes of a file's start examined: the kernel reads no more of a #! line (BINPRM_BUF_SIZE). */
const HEAD_BYTES = 256;

const ERRNO_WORDS = new Map<string, string>([
  ['ENOTDIR', 'a component of its path is not a directory'],
  ['ENOEXEC', 'exec format error (not a program this system runs)'],
  ['E2BIG', 'the argument list and environment are too long'],
  ['ELOOP', 'too many symbolic links in its path'],
  ['ENAMETOOLONG', 'its path is too long'],
  ['ETXTBSY', 'the file is busy (open for writing)'],
  ['EMFILE', 'too many open files'],
  ['ENFILE', 'too many open files in the system'],
  ['EAGAIN', 'no more processes allowed (resource limit)'],
  ['ENOMEM', 'out of memory'],
  ['EPERM', 'operation not permitted'],
]);

/** Explain `error`, thrown by spawn or emitted as its 'error', for `command` started at `place`. */
export function explainSpawnFailure(command: string, error: unknown, place: SpawnPlace = {}): SpawnFailure {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  if (command === '') return { status: EXIT_NOT_FOUND, why: 'the command is empty' };
  if (code === 'ENOENT') return notFound(command, place);
  if (code === 'EACCES') return { status: EXIT_CANNOT_EXECUTE, why: `permission denied${denied(command, place)}` };
  const words = code === undefined ? undefined : ERRNO_WORDS.get(code);
  const message = error instanceof Error ? error.message : 'spawn failed';
  return { status: EXIT_CANNOT_EXECUTE, why: words === undefined ? message : `${words} (${code})` };
}

// ENOENT from exec: no such file, or the file exists and what it needs to run (its #! interpreter, its ELF loader) does not.
function notFound(command: string, place: SpawnPlace): SpawnFailure {
  const file = candidates(command, place).find((path) => isFile(path) && executable(path));
  if (file === undefined) return { status: EXIT_NOT_FOUND, why: 'command not found' };
  const head = readHead(file);
  const interpreter = head === null ? null : interpreterOf(head);
  if (interpreter !== null) {
    const path = resolve(place.cwd ?? process.cwd(), interpreter);
    const crlf = interpreter.endsWith('\r') ? '; the line ends in a carriage return (Windows line endings)' : '';
    if (!isFile(path)) return { status: EXIT_CANNOT_EXECUTE, why: `its interpreter ${JSON.stringify(interpreter)} (from its #! line) was not found${crlf}` };
    return { status: EXIT_CANNOT_EXECUTE, why: `its interpreter ${JSON.stringify(interpreter)} (from its #! line) could not be started` };
  }
  if (head?.subarray(0, 4).equals(ELF_MAGIC))
    return { status: EXIT_CANNOT_EXECUTE, why: `${JSON.stringify(file)} is a program whose loader (ELF interpreter) is missing` };
  return { status: EXIT_CANNOT_EXECUTE, why: `${JSON.stringify(file)} exists but could not be run (ENOENT)` };
}

const ELF_MAGIC = Buffer.from([0x7f, 0x45, 0x4c, 0x46]);

// EACCES from exec: the first candidate that exists is the one exec stumbled on.
function denied(command: string, place: SpawnPlace): string {
  for (const path of candidates(command, place)) {
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(path);
    } catch {
      continue;
    }
    if (stat.isDirectory()) return ` (${JSON.stringify(path)} is a directory)`;
    if (!stat.isFile()) return ` (${JSON.stringify(path)} is not a regular file)`;
    if (!executable(path)) return ` (${JSON.stringify(path)} is not executable)`;
    const head = readHead(path);
    const interpreter = head === null ? null : interpreterOf(head);
    if (interpreter !== null && !executable(resolve(place.cwd ?? process.cwd(), interpreter))) {
      return ` (its interpreter ${JSON.stringify(interpreter)}, from its #! line, is not executable)`;
    }
    return '';
  }
  return '';
}

/** The files exec would try, in order. */
function candidates(command: string, place: SpawnPlace): string[] {
  const cwd = place.cwd ?? process.cwd();
  if (command.includes('/')) return [resolve(cwd, command)];
  const path = (place.env ?? process.env).PATH ?? DEFAULT_PATH;
  // An empty PATH entry means the current directory.
  return path.split(':').map((dir) => resolve(cwd, dir === '' ? '.' : dir, command));
}

/** The interpreter named on a `#!` line, or null. */
function interpreterOf(head: Buffer): string | null {
  if (head[0] !== 0x23 || head[1] !== 0x21) return null;
  const line = head.subarray(2).toString('latin1').split('\n')[0]!;
  // As the kernel reads it: a carriage return (Windows line endings) is part of the name.
  const word = /^[ \t]*([^ \t]+)/.exec(line);
  return word === null ? null : word[1]!;
}

function readHead(path: string): Buffer | null {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const head = Buffer.alloc(HEAD_BYTES);
    return head.subarray(0, readSync(fd, head, 0, HEAD_BYTES, 0));
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
