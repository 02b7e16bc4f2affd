/**
 * The tools a server advertised, as the gate knows them: learned from every
 * `tools/list` answer that passes to the client (all pages; a list-changed
 * notification makes them learned again), and, when a call names a tool not
 * known yet, from a `tools/list` of mcpguard's own (its own ids; the answer is
 * not forwarded). The schemas themselves are compiled and run by the JSON
 * Schema engine (schema.ts), behind the `Schemas` interface.
 */
import { requestFrame, type Response } from '../wire/jsonrpc.js';
import type { Delivery } from '../wire/writer.js';
import { verdictText, type ArgumentSource, type ToolSchemas, type Verdict } from './schema/schema.js';
import { nodeText, scanJson, stringValue, type JsonNode } from '../wire/json-scan.js';
import { META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, type RequestMeta } from '../mcp/era.js';

/** The engine's side: the tools of one server and their compiled schemas (schema.ts). */
export type Schemas = Pick<ToolSchemas, 'learnPage' | 'forget' | 'known' | 'tool' | 'checkCall' | 'checkCallNow' | 'checkOutputNow'>;

/** The gate's view of one call's arguments. */
export type SchemaVerdict = { ok: true } | { ok: false; kind: 'invalid' | 'unusable' | 'unknown_tool'; reason: string };

/** How long mcpguard waits for its own tools/list before failing the call closed. */
export const OWN_LIST_TIMEOUT_MS = 10000;
/** Most pages mcpguard follows in its own tools/list (a server that pages forever cannot hold a call forever). */
const MAX_PAGES = 100;

interface Own {
  write(frame: Buffer): void;
  toChild(frame: Buffer, delivery?: Delivery): void;
  diag(line: string): void;
}

export class ToolBook {
  /** mcpguard's own tools/list in flight, shared by every call waiting for it. */
  private fetching: Promise<void> | null = null;
  /** Own request ids awaiting the server's answer, by id key. */
  private readonly pending = new Map<string, (response: Response | null | typeof RESTARTED) => void>();
  private nextId = 1;
  /** Own requests that timed out: their answers, if they come, are swallowed. */
  private readonly late = new Set<string>();
  /** The server died and is still being closed: no tools/list answer teaches anything. */
  private down = false;
  constructor(
    private readonly schemas: Schemas,
    private readonly io: Pick<Own, 'toChild' | 'diag'>,
    private readonly ownId: (n: number) => string,
    /** The session's protocol version (it decides a schema's default dialect). */
    private readonly version: () => string | null,
    /** Each page of mcpguard's own tools/list, for the pins (first page, last page). */
    private readonly ownPage?: (list: Array<Record<string, unknown> | null>, first: boolean, last: boolean) => void,
  ) {}

  /** The tool's advertised annotations (the server's claims; none: {}), or null when the server has not listed the tool. */
  annotations(name: string): Record<string, unknown> | null {
    if (!this.schemas.known(name)) return null;
    const annotations = this.schemas.tool(name)?.annotations;
    return typeof annotations === 'object' && annotations !== null ? (annotations as Record<string, unknown>) : {};
  }

  forget(): void {
    this.schemas.forget();
  }

  /**
   * The server died and a restart is on its way (--restart): its tools are
   * unknown from now on, and until the dead one is closed (restarted()) no
   * answer teaches any (what is still read from it, or from a process it left
   * holding its stdout, describes a server that is gone). Own requests are
   * asked again, of the next generation, as restarted() does.
   */
  serverDown(): void {
    if (this.down) return;
    this.restarted();
    this.down = true;
  }

  /**
   * The server was restarted (--restart): its tools are learned again, and
   * mcpguard's own requests the dead one never answered are asked again (of
   * the new one), so a call waiting for them is not refused for the crash.
   */
  restarted(): void {
    // Asked again when the server went down: those requests wait for this generation already.
    const askedAgain = this.down;
    this.down = false;
    this.schemas.forget();
    if (askedAgain) return;
    for (const [key, resolve] of [...this.pending]) {
      this.pending.delete(key);
      this.late.add(key);
      resolve(RESTARTED);
    }
  }

