/**
 * The server's direction of the relay: each line of the child's stdout
 * becomes one decision. An answer to a call the server was sent is checked
 * (its era, the tool's output schema) and forwarded, and ends its call; a
 * server request or notification is forwarded; anything else is noise
 * (diverted, never forwarded), and a line that would answer a call but
 * cannot be forwarded gives that call mcpguard's error instead. The Relay
 * (relay.ts) hands each line here, after its taps.
 */
import { ERA_PROBE_DECLINED, type Call, type CallState } from '../mcp/call.js';
import { escapeBytes, type Diagnostics } from '../mask/diagnostics.js';
import { processMasker } from '../mask/mask.js';
import type { LineEvent } from '../wire/framing.js';
import {
  classifyFrame,
  errorResponse,
  idKey,
  memberId,
  peekAnswerId,
  INTERNAL_ERROR,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  type Classified,
  type Message,
  type RequestId,
  type Response,
} from '../wire/jsonrpc.js';
import type { SessionObserver } from './observer.js';
import { serverInfoOf } from '../mcp/server-info.js';
import { reservedMarker } from '../mcp/reserved.js';
import type { Gate } from '../gate/gate.js';
import type { FrameWriter } from '../wire/writer.js';
import type { CallKeeper, RelayCounters, RelayOptions } from './relay-calls.js';
import type { CallTable } from './calls.js';
import type { EraGuard } from './era-guard.js';
import { one, TOOL_ERROR_DETAIL, toolError } from './client-checks.js';
import type { ResponseDecorator } from './hooks.js';

/** The server's direction: one line of the child's stdout at a time, each forwarded, diverted or refused (ChildLines.line). */
export class ChildLines {
  private readonly calls: CallTable;
  private readonly eras: EraGuard;
  private readonly gate: Gate | null;
  private readonly counters: RelayCounters;

  constructor(
    private readonly keeper: CallKeeper,
    private readonly options: RelayOptions,
    private readonly toClient: FrameWriter,
    private readonly diag: Diagnostics,
    private readonly observers: readonly SessionObserver[],
    /** Asks the session to end; the first reason wins there. */
    private readonly requestEnd: (reason: string) => void,
    /** May return a replacement frame for a single response that ends a call (the stderr excerpt). */
    private readonly decorate: ResponseDecorator | null,
    /** How a line is classified now (batches pass only where the era has them): the relay's, for both directions. */
    private readonly classifyOptions: () => { allowBatch: boolean },
  ) {
    this.calls = keeper.calls;
    this.eras = keeper.eras;
    this.gate = keeper.gate;
    this.counters = keeper.counters;
  }

