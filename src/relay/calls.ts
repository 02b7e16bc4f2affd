/**
 * The call table: every client request that reached mcpguard, from arrival to
 * its one final state, and the child's own requests awaiting a client answer.
 * Pure state; the session does the IO.
 */
import type { Message, RequestId, Response } from '../wire/jsonrpc.js';
import { newCall, type Call, type CallState } from '../mcp/call.js';

/**
 * An ended call under a key no request id has (every id key starts with `s`
 * or `n`): it keeps the in-flight table from ever becoming empty, because V8
 * gives a Map a fresh table each time its last entry is deleted, about 150
 * bytes per call on a one-at-a-time session. Its state is set, so it is
 * never pending.
 */
const KEEP_KEY = '';

/**
 * Most client requests open at once: waiting for the server's answer, held
 * by the gate, or ended with their id reserved (a few hundred bytes each, so
 * a few MB at most). A server that never answers would otherwise grow the
 * table for as long as the client keeps asking.
 */
export const MAX_OPEN_CALLS = 4096;
/** Most of the server's requests waiting for the client's answer (a client that never answers would grow the table the same way). */
export const MAX_SERVER_REQUESTS = 4096;

export class CallTable {
  /** Client requests the child has not answered, by id key (ended calls with a reserved id included, and one ended placeholder). */
  readonly inFlight = new Map<string, Call>([[KEEP_KEY, { ...newCall(null, null, null, null), state: 'completed' }]]);
  /** The child's requests to the client not yet answered, by id key. */
  readonly childRequests = new Map<string, { id: RequestId; method: string }>();

  /**
   * End a call exactly once; returns false if it had already ended. With
   * `reserveId` the id stays taken after the call ended (timed out, cancelled
   * after dispatch): the child may still answer it, and that late answer must
   * be dropped, not paired with a new request that reused the id.
   */
  finish(call: Call, state: CallState, detail: string | null = null, reserveId = false): boolean {
    if (call.state !== null) return false;
    call.state = state;
    call.detail = detail;
    call.endedAt = Date.now();
    if (call.timer !== null) clearTimeout(call.timer);
    call.timer = null;
    if (!reserveId && call.idKey !== null && this.inFlight.get(call.idKey) === call) this.inFlight.delete(call.idKey);
    return true;
  }

  /**
   * Whether `n` more client requests fit within MAX_OPEN_CALLS. Ids reserved
   * by ended calls (kept only to drop a late answer) give way, oldest first;
   * calls still waiting never do.
   */
  roomFor(n: number): boolean {
    // The placeholder entry does not count.
    if (this.inFlight.size - 1 + n <= MAX_OPEN_CALLS) return true;
    for (const [key, call] of this.inFlight) {
      if (call.state === null || key === KEEP_KEY) continue;
      this.inFlight.delete(key);
      if (this.inFlight.size - 1 + n <= MAX_OPEN_CALLS) return true;
    }
    return false;
  }

  /** Calls still waiting for the child, oldest first. */
  *pending(): IterableIterator<Call> {
    for (const call of this.inFlight.values()) if (call.state === null) yield call;
  }

  /** Ids of calls in flight, oldest first. */
  inFlightCallIds(): string[] {
    const ids: string[] = [];
    for (const call of this.pending()) ids.push(call.callId);
    return ids;
  }

  /**
   * What the call table says against a client line (null: nothing), the
   * whole batch checked before any of it is applied. `ownsId` names
   * mcpguard's own requests to the client.
   */
  lineProblem(items: readonly Message[], ownsId: (key: string) => boolean): { reason: string; id: RequestId | null } | null {
    // A Set is needed only to catch repeats inside a batch.
    const seen = items.length > 1 ? new Set<string>() : null;
    for (const item of items) {
      if (item.kind === 'request') {
        // Answering with the reused id would pair the error with the request in flight.
        if (this.inFlight.has(item.idKey) || seen?.has(item.idKey) || ownsId(item.idKey))
          return { reason: `request id ${JSON.stringify(item.id)} is already in flight`, id: null };
        seen?.add(item.idKey);
      } else if (item.kind === 'response') {
        if (ownsId(item.idKey) && items.length === 1) continue;
        if (!this.childRequests.has(item.idKey) || seen?.has(`r${item.idKey}`))
          return { reason: `response to id ${JSON.stringify(item.id)}, which the server did not ask (or was already answered)`, id: null };
        seen?.add(`r${item.idKey}`);
      }
    }
    return null;
  }

  /**
   * Why a server response answers nothing (null: it answers a request the
   * server was sent). A call the gate holds (for a person, or for mcpguard's
   * own tools/list) or that still waits inside mcpguard is in the table but
   * never reached the server: an answer to it can only be a guess, and
   * delivering it would end a call that never ran.
   */
  unasked(response: Response): string | null {
    const call = this.inFlight.get(response.idKey);
    if (call === undefined) return `${JSON.stringify(response.id)}, which no client request in flight has`;
    return call.dispatchedAt === null
      ? `${JSON.stringify(response.id)}, a request mcpguard has not sent to the server (the gate holds it, or it waits to be written)`
      : null;
  }

  /**
   * The call with this id key that is waiting for the server's answer, if
   * any: one the server was sent. A call the gate holds, or that waits to be
   * written, never reached the server, so nothing the server writes may end it.
   */
  sentCall(key: string): Call | undefined {
    const call = this.inFlight.get(key);
    return call !== undefined && call.state === null && call.dispatchedAt !== null ? call : undefined;
  }
}
