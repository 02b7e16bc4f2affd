/**
 * The live export of one session, as run.ts sees it: loaded with a dynamic
 * import() only when export is on, so a session without it loads none of
 * otel/. Resolves the configuration (OTEL_* and the command line), starts the
 * exporter and the span builder, and at the end flushes within a bound.
 */
import type { SessionObserver } from '../relay/observer.js';
import { processMasker } from '../mask/mask.js';
import { readFileSync } from 'node:fs';
import type { DeliveryStats, OtlpConfig } from './api.js';
import { createExporter } from './exporter.js';
import { SpanBuilder, type SessionEnd } from './spans.js';

/** Longest the session's end waits for the collector (after the server has been shut down and reaped). */
export const FLUSH_MS = 2000;

export interface LiveExport {
  observer: SessionObserver;
  /** One of mcpguard's own diagnostic lines. */
  diagnostic(text: string): void;
  restarted(): void;
  /** The session's root span and last metrics, then a flush of at most `deadlineMs`: what was sent, dropped and failed. */
  finish(end: SessionEnd, deadlineMs?: number): Promise<DeliveryStats>;
}

export interface LiveOptions {
  /** Resolved and checked before the server started (otel/config.ts). */
  config: OtlpConfig;
  sessionId: string;
  startedAt: number;
  /** --validate-args on. */
  schema: boolean;
  /** The policy's name, or null without --policy. */
  policy: string | null;
}

/** The instrumentation scope every item goes under: mcpguard and its version. */
export function scope(): { name: string; version: string } {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  return { name: 'mcpguard', version: typeof pkg.version === 'string' ? pkg.version : '' };
}

/** The session's export. */
export function startExport(o: LiveOptions): LiveExport {
  const config = o.config;
  const exporter = createExporter(config, scope());
  const builder = new SpanBuilder({
    session: { sessionId: o.sessionId, schema: o.schema, policy: o.policy },
    startedAt: o.startedAt,
    exporter,
    sampler: config.sampler,
    masker: processMasker(),
  });
  return {
    observer: builder,
    diagnostic: (text) => builder.diagnostic(text),
    restarted: () => builder.restarted(),
    finish: (end, deadlineMs = FLUSH_MS) => {
      builder.end(end);
      return exporter.shutdown(deadlineMs);
    },
  };
}