  /** One line of the server's stdout; `slot` is the relay's one-slot array for a single message (null when re-entered). */
  line(event: LineEvent, slot: Message[] | null): void {
    if (event.kind === 'oversize')
      return this.unreadable(
        event.line,
        `line of ${event.bytes} bytes exceeds --max-frame-bytes ${this.options.maxFrameBytes}`,
        event.head,
        event.bytes,
        peekAnswerId(event.head),
      );
    // Cut off by the end of the server's output: the session is ending, and its end answers the call with how the server went.
    if (event.kind === 'partial') return this.noise(event.line, 'incomplete line at end of output (no newline)', event.bytes, event.bytes.length);
    const message: Classified = classifyFrame(event.frame, this.classifyOptions());
    if (message.kind === 'invalid') {
      // A line that names a method is a request or notification: its id is not an answer's.
      const id = message.method !== null ? null : (message.id ?? (message.code === PARSE_ERROR ? peekAnswerId(event.frame) : null));
      return this.unreadable(event.line, message.reason, event.frame, event.frame.length - 1, id);
    }
    const items = message.kind === 'batch' ? message.items : one(slot, message);
    // The answer to one of mcpguard's own requests (its tools/list) is for mcpguard alone.
    if (message.kind === 'response' && this.gate?.tools.serverAnswered(message)) return;
    // Validate the whole line against the call table and the era before acting on any of it.
    for (const item of items) {
      const marker = item.kind === 'response' && this.calls.inFlight.has(item.idKey) ? reservedMarker(item) : null;
      if (marker !== null) return this.refuseImpersonation(event.line, event.frame, items, marker);
      if (item.kind === 'request' && this.gate?.ownsId(item.idKey)) {
        return this.noise(
          event.line,
          `server request id ${JSON.stringify(item.id)} is the id of a request mcpguard itself has open with the client`,
          event.frame,
          event.frame.length - 1,
        );
      }
      const unasked = item.kind === 'response' ? this.calls.unasked(item) : null;
      if (unasked !== null) return this.noise(event.line, `response to id ${unasked}`, event.frame, event.frame.length - 1);
      const stray = item.kind === 'notification' ? this.eras.strayNotification(item) : null;
      if (stray?.late === true) return this.diag.line(`dropped child line ${event.line}: ${stray.reason}`);
      if (stray !== null) return this.noise(event.line, stray.reason, event.frame, event.frame.length - 1);
      const violation = item.kind === 'response' ? null : this.eras.serverMessage(item);
      if (violation !== null) {
        // Diverted, not forwarded: a server request's id never enters the table.
        if (this.options.eraRules === 'enforce') return this.eras.report('child', event.line, violation, event.frame, 'refused');
        this.eras.report('child', event.line, violation, event.frame, 'forwarded');
      }
      if (item.kind === 'request' && this.calls.childRequests.has(item.idKey)) {
        return this.noise(event.line, `server request id ${JSON.stringify(item.id)} is already in flight`, event.frame, event.frame.length - 1);
      }
    }
    if (!this.keeper.roomForServerRequests(event.line, message.frame, items)) return;
    let late = 0;
    let frame = message.frame;
    // The calls this line answers, ended once the answer is out: the first in locals (a single response needs no array).
    let first: Call | null = null;
    let firstState: CallState = 'completed';
    let firstDetail: string | null = null;
    let more: Array<[Call, CallState, string | null]> | null = null;
    for (const item of items) {
      if (item.kind === 'request') this.calls.childRequests.set(item.idKey, { id: item.id, method: item.method });
      else if (item.kind === 'notification') {
        if (item.method === 'notifications/tools/list_changed') this.gate?.tools.forget();
        const listen = this.eras.endedListen(item);
        if (listen !== undefined) this.keeper.end(listen, 'stream_ended', 'closed by the server (notifications/cancelled)');
      } else {
        const call = this.calls.inFlight.get(item.idKey)!;
        this.calls.inFlight.delete(item.idKey);
        if (call.state !== null) {
          late++;
          continue;
        }
        const outcome = this.eras.outcome(event.line, call, item);
        if ('refused' in outcome) {
          // A single response (the era with these rules has no batches): the client gets mcpguard's error instead.
          this.refuseAnswer(call, outcome.refused.reason, outcome.refused.rule);
          this.counters.childFrames++;
          return;
        }
        const failedTool = toolError(call, item) && outcome.state === 'completed';
        const state = failedTool ? 'tool_error' : outcome.state;
        if (state === 'error' && call.method === 'server/discover' && memberId(item.frame, item.body, 'code') === METHOD_NOT_FOUND) {
          this.counters.eraProbesDeclined++;
          call.flags = [...(call.flags ?? []), ERA_PROBE_DECLINED];
        }
        const detail = failedTool ? TOOL_ERROR_DETAIL : outcome.detail;
        if (first === null) {
          first = call;
          firstState = state;
          firstDetail = detail;
        } else {
          (more ??= []).push([call, state, detail]);
        }
        if (!this.serverNamed) this.learnServerInfo(call, item);
        if (items.length !== 1) continue;
        const gated =
          this.gate === null || item.isError
            ? null
            : call.method === 'tools/list'
              ? this.gate.toolsListed(call, call.cursor, item.body, item.frame)
              : call.method === 'tools/call'
                ? this.gate.checkOutput(call, item)
                : call.method === 'initialize' || call.method === 'server/discover'
                  ? this.gate.serverAnnounced(call, item)
                  : null;
        const decorated = gated ?? this.decorate?.(call, item) ?? null;
        if (decorated !== null) frame = decorated;
      }
    }
    if (late > 0 && late === items.length) {
      // The client was already answered (timeout) or stopped waiting (cancel).
      this.counters.lateResponses += late;
      this.diag.line(`dropped late response on child line ${event.line} (the call had already ended)`);
      return;
    }
    this.counters.childFrames++;
    // The answer goes out first; the final records follow (only the attempt must be write-ahead).
    this.toClient.write(frame);
    if (first !== null) this.keeper.end(first, firstState, firstDetail);
    if (more !== null) for (const [call, state, detail] of more) this.keeper.end(call, state, detail);
  }

