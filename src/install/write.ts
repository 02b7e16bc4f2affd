/**
 * Writing a config file that an agent may be writing too: through its
 * symlink to the real file (the link stays a link), a backup of the first
 * original beside it, the new text in a temporary file in the same directory
 * (same mode), then a rename over it, and only if the file still holds the
 * bytes the edits were made from. Never a partial file, never a lost write of
 * the agent's.
 */
import {
  chmodSync,
  closeSync,
  fchownSync,
  fsyncSync,
  lstatSync,
  openSync,
  readFileSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { GuardError } from '../base/errors.js';

/** A config file as read: where its bytes are, and the bytes. */
export interface ReadFile {
  path: string;
  real: string;
  link: boolean;
  bytes: Buffer;
  text: string;
}

/** Read `path` (following a symlink) as UTF-8; a byte-order mark is kept as text (the edits never touch it). */
export function readConfig(path: string): ReadFile {
  const real = realpathSync(path);
  const bytes = readFileSync(real);
  const text = bytes.toString('utf8');
  // Bytes that are not UTF-8 would come back as U+FFFD: the file is refused rather than changed where nobody asked.
  if (!Buffer.from(text, 'utf8').equals(bytes)) throw new GuardError('install_parse', 'cannot parse it: it is not UTF-8 text', 1);
  return { path, real, link: lstatSync(path).isSymbolicLink(), bytes, text };
}

/** What the backup of `file` is called. */
export const backupPath = (real: string): string => `${real}.mcpguard.bak`;

/**
 * Replace the file's content with `text`. `beforeRename` runs between the
 * temporary file and the rename (tests use it to play an agent writing the
 * file at the worst moment). Returns the backup path if this write made one.
 */
export function writeConfig(file: ReadFile, text: string, beforeRename?: () => void): string | null {
  const stat = statSync(file.real);
  const mode = stat.mode & 0o7777;
  // Checked by the mode, not by trying: root may write anything, and a file a person made read-only stays so.
  if ((mode & 0o222) === 0)
    throw new GuardError('install_readonly', `it is read-only (mode ${mode.toString(8)}); nothing written (make it writable, or edit it by hand)`, 1);
  const backup = backupPath(file.real);
  let made: string | null = null;
  try {
    writeFileSync(backup, file.bytes, { flag: 'wx', mode });
    made = backup;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw failed('cannot write the backup', error);
  }
  const temp = join(dirname(file.real), `.${randomBytes(6).toString('hex')}.mcpguard.tmp`);
  try {
    const fd = openSync(temp, 'wx', mode);
    try {
      writeSync(fd, text);
      // Root editing someone's file (sudo with their HOME) leaves it theirs, not root's.
      if (process.getuid?.() === 0) fchownSync(fd, stat.uid, stat.gid);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(temp, mode);
    beforeRename?.();
    if (!readFileSync(file.real).equals(file.bytes)) {
      throw new GuardError('install_changed', 'it changed while mcpguard was editing it (is the agent running and writing it?); nothing written, run again', 1);
    }
    renameSync(temp, file.real);
  } catch (error) {
    try {
      unlinkSync(temp);
    } catch {
      /* already renamed or never made */
    }
    if (error instanceof GuardError) throw error;
    throw failed('cannot write it', error);
  }
  return made;
}

function failed(what: string, error: unknown): GuardError {
  const e = error as NodeJS.ErrnoException;
  return new GuardError('install_write', `${what}: ${e.code ?? e.message}; nothing written`, 1);
}
