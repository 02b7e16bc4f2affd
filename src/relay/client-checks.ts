/**
 * What the relay checks on each client line before anything of it is
 * applied: its era's rules and each MCP method's params shape. A request that
 * breaks one is answered through the relay's `reject`; a notification or a
 * response is refused and reported. Also the small helpers of the relay's
 * line handling.
 */
import type { Call } from '../mcp/call.js';
import type { RequestMeta, RuleKind } from '../mcp/era.js';
import { checkShape } from '../mcp/shapes.js';
import type { Diagnostics } from '../mask/diagnostics.js';
import { INVALID_PARAMS, INVALID_REQUEST, memberType, type Message, type RequestId, type Response } from '../wire/jsonrpc.js';
import type { EraGuard } from './era-guard.js';
import type { Rejection } from './observer.js';
import type { RelayCounters } from './relay-calls.js';

/** What the checks need of the relay. */
export interface ChecksHost {
  eras: EraGuard;
  counters: RelayCounters;
  diag: Diagnostics;
  notify(rejection: Rejection): void;
  /** The gate is on (--validate-args or --policy). */
  gated: boolean;
  reject(
    line: number,
    code: number,
    reason: string,
    readId: RequestId | null,
    frame: Buffer | null,
    bytes: number,
    method: string | null,
    rule: RuleKind | 'method_shape' | null,
  ): void;
}

export class ClientLineChecks {
  constructor(private readonly host: ChecksHost) {}

  /**
   * The era's rules for a client line, before any of it is applied. Returns
   * each item's `_meta` reading, or null when the line was refused (a request
   * is answered; a notification or response is not, as JSON-RPC requires).
   */
  era(line: number, frame: Buffer, items: readonly Message[]): RequestMeta[] | null {
    const { metas, refuse } = this.host.eras.clientLine(line, frame, items);
    if (refuse === null) return metas;
    const { violation, culprit } = refuse;
    if (culprit.kind === 'request') {
      const code = violation.rule === 'missing_meta' ? INVALID_PARAMS : INVALID_REQUEST;
      this.host.reject(line, code, violation.reason, items.length === 1 ? culprit.id : null, frame, frame.length - 1, culprit.method, violation.rule);
    } else {
      this.host.counters.rejectedClient++;
      this.host.eras.report('client', line, violation, frame, 'refused');
    }
    return null;
  }

  /**
   * The params of each MCP method against its era's schema. A request with
   * the wrong shape is answered -32602 and never reaches the server; the
   * line was well-formed JSON-RPC, so the session goes on.
   */
  shapes(line: number, frame: Buffer, items: readonly Message[], metas: readonly RequestMeta[]): boolean {
    if (this.host.gated && items.length > 1 && items.some((item) => item.kind === 'request' && item.method === 'tools/call')) {
      // A batch is forwarded whole or not at all, and a gated call may have to wait: it must come on its own line.
      this.host.reject(
        line,
        INVALID_REQUEST,
        'a batch may not carry tools/call while the gate is on (--validate-args or --policy): send each tools/call on its own line',
        null,
        frame,
        frame.length - 1,
        null,
        'method_shape',
      );
      return false;
    }
    for (let i = 0; i < items.length; i++) {
      const item = items[i]!;
      if (item.kind === 'response') continue;
      const problem = checkShape(item.method, item.params, frame, this.host.eras.modern || metas[i]!.claimsModern);
      if (problem === null) continue;
      const reason = `${item.method}: ${problem}`;
      if (item.kind === 'request') {
        this.host.reject(line, INVALID_PARAMS, reason, items.length === 1 ? item.id : null, frame, frame.length - 1, item.method, 'method_shape');
      } else {
        this.host.counters.rejectedClient++;
        this.host.counters.shapeRejections++;
        this.host.diag.line(`refused client line ${line}: method_shape: ${reason}`);
        this.host.notify({
          direction: 'client',
          line,
          code: null,
          reason,
          frame: frame.subarray(0, -1),
          bytes: frame.length - 1,
          rule: 'method_shape',
          action: 'refused',
        });
      }
      return false;
    }
    return true;
  }
}

/** `slot` holding just `message` (a fresh array without a slot). */
export function one(slot: Message[] | null, message: Message): readonly Message[] {
  if (slot === null) return [message];
  slot[0] = message;
  return slot;
}

export const TOOL_ERROR_DETAIL = 'the tool reported an error (result isError: true)';

/**
 * A tools/call the server answered with a result flagged `isError: true`: the
 * tool ran and failed (a JSON-RPC error answer is `error` instead). The gate's
 * own refusals look the same on the wire but never come from the child, so
 * they never pass here and keep their states.
 */
export function toolError(call: Call, response: Response): boolean {
  return call.method === 'tools/call' && !response.isError && memberType(response.body, 'isError') === 'true';
}