  /** Whether the server has named itself yet (only the first name counts). */
  private serverNamed = false;

  private learnServerInfo(call: Call, response: Response): void {
    const info = serverInfoOf(call.method, response);
    if (info === null) return;
    this.serverNamed = true;
    for (const o of this.observers) o.serverInfo?.(info);
  }

  /**
   * A server answer the client must not get: the call it answers ends
   * `error`, and the client gets mcpguard's error saying why in its place.
   */
  private refuseAnswer(call: Call, reason: string, rule: string): void {
    // The reason may quote the server (a key, a member name): masked like every quote of it.
    const why = `mcpguard refused the server's answer: ${processMasker().text(reason)}`;
    this.keeper.end(call, 'error', why);
    this.toClient.write(errorResponse(call.requestId, INTERNAL_ERROR, why, { state: 'error', rule }));
  }

  /**
   * A server line that cannot be forwarded (too long, not valid JSON-RPC):
   * noise. If its first bytes name a call in flight as the one it
   * answers, that call gets its one answer now, mcpguard's error, instead of
   * waiting until the session ends for an answer that will never pass.
   */
  private unreadable(line: number, reason: string, bytes: Buffer, length: number, id: RequestId | null): void {
    const call = id === null ? undefined : this.calls.sentCall(idKey(id));
    if (call !== undefined) this.refuseAnswer(call, `its answer could not be forwarded: ${reason}`, 'unreadable_answer');
    this.noise(line, reason, bytes, length);
  }

  /**
   * A server line whose answer speaks in mcpguard's voice (mcp/reserved.ts):
   * not forwarded, not rewritten. Every call it answers that the server was
   * sent gets mcpguard's error naming the mark; what else the line held (a
   * batch's requests and notifications) goes with it.
   */
  private refuseImpersonation(line: number, frame: Buffer, items: readonly Message[], marker: string): void {
    const reason = `the server used mcpguard's reserved marker: ${marker}`;
    for (const item of items) {
      const call = item.kind === 'response' ? this.calls.sentCall(item.idKey) : undefined;
      if (call !== undefined) this.refuseAnswer(call, reason, 'reserved_marker');
    }
    this.counters.childFrames++;
    const shown = frame.subarray(0, frame.length - 1);
    this.diag.line(`diverted child line ${line}: reserved_marker: ${reason}: ${escapeBytes(shown)}`);
    this.keeper.notify({ direction: 'child', line, code: null, reason, frame: shown, bytes: shown.length, rule: 'reserved_marker', action: 'refused' });
  }

  private noise(line: number, reason: string, bytes: Buffer, length: number): void {
    this.counters.noiseLines++;
    this.counters.noiseBytes += length;
    const shown = bytes.length > 0 && bytes[bytes.length - 1] === 10 ? bytes.subarray(0, -1) : bytes;
    this.diag.line(`child stdout line ${line} is not JSON-RPC: ${escapeBytes(shown)} (${reason})`);
    this.keeper.notify({ direction: 'child', line, code: null, reason, frame: shown, bytes: length });
    if (this.options.onChildNoise === 'close') this.requestEnd('child_noise');
  }
}
