/**
 * --stderr-excerpt-on-error: the answer to a failed tools/call carries the
 * call's retained stderr under `_meta`, so the agent sees why the tool failed
 * without reading mcpguard's records. The relay calls this as its response
 * decorator (relay/hooks.ts) for a single response that ends a call; run.ts
 * wires it when the option is on.
 */
import type { ResponseDecorator } from '../relay/hooks.js';
import { withMetaEntry } from '../wire/jsonrpc.js';
import type { StderrTap } from './tap.js';

/** The key under `_meta` that carries a failed call's stderr excerpt. */
export const STDERR_META_KEY = 'io.mcpguard/stderr';

/**
 * A tools/call that ended in a JSON-RPC error or in a result with
 * `isError: true` gets its retained stderr, cut to the excerpt budget, under
 * `_meta`; every other answer is left as it came.
 */
export function excerptDecorator(stderr: StderrTap): ResponseDecorator {
  return (call, response) => {
    if (call.method !== 'tools/call') return null;
    const failed = response.isError || response.body.members?.get('isError')?.type === 'true';
    if (!failed) return null;
    const excerpt = stderr.excerpt(call);
    return excerpt === null ? null : withMetaEntry(response, STDERR_META_KEY, excerpt);
  };
}
