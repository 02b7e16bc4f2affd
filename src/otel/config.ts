/**
 * TEMPORARY (h-otel-live): the smallest configuration reader the span builder's
 * wiring needs, until the delivery half (h-otel-wire: OTEL_* in full, both
 * encodings, compression) lands on main and replaces this file. It reads the
 * endpoint, headers, service name and sampler; it always speaks http/json.
 */
import type { OtlpConfig, SignalTarget } from './api.js';

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

/** The export's configuration, or null when it is off (no endpoint, --otlp off, OTEL_SDK_DISABLED=true). */
export function otlpConfig(env: Readonly<Record<string, string | undefined>>, cli: { endpoint?: string; off?: boolean }): OtlpConfig | null {
  if (cli.off === true || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return null;
  const base = cli.endpoint ?? nonEmpty(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  const headers = parseHeaders(env.OTEL_EXPORTER_OTLP_HEADERS);
  const target = (signal: 'traces' | 'logs' | 'metrics'): SignalTarget | null => {
    const own = cli.endpoint === undefined ? nonEmpty(env[`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`]) : null;
    const url = own ?? (base === null ? null : `${base.replace(/\/+$/, '')}/v1/${signal}`);
    return url === null ? null : { url, headers, protocol: 'http/json', compression: 'none', timeoutMs: 10_000 };
  };
  const traces = target('traces');
  const logs = target('logs');
  const metrics = target('metrics');
  if (traces === null && logs === null && metrics === null) return null;
  const kind = (env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on').trim() as (typeof SAMPLERS)[number];
  const ratio = Number(env.OTEL_TRACES_SAMPLER_ARG ?? '1');
  return {
    traces,
    logs,
    metrics,
    resource: [['service.name', nonEmpty(env.OTEL_SERVICE_NAME) ?? 'mcpguard']],
    sampler: { kind: SAMPLERS.includes(kind) ? kind : 'parentbased_always_on', ratio: Number.isFinite(ratio) ? Math.min(1, Math.max(0, ratio)) : 1 },
  };
}

function nonEmpty(v: string | undefined): string | null {
  return v === undefined || v.trim() === '' ? null : v.trim();
}

function parseHeaders(text: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at > 0) headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
}
