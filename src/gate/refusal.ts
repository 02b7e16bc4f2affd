/**
 * The answers the gate writes itself instead of the server's. A refusal is a
 * tool execution error (`isError: true`): the model reads it and can correct
 * itself or stop. Its `_meta` names mcpguard as the source.
 */
import type { Call } from '../mcp/call.js';
import { resultResponse } from '../wire/jsonrpc.js';
import { processMasker } from '../mask/mask.js';
import type { Outcome } from './gate.js';

export function refusal(call: Call, state: 'rejected' | 'denied', reason: string, modern: boolean): Outcome {
  const text = `mcpguard ${state === 'denied' ? 'denied' : 'refused'} this call before it reached the server: ${processMasker().text(reason)}`;
  // `_meta` first: whoever reads only the start of the line still sees that mcpguard answered.
  const result = {
    ...(modern ? { resultType: 'complete' } : {}),
    _meta: { 'io.mcpguard/refused': { source: 'mcpguard', state, by: call.decision?.by ?? null, rule: call.decision?.rule ?? null } },
    content: [{ type: 'text', text }],
    isError: true,
  };
  return { kind: 'refuse', state, reason, answer: resultResponse(call.requestId, result) };
}

/** The outcome of a call withdrawn while held: ignored by the relay (the call has already ended). */
export function withdrawn(): Outcome {
  return { kind: 'refuse', state: 'denied', reason: 'withdrawn', answer: Buffer.alloc(0) };
}
