/**
 * The pins of one relay session: what the server lists is compared with what
 * was pinned the first time its identity was seen (store.ts), and each change
 * (a new tool, a removed one, a changed definition, changed instructions) is
 * reported once, with a readable diff, and recorded. Then, by
 * --on-tool-change:
 *
 *   warn   the change goes through, and the pin takes it (it is reported once);
 *   ask    the change is held: the first call of the changed tool shows the
 *          diff on an approval card (gate.ts), accepting updates the pin;
 *   block  the changed or new tool is left out of the tools/list the client
 *          sees, and its calls are refused, until `mcpguard pins accept`.
 *
 * A held change lives in the pin file (`pending`), so it is held in the next
 * session too, and `mcpguard pins diff` shows it.
 */
import { diffLines, diffTool, wordDiff } from './diff.js';
import { reveal } from './sanitize.js';
import { processMasker } from '../mask/mask.js';
import { digest, pinnedPart, sha256, type ToolDefinition } from './definition.js';
import { emptyPins, identityId, identityLabel, PinStore, type Identity, type PendingChange, type PinFile } from './store.js';

export type OnToolChange = 'warn' | 'ask' | 'block' | 'off';

export interface PinConfig {
  mode: OnToolChange;
  /** --name, when given. */
  name: string | null;
  /** The server's command line. */
  command: string;
  /** The configured state (record) directory. */
  stateDir: string;
  /** The audit key (--audit-key-file), for the chain of pin decisions that records each pin file. */
  key?: Buffer;
}

export interface PinIO {
  diag(line: string): void;
  /** An audit record (type, body). */
  record(type: string, body: Record<string, unknown>): void;
}

/** A held change, as the gate shows it. */
export interface Held {
  tool: string;
  kind: PendingChange['kind'];
  sha256: string | null;
  /** One line: what changed. */
  summary: string;
  /** The pin file's id (for `mcpguard pins accept`). */
  pinsId: string;
  /** The diff, line by line. */
  lines: string[];
}

export class PinGuard {
  private pins: PinFile | null = null;
  /** Write the file (false: it exists but could not be read; it is left alone, and pins live in memory only). */
  private persist = true;
  private serverName: string | null = null;
  /** Names listed since the last first page, for removals (decided when a listing is complete). */
  private listing = new Set<string>();

  constructor(
    private readonly config: PinConfig,
    private readonly io: PinIO,
    private readonly store = new PinStore(config.stateDir),
  ) {}

  get active(): boolean {
    return this.config.mode !== 'off';
  }

  /** The server named itself (serverInfo.name). Used only before the pins were loaded: the identity is fixed for the session. */
  serverNamed(name: string | null): void {
    if (this.pins === null && name !== null) this.serverName = name;
  }

  /**
   * The server's instructions (initialize or server/discover answer; undefined: none).
   * Returns true when they must be left out of the answer (block, and they changed).
   */
  instructions(text: string | undefined): boolean {
    if (!this.active) return false;
    const pins = this.load();
    const sha = text === undefined ? null : sha256(text);
    const now = new Date().toISOString();
    // The hash is of the server's own text; the text is kept (and shown) masked, as the records keep it.
    const kept = text === undefined ? undefined : masked(text);
    if (pins.announced_at === null) {
      pins.announced_at = now;
      pins.instructions = kept === undefined ? null : { sha256: sha!, text: kept };
      this.save('pin_instructions', { instructions_sha256: sha });
      return false;
    }
    if ((pins.instructions?.sha256 ?? null) === sha) {
      if (pins.pending_instructions !== null) {
        pins.pending_instructions = null;
        this.save('pin_reverted', { what: 'instructions' });
      }
      return false;
    }
    const seen = pins.pending_instructions !== null && pins.pending_instructions.sha256 === sha;
    if (!seen) {
      const before = pins.instructions?.sha256 ?? null;
      const lines = visible([
        `instructions ${sha === null ? 'removed' : pins.instructions === null ? 'added' : 'changed'}: ${wordDiff(masked(pins.instructions?.text ?? ''), kept ?? '')}`,
      ]);
      this.report('instructions', lines);
      if (this.config.mode === 'warn') {
        pins.instructions = kept === undefined ? null : { sha256: sha!, text: kept };
        pins.pending_instructions = null;
      } else pins.pending_instructions = { sha256: sha, text: kept ?? null, seen_at: now };
      this.save('pin_change', { what: 'instructions', before_sha256: before, after_sha256: sha, action: this.action(), diff: lines });
    }
    return this.config.mode === 'block' && pins.pending_instructions !== null;
  }