  /** The tool as the server advertised it, if known. */
  definition(name: string): Readonly<Record<string, unknown>> | undefined {
    return this.schemas.tool(name);
  }

  /** A result's structuredContent against the tool's outputSchema, now (null: the engine is not loaded). */
  checkOutputNow(name: string, structuredContent: unknown): ReturnType<Schemas['checkOutputNow']> {
    return this.schemas.checkOutputNow(name, structuredContent);
  }

  ownsId(key: string): boolean {
    return this.pending.has(key) || this.late.has(key);
  }

  /** The check without waiting, or null when it must wait (the tool is not known yet, or the engine is not loaded). */
  checkNow(name: string, args: CallArgs): SchemaVerdict | null {
    if (!this.schemas.known(name)) return null;
    const verdict = this.schemas.checkCallNow(name, args);
    return verdict === null ? null : this.verdict(name, verdict);
  }

  /** Check a call's arguments, learning the tools first if this one is not known. */
  async check(name: string, args: CallArgs, meta: RequestMeta, frame: Buffer): Promise<SchemaVerdict> {
    if (!this.schemas.known(name)) {
      this.fetching ??= this.fetchAll(meta, frame).finally(() => (this.fetching = null));
      await this.fetching;
      if (!this.schemas.known(name)) return { ok: false, kind: 'unknown_tool', reason: 'the server does not list it in tools/list' };
    }
    return this.verdict(name, await this.schemas.checkCall(name, args));
  }

  private verdict(name: string, verdict: Verdict): SchemaVerdict {
    if (verdict.ok) return verdict;
    if (verdict.kind === 'unknown_tool') return { ok: false, kind: 'unknown_tool', reason: 'the server does not list it in tools/list' };
    if (verdict.kind === 'unusable' && verdict.first) {
      this.io.diag(
        `the inputSchema of tool ${JSON.stringify(name)} cannot be used (${verdict.reason}); its calls are refused until the server lists a usable one`,
      );
    }
    return { ok: false, kind: verdict.kind, reason: verdictText(verdict, name) };
  }

  /** A tools/list answer (any page): learn its tools; returns the `tools` array node and its parsed value. */
  learnAnswer(result: JsonNode, frame: Buffer, first: boolean): { node: JsonNode; list: Array<Record<string, unknown> | null> } | null {
    const node = rescanArray(frame, result.members?.get('tools'));
    if (node === null) return null;
    const list = JSON.parse(nodeText(frame, node)) as Array<Record<string, unknown> | null>;
    if (!this.down) this.schemas.learnPage(list, first, this.version());
    return { node, list };
  }

  /** The server's answer to one of mcpguard's own requests: consumed (true), never forwarded. */
  serverAnswered(response: Response): boolean {
    if (this.late.delete(response.idKey)) return true; // an own request given up on: its answer is nobody's
    const resolve = this.pending.get(response.idKey);
    if (resolve === undefined) return false;
    this.pending.delete(response.idKey);
    resolve(response);
    return true;
  }

  /** Every page of the server's tools/list, asked by mcpguard itself. */
  private async fetchAll(meta: RequestMeta, frame: Buffer): Promise<void> {
    const envelope = modernEnvelope(meta, frame);
    let cursor: string | null = null;
    for (let page = 0; page < MAX_PAGES; page++) {
      const response = await this.ask(envelope, cursor);
      if (response === RESTARTED) continue; // the same page again, of the new server (MAX_PAGES still bounds it)
      if (response === null || response.isError) {
        this.io.diag(
          `mcpguard's own tools/list ${response === null ? `got no answer within ${OWN_LIST_TIMEOUT_MS} ms` : 'was answered with an error'}; calls to tools it has not seen are refused`,
        );
        return;
      }
      const learned = this.learnAnswer(response.body, response.frame, cursor === null);
      const next = response.body.members?.get('nextCursor');
      if (learned !== null) this.ownPage?.(learned.list, page === 0, next?.type !== 'string');
      if (learned === null || next?.type !== 'string') return;
      cursor = stringValue(response.frame, next);
    }
  }

