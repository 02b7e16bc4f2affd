/**
 * What a restarted legacy-era server must be told again, and how mcpguard
 * checks that it still offers the contract the client agreed to.
 *
 * HandshakeWatch keeps, as they pass, the client's `initialize` request and
 * `notifications/initialized`, the server's answer to that initialize, and
 * the last tool list the client was given (all its pages). It parses only
 * the few lines that can be these (until the handshake is kept, client lines
 * that name initialize; server lines only while one of those calls is open).
 *
 * replayHandshake sends the kept handshake to a new generation under
 * mcpguard's own ids (its answers are never forwarded), compares the answer
 * with the first one, and lists the tools again to learn whether they changed.
 */
import type { Call } from '../mcp/call.js';
import type { LineEvent } from '../wire/framing.js';
import { idKey, peekId, requestFrame } from '../wire/jsonrpc.js';
import { canonical } from '../records/canonical.js';
import { ownRequestId } from '../wire/own-id.js';
import type { SessionObserver } from '../relay/observer.js';
import type { LineTap } from '../relay/hooks.js';
import { isObject } from '../base/values.js';

type Json = Record<string, unknown>;

/** The initialize answer kept from the first generation. */
export interface ServerHello {
  protocolVersion: string | null;
  capabilities: Json;
}

const INITIALIZE = Buffer.from('initialize');
/** Most pages of mcpguard's own tools/list after a restart. */
const MAX_PAGES = 100;

export class HandshakeWatch implements SessionObserver, LineTap {
  /** The client's initialize params (JSON text), once the relay accepted it. */
  initParams: string | null = null;
  /** The client's notifications/initialized line, as it sent it. */
  initialized: Buffer | null = null;
  hello: ServerHello | null = null;
  /** The tools of the last complete tools/list the client was given (null: it never asked). */
  tools: unknown[] | null = null;
  private candidate: string | null = null;
  private initCall: Call | null = null;
  private readonly toolCalls = new Map<string, Call>();
  private pageTools: unknown[] | null = null;

  /** A client line, before the relay's checks (LineTap): an initialize or notifications/initialized is kept. */
  clientLine(event: LineEvent): void {
    if (this.initialized !== null || event.kind !== 'line' || event.frame.indexOf(INITIALIZE) === -1) return;
    const message = parse(event.frame);
    if (message === null) return;
    if (message.method === 'initialize' && 'id' in message && this.initParams === null) this.candidate = JSON.stringify(message.params ?? {});
    else if (message.method === 'notifications/initialized' && !('id' in message) && this.initParams !== null) this.initialized = Buffer.from(event.frame);
  }

  // ---- SessionObserver: which calls' answers to read ----

  callStarted(call: Call): boolean {
    if (call.idKey === null) return true;
    if (call.method === 'initialize' && this.candidate !== null && this.initCall === null) {
      this.initCall = call;
      this.initParams = this.candidate;
      this.candidate = null;
    } else if (call.method === 'tools/list') {
      this.toolCalls.set(call.idKey, call);
    }
    return true;
  }

  callEnded(call: Call): void {
    if (call.idKey !== null && this.toolCalls.get(call.idKey) === call) this.toolCalls.delete(call.idKey);
  }

  /** A server line, before the relay's checks (LineTap): the answer to the kept initialize, or a tools/list page. */
  serverLine(event: LineEvent): void {
    const init = this.initCall !== null && this.hello === null && this.initCall.state === null ? this.initCall : null;
    if ((init === null && this.toolCalls.size === 0) || event.kind !== 'line') return;
    const id = peekId(event.frame);
    if (id === null) return;
    const key = idKey(id);
    if (init !== null && key === init.idKey) {
      const result = parse(event.frame)?.result;
      if (isObject(result)) this.hello = helloOf(result);
      return;
    }
    const call = this.toolCalls.get(key);
    if (call === undefined || call.state !== null) return;
    const result = parse(event.frame)?.result;
    if (!isObject(result) || !Array.isArray(result.tools)) return;
    this.pageTools = call.cursor && this.pageTools !== null ? [...this.pageTools, ...result.tools] : [...result.tools];
    // The list is complete once a page without a next cursor came.
    if (typeof result.nextCursor !== 'string') this.tools = this.pageTools;
  }
}

/**
 * The relay's first tap on a server line (before the watch): while a replay
 * runs, the answers to mcpguard's own requests are taken here and never reach
 * the relay, so the client never sees them.
 */
export class ReplayTap implements LineTap {
  /** Set by replayHandshake for the time of the replay (ReplayIO.intercept); null: every line passes. */
  take: ((event: LineEvent) => boolean) | null = null;

  serverLine(event: LineEvent): boolean {
    return this.take?.(event) ?? false;
  }
}

export type ReplayOutcome =
  | { ok: true; replayed: boolean; toolsChanged: boolean | null; listChanged: boolean; logging: boolean }
  /** `failed`: no usable answer; `incompatible`: an answer that changes the contract; `exited`: the new generation died first. */
  | { ok: false; reason: string; kind: 'failed' | 'incompatible' | 'exited' };

export interface ReplayIO {
  /** Write a frame to the new generation. */
  send(frame: Buffer): void;
  /** Route the new generation's lines through `take` first (true: consumed); null stops it. */
  intercept(take: ((event: LineEvent) => boolean) | null): void;
  /** Longest wait for each of mcpguard's own requests, ms. */
  waitMs: number;
  /** The new generation's number (in mcpguard's own request ids). */
  generation: number;
  /** An id key in flight on either side (the relay's calls, the server's requests, mcpguard's own): not for mcpguard's ids. */
  taken: (key: string) => boolean;
  /** Resolves when the new generation exits: a request still unanswered then is given up at once. */
  exited: Promise<unknown>;
}

