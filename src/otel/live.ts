/**
 * The live export of one session, as run.ts sees it: loaded with a dynamic
 * import() only when export is on, so a session without it loads none of
 * otel/. Resolves the configuration (OTEL_* and the command line), starts the
 * exporter and the span builder, and at the end flushes within a bound.
 */
import type { SessionObserver } from '../relay/observer.js';
import { processMasker } from '../mask/mask.js';
import type { DeliveryStats } from './api.js';
import { otlpConfig, type OtlpCli } from './config.js';
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
  cli: OtlpCli;
  env: Record<string, string | undefined>;
  sessionId: string;
  startedAt: number;
  /** --validate-args on. */
  schema: boolean;
  /** The policy's name, or null without --policy. */
  policy: string | null;
}

/** The session's export, or null when the configuration turns it off. */
export function startExport(o: LiveOptions): LiveExport | null {
  const config = otlpConfig(o.env, o.cli);
  if (config === null) return null;
  const exporter = createExporter(config);
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
