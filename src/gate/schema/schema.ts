/**
 * The tools a server advertised, and their input and output schemas
 * compiled on demand: what `--validate-args` checks a `tools/call` against
 * before it may reach the server, and what the policy's `when` clauses use.
 *
 * mcpguard learns the tools from the server's `tools/list` answers as they
 * pass (all pages). A page answering a request without a cursor starts a new
 * generation; later pages add to it; a list-changed notification forgets
 * them all. Each schema is compiled the first time a call needs it and kept
 * for the generation. The engine (engine.ts) loads with the first schema.
 */
import { GuardError } from '../../base/errors.js';
import type { ArgumentSource, CompiledSchema, Outcome } from './engine.js';
import { OK, type Verdict } from './verdict.js';
import { isObject } from '../../base/values.js';

export { verdictText, type Verdict, type SchemaError, type Subject } from './verdict.js';
export type { ArgumentSource } from './engine.js';

// Only errors.js and verdict.ts load with this module; everything else of the
// gate, and the library, loads with engine.js on the first schema.
type Engine = typeof import('./engine.js');
let engine: Engine | undefined;
let loading: Promise<Engine> | undefined;

/** Load the engine (once; later calls share the first load). Rejects only if it cannot be imported. */
export function loadEngine(): Promise<void> {
  loading ??= import('./engine.js').then((m) => (engine = m));
  return loading.then(() => undefined);
}

/** The engine is loaded: schemas compile and check synchronously. */
export function engineLoaded(): boolean {
  return engine !== undefined;
}

/** A compiled schema, or why it cannot be used. */
type Slot = { compiled: CompiledSchema } | { reason: string };

interface Tool {
  definition: Readonly<Record<string, unknown>>;
  /** The protocol version in force when the tool was learned: it decides the default dialect. */
  protocolVersion: string | null;
  /** Listed twice in one generation with different definitions: neither is trusted. */
  conflict: boolean;
  input?: Slot;
  output?: Slot;
}

/** Refusals remembered so each is reported once; past this many the memory starts over. */
const MAX_REPORTED = 4096;

export interface ToolSchemasOptions {
  /** The negotiated protocol version (null until known: the current spec's defaults). */
  protocolVersion?: string | null;
}

export class ToolSchemas {
  #tools = new Map<string, Tool>();
  #generation = 0;
  #protocolVersion: string | null;
  readonly #reported = new Set<string>();

  constructor(options: ToolSchemasOptions = {}) {
    this.#protocolVersion = options.protocolVersion ?? null;
  }

  /** The protocol version used for tools learned from now on. */
  get protocolVersion(): string | null {
    return this.#protocolVersion;
  }

  set protocolVersion(version: string | null) {
    this.#protocolVersion = version;
  }

  /** Increases with every fresh list and every forget(). */
  get generation(): number {
    return this.#generation;
  }

  /** Number of tools known in this generation. */
  get size(): number {
    return this.#tools.size;
  }

  /**
   * Learn one page of a `tools/list` result (its `tools` array). `first`:
   * the request had no cursor, so this page starts a new generation.
   * Entries without a string `name` are skipped. `protocolVersion`, when
   * given, replaces the one in force (as setting `protocolVersion` does).
   */
  learnPage(tools: unknown[], first: boolean, protocolVersion?: string | null): void {
    if (protocolVersion !== undefined) this.#protocolVersion = protocolVersion;
    if (first) this.forget();
    if (!Array.isArray(tools)) return;
    for (const definition of tools) {
      if (!isObject(definition) || typeof definition.name !== 'string') continue;
      const name = definition.name;
      const before = this.#tools.get(name);
      const conflict = before !== undefined && (before.conflict || JSON.stringify(before.definition) !== JSON.stringify(definition));
      this.#tools.set(name, { definition, protocolVersion: this.#protocolVersion, conflict });
    }
  }

  /** Forget every tool (the server said its list changed). */
  forget(): void {
    this.#tools = new Map();
    this.#generation++;
  }

