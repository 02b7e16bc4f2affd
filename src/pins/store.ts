/**
 * Pin files: one per server identity, `<state>/pins/<id>.json`, where
 * `<state>` is the record directory as the relay resolves it (--record-dir,
 * else $MCPGUARD_HOME, else $XDG_STATE_HOME/mcpguard, else
 * ~/.local/state/mcpguard) and `<id>` the first 32 hex digits of the SHA-256
 * of the identity. The directory is 0700, each file 0600; a file is replaced
 * whole (written to a temporary file in the same directory, then renamed), so
 * a reader never sees half of one, and a crash leaves the old pins.
 *
 * The identity is `--name` when given; else the server's `serverInfo.name`
 * and the command line (command and arguments as given): the same server
 * started by another command line, or another server on the same command
 * line, has pins of its own.
 */
import { closeSync, constants, fsyncSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { canonical } from '../records/canonical.js';
import { ensureRecordDir, makePrivateDir, recordDirFor } from '../records/location.js';
import { processMasker } from '../mask/mask.js';
import { fileHash, pinFileProblem, readDecisions, recordPinFile } from './decisions.js';
import { sha256, type ToolDefinition } from './definition.js';

export interface Identity {
  /** --name, when given. */
  name: string | null;
  /** serverInfo.name as the server announced it (null: not announced before its tools were listed). */
  server_name: string | null;
  command: string;
}

export interface PinnedTool {
  sha256: string;
  definition: ToolDefinition;
  pinned_at: string;
}

/** A change seen and not accepted yet (ask, block): held until `pins accept` or an approval. */
export interface PendingChange {
  kind: 'added' | 'changed' | 'removed';
  /** The new definition's hash (null for a removal). */
  sha256: string | null;
  definition: ToolDefinition | null;
  seen_at: string;
}

export interface PinFile {
  version: 1;
  id: string;
  identity: Identity;
  created_at: string;
  updated_at: string;
  instructions: { sha256: string; text: string } | null;
  tools: Record<string, PinnedTool>;
  pending: Record<string, PendingChange>;
  pending_instructions: { sha256: string | null; text: string | null; seen_at: string } | null;
  /** When the first complete tools/list was pinned (null: not yet; the listing in progress is pinned as it comes). */
  listed_at: string | null;
  /** When the first instructions (or their absence) were pinned. */
  announced_at: string | null;
}

/** The identity's key, hashed to a file name. */
export function identityId(identity: Identity): string {
  const key = identity.name !== null ? { name: identity.name } : { server_name: identity.server_name, command: identity.command };
  return sha256(canonical(key)).slice(0, 32);
}

/** A display name: --name, else serverInfo.name, else the command line. */
export function identityLabel(identity: Identity): string {
  return identity.name ?? identity.server_name ?? identity.command;
}

export function emptyPins(identity: Identity, now = new Date().toISOString()): PinFile {
  return {
    version: 1,
    id: identityId(identity),
    identity,
    created_at: now,
    updated_at: now,
    instructions: null,
    tools: Object.create(null) as PinFile['tools'],
    pending: Object.create(null) as PinFile['pending'],
    pending_instructions: null,
    listed_at: null,
    announced_at: null,
  };
}

/** The pins directory for a configured state directory (not created; may not exist). */
export function pinsDirFor(stateDir: string): string {
  return join(recordDirFor(stateDir), 'pins');
}

export class PinStore {
  constructor(private readonly stateDir: string) {}

  get dir(): string {
    return pinsDirFor(this.stateDir);
  }

  /** The pins of `id`, null when there are none; throws when the file exists but cannot be read as pins. */
  read(id: string): PinFile | null {
    let text: string;
    try {
      text = readFileSync(join(this.dir, `${id}.json`), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
    const parsed = JSON.parse(text) as PinFile;
    if (parsed?.version !== 1 || typeof parsed.tools !== 'object' || parsed.tools === null) throw new Error(`${id}.json is not a pin file of this version`);
    // Secrets masked, as the pins keep them (a file written before they were kept masked reads the same).
    const data = processMasker().value(parsed);
    // Null-prototype maps: a tool named "__proto__" is a key like any other.
    data.tools = Object.assign(Object.create(null) as PinFile['tools'], data.tools);
    data.pending = Object.assign(Object.create(null) as PinFile['pending'], data.pending ?? {});
    data.pending_instructions ??= null;
    data.listed_at ??= null;
    data.announced_at ??= null;
    return data;
  }

  /** Every pin file, with the ones that cannot be read named. */
  all(): { pins: PinFile[]; unreadable: Array<{ file: string; error: string }> } {
    let names: string[];
    try {
      names = readdirSync(this.dir)
        .filter((n) => /^[0-9a-f]{32}\.json$/.test(n))
        .sort();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { pins: [], unreadable: [] };
      throw error;
    }
    const pins: PinFile[] = [];
    const unreadable: Array<{ file: string; error: string }> = [];
    for (const name of names) {
      try {
        const pin = this.read(name.slice(0, -5));
        if (pin !== null) pins.push(pin);
      } catch (error) {
        unreadable.push({ file: join(this.dir, name), error: (error as Error).message });
      }
    }
    return { pins, unreadable };
  }

  /** The pins directory, made (0700, as the record directory) if it is not there yet. */
  prepareDir(): string {
    const dir = join(ensureRecordDir(this.stateDir), 'pins');
    makePrivateDir(dir);
    return dir;
  }

  /**
   * Replace the file of `pins.id` whole: a 0600 temporary file, synced, its
   * hash recorded in the chain of pin decisions (with `key`, by `by`), then
   * renamed over it. A file that cannot be recorded is not written.
   */
  write(pins: PinFile, key: Buffer | undefined, by: string): void {
    const dir = this.prepareDir();
    const temp = join(dir, `.${pins.id}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
    const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    const text = `${JSON.stringify(pins, null, 1)}\n`;
    try {
      writeSync(fd, text);
      fsyncSync(fd);
      closeSync(fd);
      recordPinFile(dir, key, pins.id, fileHash(text), by);
    } catch (error) {
      try {
        closeSync(fd);
      } catch {
        /* closed already */
      }
      try {
        unlinkSync(temp);
      } catch {
        /* best effort */
      }
      throw error;
    }
    renameSync(temp, join(dir, `${pins.id}.json`));
  }

  /** Remove the file of `id` (recorded first, as write records): true if there was one. */
  forget(id: string, key: Buffer | undefined, by: string): boolean {
    recordPinFile(this.prepareDir(), key, id, null, by);
    try {
      unlinkSync(join(this.dir, `${id}.json`));
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw error;
    }
  }

  /** Why the file of `id` cannot be trusted (decisions.ts `pinFileProblem`), or null. */
  problem(id: string, key: Buffer | undefined): string | null {
    let file: Buffer | null;
    try {
      file = readFileSync(join(this.dir, `${id}.json`));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      file = null;
    }
    return pinFileProblem(readDecisions(this.dir), key, id, file);
  }
}
