/**
 * The audit key (--audit-key-file). The file holds raw bytes, used as they are
 * (a trailing newline is part of the key). It must live outside the record
 * directory: a key stored next to the records protects nothing from whoever can
 * edit them.
 */
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { readCapped } from '../base/capped-read.js';
import { GuardError } from '../base/errors.js';
import { describe } from './location.js';

/** Shorter keys are refused: HMAC is only as strong as its key. */
export const MIN_KEY_BYTES = 16;
/** Longer files are refused unread: a key is 32 random bytes, and /dev/zero is no key. */
export const MAX_KEY_BYTES = 4096;

/**
 * Read the key file, refusing one that is inside `recordDir` (symlinks
 * resolved), empty, shorter than MIN_KEY_BYTES or longer than MAX_KEY_BYTES. Throws GuardError
 * `ERR_RECORD_KEY` with a message naming the option and the file.
 */
export function loadAuditKey(keyFile: string, recordDir: string): Buffer {
  const keyPath = realpathLoose(resolve(keyFile));
  const rel = relative(realpathLoose(resolve(recordDir)), keyPath);
  const outside = rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel);
  if (!outside) {
    throw new GuardError('ERR_RECORD_KEY', `--audit-key-file '${keyFile}' is inside the record directory '${recordDir}'; keep the key elsewhere`);
  }
  let read: ReturnType<typeof readCapped>;
  try {
    // The path as given: a process substitution (/dev/fd/N) has no real path to reopen.
    read = readCapped(keyFile, MAX_KEY_BYTES);
  } catch (error) {
    throw new GuardError('ERR_RECORD_KEY', `--audit-key-file cannot read '${keyFile}': ${describe(error)}`);
  }
  if (read.tooBig) {
    throw new GuardError(
      'ERR_RECORD_KEY',
      `--audit-key-file '${keyFile}' holds more than ${MAX_KEY_BYTES} bytes, the most a key file may hold; use ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} random bytes (head -c 32 /dev/urandom > FILE)`,
    );
  }
  const key = read.bytes;
  if (key.length < MIN_KEY_BYTES) {
    throw new GuardError(
      'ERR_RECORD_KEY',
      `--audit-key-file '${keyFile}' holds ${key.length} bytes; use at least ${MIN_KEY_BYTES} random bytes (head -c 32 /dev/urandom > FILE)`,
    );
  }
  return key;
}

// realpath of the longest existing prefix: the record directory may not exist yet.
function realpathLoose(path: string): string {
  if (existsSync(path)) return realpathSync(path);
  const parent = dirname(path);
  return parent === path ? path : join(realpathLoose(parent), basename(path));
}