  /** The server listed a tool of this name in the current generation. */
  known(name: string): boolean {
    return this.#tools.has(name);
  }

  /** The tool's definition as the server advertised it (annotations and all; untrusted), or undefined. */
  tool(name: string): Readonly<Record<string, unknown>> | undefined {
    return this.#tools.get(name)?.definition;
  }

  /** Names of the known tools, in the order they were listed. */
  names(): string[] {
    return [...this.#tools.keys()];
  }

  /**
   * Check a call's arguments against the tool's inputSchema (absent
   * arguments are checked as `{}`). Loads the engine on first use.
   */
  async checkArguments(name: string, args: unknown): Promise<Verdict> {
    return this.checkCall(name, valueOnly(args));
  }

  /** checkArguments without waiting: null when the engine is not loaded yet (then await checkArguments). */
  checkArgumentsNow(name: string, args: unknown): Verdict | null {
    return this.checkCallNow(name, valueOnly(args));
  }

  /**
   * checkArguments of a call's arguments as the gate holds them: large ones
   * a simple schema passes are checked from their bytes, never decoded.
   */
  async checkCall(name: string, args: ArgumentSource): Promise<Verdict> {
    const tool = this.#tools.get(name);
    if (tool === undefined) return { ok: false, kind: 'unknown_tool' };
    const failed = await ensureEngine();
    if (failed !== null) return this.#refuse('input', name, failed);
    return this.#checkInput(name, tool, args);
  }

  /** checkCall without waiting: null when the engine is not loaded yet (then await checkCall). */
  checkCallNow(name: string, args: ArgumentSource): Verdict | null {
    const tool = this.#tools.get(name);
    if (tool === undefined) return { ok: false, kind: 'unknown_tool' };
    if (!engineLoaded()) return null;
    return this.#checkInput(name, tool, args);
  }

  /**
   * Check a result's `structuredContent` against the tool's outputSchema
   * (`ok` when the tool has none; pass undefined when the result has no
   * structuredContent, which a tool with an outputSchema must send).
   */
  async checkOutput(name: string, structuredContent: unknown): Promise<Verdict> {
    const tool = this.#tools.get(name);
    if (tool === undefined) return { ok: false, kind: 'unknown_tool' };
    if (!Object.hasOwn(tool.definition, 'outputSchema')) return OK;
    const failed = await ensureEngine();
    if (failed !== null) return this.#refuse('output', name, failed);
    return this.#checkOutput(name, tool, structuredContent);
  }

  /** checkOutput without waiting: null when the engine is not loaded yet. */
  checkOutputNow(name: string, structuredContent: unknown): Verdict | null {
    const tool = this.#tools.get(name);
    if (tool === undefined) return { ok: false, kind: 'unknown_tool' };
    if (!Object.hasOwn(tool.definition, 'outputSchema')) return OK;
    if (!engineLoaded()) return null;
    return this.#checkOutput(name, tool, structuredContent);
  }

  #checkInput(name: string, tool: Tool, args: ArgumentSource): Verdict {
    tool.input ??= tool.conflict
      ? { reason: 'the server listed this tool more than once, with different definitions' }
      : compileSlot(tool.definition, 'inputSchema', tool.protocolVersion);
    if ('reason' in tool.input) return this.#refuse('input', name, tool.input.reason);
    return verdictOf(tool.input.compiled.checkArguments(args));
  }

  #checkOutput(name: string, tool: Tool, structuredContent: unknown): Verdict {
    if (structuredContent === undefined) {
      return { ok: false, kind: 'invalid', errors: [{ path: '', keyword: 'structuredContent', message: 'is missing, but the tool declares an outputSchema' }] };
    }
    tool.output ??= tool.conflict
      ? { reason: 'the server listed this tool more than once, with different definitions' }
      : compileSlot(tool.definition, 'outputSchema', tool.protocolVersion);
    if ('reason' in tool.output) return this.#refuse('output', name, tool.output.reason);
    return verdictOf(tool.output.compiled.check(structuredContent));
  }

  #refuse(subject: 'input' | 'output', name: string, reason: string): Verdict {
    const key = `${subject}\0${name}\0${reason}`;
    const first = !this.#reported.has(key);
    if (first) {
      if (this.#reported.size >= MAX_REPORTED) this.#reported.clear();
      this.#reported.add(key);
    }
    return { ok: false, kind: 'unusable', reason, first };
  }
}