  /**
   * A page of a tools/list answer (parsed). `first`: no cursor was sent (a new
   * listing starts); `last`: the answer has no nextCursor (the listing is
   * complete: tools pinned and not listed are removed). Returns the indexes of
   * the tools to leave out of the answer (block).
   */
  listed(tools: ReadonlyArray<Record<string, unknown> | null>, first: boolean, last: boolean): Set<number> {
    const hide = new Set<number>();
    if (!this.active) return hide;
    const pins = this.load();
    if (first) this.listing = new Set();
    const initial = pins.listed_at === null;
    const now = new Date().toISOString();
    let dirty = false;
    tools.forEach((tool, i) => {
      if (tool === null || typeof tool !== 'object' || typeof tool.name !== 'string') return;
      // Compared by the hash of the server's own definition; kept, keyed and shown masked.
      const name = masked(tool.name);
      this.listing.add(name);
      const sha = digest(pinnedPart(tool));
      const definition = masked(pinnedPart(tool));
      const pinned = Object.hasOwn(pins.tools, name) ? pins.tools[name] : undefined;
      const pending = Object.hasOwn(pins.pending, name) ? pins.pending[name] : undefined;
      if (pinned?.sha256 === sha) {
        if (pending !== undefined) {
          delete pins.pending[name];
          this.io.diag(`tool ${JSON.stringify(name)} of ${this.label()} is listed as pinned again; its held change is dropped`);
          this.save('pin_reverted', { tool: name, sha256: sha });
        }
        return;
      }
      if (pinned === undefined && initial) {
        // The first listing of this identity (all its pages) is what gets pinned.
        pins.tools[name] = { sha256: sha, definition, pinned_at: now };
        dirty = true;
        return;
      }
      const kind = pinned === undefined ? 'added' : 'changed';
      if (pending?.sha256 !== sha) {
        const lines = visible(kind === 'added' ? [`new tool ${JSON.stringify(name)}`] : diffLines(diffTool(masked(pinned!.definition), definition)));
        this.report(`tool ${JSON.stringify(name)} ${kind === 'added' ? 'is new' : 'changed'}`, lines);
        if (this.config.mode === 'warn') {
          pins.tools[name] = { sha256: sha, definition, pinned_at: now };
          delete pins.pending[name];
        } else pins.pending[name] = { kind, sha256: sha, definition, seen_at: now };
        this.save('pin_change', { tool: name, kind, before_sha256: pinned?.sha256 ?? null, after_sha256: sha, action: this.action(), diff: lines });
      }
      if (this.config.mode === 'block' && Object.hasOwn(pins.pending, name)) hide.add(i);
    });
    if (last) {
      if (initial) {
        pins.listed_at = now;
        this.save('pin_created', {
          tools: Object.keys(pins.tools).length,
          tools_sha256: Object.fromEntries(Object.entries(pins.tools).map(([n, t]) => [n, t.sha256])),
        });
        dirty = false;
      } else this.removals(pins, now);
    }
    if (dirty && this.persist) this.write();
    return hide;
  }

  /** Tools pinned and not in a complete listing: removed. A held new tool no longer listed is no longer held. */
  private removals(pins: PinFile, now: string): void {
    for (const [name, pending] of Object.entries(pins.pending)) {
      if (pending.kind !== 'added' || this.listing.has(name)) continue;
      delete pins.pending[name];
      this.save('pin_reverted', { tool: name, kind: 'added' });
    }
    for (const name of Object.keys(pins.tools)) {
      if (this.listing.has(name)) continue;
      if (pins.pending[name]?.kind === 'removed') continue;
      const lines = [`tool ${JSON.stringify(name)} is no longer listed`];
      this.report(`tool ${JSON.stringify(name)} was removed`, lines);
      const before = pins.tools[name]!.sha256;
      if (this.config.mode === 'warn') delete pins.tools[name];
      else pins.pending[name] = { kind: 'removed', sha256: null, definition: null, seen_at: now };
      this.save('pin_change', { tool: name, kind: 'removed', before_sha256: before, after_sha256: null, action: this.action(), diff: lines });
    }
  }

  /** The change held for `tool` (ask, block), if any. */
  held(name: string): Held | null {
    if (!this.active || this.config.mode === 'warn' || this.pins === null) return null;
    const tool = masked(name);
    const pending = Object.hasOwn(this.pins.pending, tool) ? this.pins.pending[tool]! : undefined;
    if (pending === undefined || pending.kind === 'removed') return null;
    const pinned = Object.hasOwn(this.pins.tools, tool) ? this.pins.tools[tool] : undefined;
    const lines = visible(
      pending.kind === 'added' || pinned === undefined
        ? [`new tool ${JSON.stringify(tool)}, not in the pins of ${this.label()}`]
        : diffLines(diffTool(masked(pinned.definition), masked(pending.definition!))),
    );
    const summary =
      pending.kind === 'added'
        ? `tool ${JSON.stringify(tool)} is new since ${this.label()} was pinned`
        : `the definition of tool ${JSON.stringify(tool)} changed since it was pinned`;
    return { tool: name, kind: pending.kind, sha256: pending.sha256, summary, pinsId: this.pins.id, lines };
  }