/** Replay the kept handshake to a new generation and check its answer. */
export async function replayHandshake(watch: HandshakeWatch, io: ReplayIO): Promise<ReplayOutcome> {
  if (watch.initParams === null) return { ok: true, replayed: false, toolsChanged: null, listChanged: false, logging: false };
  const asker = new OwnRequests(io);
  const died: ReplayOutcome = { ok: false, kind: 'exited', reason: `the restarted server (generation ${io.generation}) exited during the replayed handshake` };
  try {
    const answer = await asker.ask('initialize', watch.initParams);
    if (asker.exited) return died;
    if (answer === null) return { ok: false, kind: 'failed', reason: `the restarted server did not answer initialize within ${io.waitMs} ms` };
    if (!isObject(answer.result))
      return { ok: false, kind: 'failed', reason: `the restarted server refused initialize: ${JSON.stringify(answer.error ?? null).slice(0, 200)}` };
    const hello = helloOf(answer.result);
    const before = watch.hello;
    if (before !== null) {
      if (hello.protocolVersion !== before.protocolVersion) {
        return {
          ok: false,
          kind: 'incompatible',
          reason: `the restarted server negotiated protocol version ${JSON.stringify(hello.protocolVersion)}, the session uses ${JSON.stringify(before.protocolVersion)}`,
        };
      }
      const missing = missingCapabilities(before.capabilities, hello.capabilities);
      if (missing.length > 0)
        return { ok: false, kind: 'incompatible', reason: `the restarted server no longer declares the capabilities ${missing.join(', ')}` };
    }
    if (watch.initialized !== null) io.send(watch.initialized);
    const caps = before?.capabilities ?? hello.capabilities;
    const toolsCap = caps.tools;
    const listChanged = isObject(toolsCap) && toolsCap.listChanged === true;
    let toolsChanged: boolean | null = null;
    if (watch.tools !== null) {
      const now = await listTools(asker);
      if (asker.exited) return died;
      toolsChanged = now === null ? null : !sameTools(watch.tools, now);
      if (now !== null) watch.tools = now;
    }
    return { ok: true, replayed: true, toolsChanged, listChanged, logging: 'logging' in caps };
  } finally {
    io.intercept(null);
  }
}

/** mcpguard's own requests to a new generation, answered by id and never forwarded. */
class OwnRequests {
  private next = 1;
  private readonly waiting = new Map<string, (message: Json | null) => void>();
  /** The generation exited: every open and later request gets null at once. */
  exited = false;

  constructor(private readonly io: ReplayIO) {
    void io.exited.then(() => {
      this.exited = true;
      for (const resolve of [...this.waiting.values()]) resolve(null);
      this.waiting.clear();
    });
    io.intercept((event) => {
      if (event.kind !== 'line' || this.waiting.size === 0) return false;
      const id = peekId(event.frame);
      const resolve = id === null ? undefined : this.waiting.get(idKey(id));
      if (resolve === undefined) return false;
      this.waiting.delete(idKey(id!));
      resolve(parse(event.frame) ?? {});
      return true;
    });
  }

  ask(method: string, params: string): Promise<Json | null> {
    const id = ownRequestId(`restart-${this.io.generation}`, this.next++, (key) => this.waiting.has(key) || this.io.taken(key));
    if (this.exited) return Promise.resolve(null);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(idKey(id));
        resolve(null);
      }, this.io.waitMs);
      timer.unref();
      this.waiting.set(idKey(id), (message) => {
        clearTimeout(timer);
        resolve(message);
      });
      this.io.send(requestFrame(id, method, params));
    });
  }
}

async function listTools(asker: OwnRequests): Promise<unknown[] | null> {
  const tools: unknown[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < MAX_PAGES; page++) {
    const answer = await asker.ask('tools/list', cursor === null ? '{}' : JSON.stringify({ cursor }));
    const result = answer?.result;
    if (!isObject(result) || !Array.isArray(result.tools)) return null;
    tools.push(...result.tools);
    if (typeof result.nextCursor !== 'string') return tools;
    cursor = result.nextCursor;
  }
  return null;
}

/** Same tools, whatever their order in the list. */
function sameTools(a: unknown[], b: unknown[]): boolean {
  const key = (list: unknown[]) =>
    list
      .map((tool) => canonical(tool))
      .sort()
      .join('\n');
  return a.length === b.length && key(a) === key(b);
}

/**
 * Capabilities the first generation declared and the new one does not: a
 * top-level capability gone, or a sub-flag (listChanged, subscribe) that was
 * true and is not any more. New ones are fine (the client never asked for them).
 */
export function missingCapabilities(before: Json, after: Json): string[] {
  const missing: string[] = [];
  for (const [name, value] of Object.entries(before)) {
    const now = after[name];
    if (now === undefined) {
      missing.push(name);
      continue;
    }
    if (!isObject(value)) continue;
    for (const [flag, on] of Object.entries(value)) {
      if (on === true && (!isObject(now) || now[flag] !== true)) missing.push(`${name}.${flag}`);
    }
  }
  return missing;
}

function helloOf(result: Json): ServerHello {
  return {
    protocolVersion: typeof result.protocolVersion === 'string' ? result.protocolVersion : null,
    capabilities: isObject(result.capabilities) ? result.capabilities : {},
  };
}

function parse(frame: Buffer): Json | null {
  try {
    const value: unknown = JSON.parse(frame.toString('utf8'));
    return isObject(value) ? value : null;
  } catch {
    return null;
  }
}