/** Load the engine; null when loaded, else why it could not be (the checks then fail closed). */
async function ensureEngine(): Promise<string | null> {
  if (engine !== undefined) return null;
  try {
    await loadEngine();
    return null;
  } catch (error) {
    return `the JSON Schema engine could not be loaded (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`;
  }
}

/** Called only once the engine is loaded. */
function compileSlot(definition: Readonly<Record<string, unknown>>, member: 'inputSchema' | 'outputSchema', protocolVersion: string | null): Slot {
  if (!Object.hasOwn(definition, member)) return { reason: `the tool has no ${member}` };
  const schema = definition[member];
  if (!isObject(schema)) return { reason: `its ${member} is not a JSON object` };
  try {
    return { compiled: engine!.compileSchema(schema, engine!.resolveDialect(schema, protocolVersion)) };
  } catch (error) {
    if (error instanceof GuardError) return { reason: error.message };
    // Anything else the library throws while compiling (a RangeError, a bug) refuses the schema too.
    return { reason: `it cannot be compiled (${error instanceof Error ? error.message.split('\n')[0] : String(error)})` };
  }
}

const NO_BYTES = Buffer.alloc(0);

/** Arguments given as a value (absent: `{}`), with no bytes to check. */
function valueOnly(args: unknown): ArgumentSource {
  const value = args === undefined ? {} : args;
  return { frame: NO_BYTES, start: 0, end: 0, value: () => value };
}

function verdictOf(outcome: Outcome): Verdict {
  if (outcome.ok || outcome.kind === 'invalid') return outcome;
  return { ok: false, kind: 'invalid', errors: [{ path: '', keyword: outcome.keyword ?? 'depth', message: outcome.reason }] };
}

/**
 * A policy `when` clause: true when the arguments match the schema. `source`:
 * the arguments' bytes too, when the caller has them, so numbers are judged
 * on their digits (numbers.ts).
 */
export type WhenPredicate = (args: unknown, source?: Partial<ArgumentSource>) => boolean;

/**
 * Compile a policy `when` schema with the same engine (call after
 * `await loadEngine()`). Its dialect is its `$schema`, else 2020-12.
 * Throws GuardError('bad_schema') naming what is wrong. The predicate checks
 * absent arguments as `{}`, and throws GuardError('when_unchecked') for
 * arguments too deeply nested to check (the caller decides; deny is safe).
 */
export function compileWhen(schema: unknown): WhenPredicate {
  if (engine === undefined) throw new GuardError('engine_not_loaded', 'compileWhen needs the JSON Schema engine: await loadEngine() first');
  let compiled: CompiledSchema;
  try {
    if (!isObject(schema) && typeof schema !== 'boolean') throw new GuardError('schema_unusable', 'must be a JSON Schema (an object or a boolean)');
    compiled = engine.compileSchema(schema, engine.resolveDialect(schema, null));
  } catch (error) {
    const what = error instanceof Error ? error.message : String(error);
    throw new GuardError('bad_schema', `"when" is not a usable JSON Schema: ${what}`);
  }
  return (args: unknown, source?: Partial<ArgumentSource>): boolean => {
    const inexact = source?.frame === undefined ? null : compiled.inexact(source as ArgumentSource);
    if (inexact !== null) throw new GuardError('when_unchecked', `the arguments could not be checked against "when": ${inexact}`);
    const outcome = compiled.matches(args === undefined ? {} : args);
    if (outcome.ok) return true;
    if (outcome.kind === 'invalid') return false;
    throw new GuardError('when_unchecked', `the arguments could not be checked against "when": ${outcome.reason}`);
  };
}