  private ask(envelope: string | null, cursor: string | null): Promise<Response | null | typeof RESTARTED> {
    const id = this.ownId(this.nextId++);
    const params = [envelope === null ? null : `"_meta":${envelope}`, cursor === null ? null : `"cursor":${JSON.stringify(cursor)}`].filter((p) => p !== null);
    const key = `s${id}`;
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      this.pending.set(key, (response) => {
        clearTimeout(timer);
        resolve(response);
      });
      // The clock starts when the request reaches the server's stdin: while a restarted server comes
      // up (--restart), the request waits in mcpguard like the calls do, and the call waiting for it too.
      const delivery: Delivery = {
        dispatched: () => {
          if (!this.pending.has(key)) return;
          timer = setTimeout(() => {
            this.pending.delete(key);
            this.late.add(key);
            resolve(null);
          }, OWN_LIST_TIMEOUT_MS);
          timer.unref();
        },
        undelivered: () => {
          clearTimeout(timer);
          if (this.pending.delete(key)) resolve(null);
        },
      };
      this.io.toChild(requestFrame(id, 'tools/list', params.length === 0 ? null : `{${params.join(',')}}`), delivery);
    });
  }
}

/** What an own request gets when the server it went to was restarted before answering. */
const RESTARTED = Symbol('restarted');

/** 2026-07-28 requests need the version and the client's capabilities: mcpguard's own borrow the client's. */
function modernEnvelope(meta: RequestMeta, frame: Buffer): string | null {
  if (!meta.claimsModern || meta.version === null) return null;
  const caps = meta.capabilitiesNode === null ? '{}' : nodeText(frame, meta.capabilitiesNode);
  return `{${JSON.stringify(META_PROTOCOL_VERSION)}:${JSON.stringify(meta.version)},${JSON.stringify(META_CLIENT_CAPABILITIES)}:${caps}}`;
}

function rescanArray(frame: Buffer, node: JsonNode | undefined): JsonNode | null {
  if (node?.type !== 'array') return null;
  if (node.items !== undefined) return node;
  const rescanned = scanJson(frame, node.start, node.end);
  return rescanned.ok ? rescanned.value : null;
}

/** What the schema check and the policy's `when` clauses read: the arguments' value. */
export interface ArgsValue {
  /** The parsed arguments (`{}` when the call has none); the same value on every call. */
  value(): unknown;
}

/** Absent arguments are checked as these bytes. */
const NO_ARGUMENTS = Buffer.from('{}');

/**
 * A tools/call's `arguments` as the gate reads them: their bytes (the schema
 * check reads large ones from there), and their value parsed once, the first
 * time the schema or the policy asks (with neither, never). One small
 * object per call, where a closure, its context and a Buffer view were made
 * for every call before.
 */
export class CallArgs implements ArgsValue, ArgumentSource {
  #parsed = false;
  #value: unknown = undefined;
  #bytes: Buffer | null = null;

  /** `node`: the `arguments` member of the call's params in `call`, if it has one. */
  constructor(
    private readonly call: Buffer,
    private readonly node: JsonNode | undefined,
  ) {}

  // The span as getters, not fields: this object is made for every call.
  /** The arguments' JSON text is frame[start, end) (`{}` when the call has none). */
  get frame(): Buffer {
    return this.node === undefined ? NO_ARGUMENTS : this.call;
  }

  get start(): number {
    return this.node === undefined ? 0 : this.node.start;
  }

  get end(): number {
    return this.node === undefined ? NO_ARGUMENTS.length : this.node.end;
  }

  /** The arguments' bytes as the client sent them (`{}` when absent). */
  get bytes(): Buffer {
    return (this.#bytes ??= this.frame.subarray(this.start, this.end));
  }

  value(): unknown {
    if (!this.#parsed) {
      this.#value = JSON.parse(this.frame.toString('utf8', this.start, this.end));
      this.#parsed = true;
    }
    return this.#value;
  }
}