  /** A person accepted the held change of `tool` (its hash as shown): the pin takes it. */
  accept(name: string, sha: string | null, by: string): void {
    if (this.pins === null) return;
    const tool = masked(name);
    const pending = Object.hasOwn(this.pins.pending, tool) ? this.pins.pending[tool]! : undefined;
    if (pending === undefined || pending.sha256 !== sha) return;
    const before = this.pins.tools[tool]?.sha256 ?? null;
    if (pending.kind === 'removed') delete this.pins.tools[tool];
    else this.pins.tools[tool] = { sha256: pending.sha256!, definition: masked(pending.definition as ToolDefinition), pinned_at: new Date().toISOString() };
    delete this.pins.pending[tool];
    this.io.diag(`the change of tool ${JSON.stringify(tool)} of ${this.label()} was accepted (${by}); the pin is updated`);
    this.save('pin_accepted', { tool, kind: pending.kind, before_sha256: before, after_sha256: sha, by });
  }

  private action(): string {
    return this.config.mode === 'warn'
      ? 'passed (warn): the pin takes it'
      : this.config.mode === 'ask'
        ? 'held (ask): the first call asks a person'
        : 'held (block): hidden and refused until accepted';
  }

  private report(what: string, lines: string[]): void {
    this.io.diag(`pins: ${what} for ${this.label()} (--on-tool-change ${this.config.mode}): ${lines.join('; ')}`);
  }

  private label(): string {
    return JSON.stringify(identityLabel(this.pins?.identity ?? this.identity()));
  }

  private identity(): Identity {
    return { name: this.config.name, server_name: this.config.name === null ? this.serverName : null, command: this.config.command };
  }

  private load(): PinFile {
    if (this.pins !== null) return this.pins;
    const identity = this.identity();
    const id = identityId(identity);
    try {
      const problem = this.store.problem(id, this.config.key);
      if (problem !== null) return this.refused(identity, id, problem);
      this.pins = this.store.read(id);
    } catch (error) {
      this.persist = false;
      this.io.diag(
        `pins: cannot read the pins of ${JSON.stringify(identityLabel(identity))} (${(error as Error).message}); the file is left as it is, and this session pins in memory only`,
      );
    }
    // The id is of the identity as given; the file keeps it masked.
    this.pins ??= { ...emptyPins(identity), identity: masked(identity) };
    return this.pins;
  }

  /**
   * A pin file that is not the one last recorded in the chain of pin
   * decisions: nothing in it is trusted, and it is left as it is. Every tool
   * (and the instructions) is held as new, as if pinned as nothing: a person
   * decides (ask), or nothing runs until one does (block).
   */
  private refused(identity: Identity, id: string, problem: string): PinFile {
    this.persist = false;
    const now = new Date().toISOString();
    this.pins = { ...emptyPins(identity), identity: masked(identity), listed_at: now, announced_at: now };
    this.io.diag(
      `pins: the pins of ${this.label()} (${this.store.dir}/${id}.json) are refused: ${problem}. Nothing in them is trusted: this session holds every tool and the instructions as new (--on-tool-change ${this.config.mode}) and pins in memory only. See mcpguard verify; \`mcpguard pins forget ${id}\` starts them again`,
    );
    this.io.record('pins_refused', { pins_id: id, server: identityLabel(this.pins.identity), reason: problem });
    return this.pins;
  }

  /** Write the file and record why. */
  private save(type: string, body: Record<string, unknown>): void {
    if (this.persist) this.write();
    this.io.record(type, { pins_id: this.pins!.id, server: identityLabel(this.pins!.identity), ...body });
  }

  private write(): void {
    try {
      this.pins!.updated_at = new Date().toISOString();
      this.store.write(this.pins!, this.config.key, 'session');
    } catch (error) {
      this.persist = false;
      this.io.diag(`pins: cannot write the pins of ${this.label()} (${(error as Error).message}); this session pins in memory only`);
    }
  }
}

/**
 * A value from the server or the command line as the pins keep it: secrets
 * masked (mask.ts), as the session records keep the same values. Masking is
 * idempotent, so a pin file written before (raw) reads the same once masked.
 */
function masked<T>(value: T): T {
  return processMasker().value(value);
}

/** Diff lines as a terminal, a card or a record can show them: hidden characters written out. */
function visible(lines: string[]): string[] {
  return lines.map((line) => reveal(line).text);
}
