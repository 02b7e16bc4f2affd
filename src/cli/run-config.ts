/**
 * The relay's options as the layers below the command line take them: typed
 * configuration objects, built once from the parsed option table, so the
 * gate, the stderr tap, the restart policy and the session never read an
 * option by its name.
 */
import type { GateOptions } from '../gate/setup.js';
import type { RestartOptions } from '../session/restart-policy.js';
import type { RunConfig } from '../session/run.js';
import type { RunValues } from './options.js';

/** The typed configuration of one relay run, from its checked option values. */
export function runConfig(v: RunValues): RunConfig {
  return {
    session: {
      maxFrameBytes: v['max-frame-bytes'],
      onInvalid: v['on-invalid'],
      onChildNoise: v['on-child-noise'],
      allowBatch: v['allow-batch'],
      eraRules: v['era-rules'],
      callTimeout: v['call-timeout'],
      graceMs: v.grace,
      drainMs: v['drain-ms'],
      restart: restartOptions(v),
    },
    stderr: {
      callBytes: v['stderr-call-bytes'],
      processBytes: v['stderr-process-bytes'],
      excerptBytes: v['stderr-excerpt-bytes'],
      retain: v['stderr-retain'],
      passthroughBytes: v['stderr-passthrough'] === 'on' ? v['stderr-passthrough-bytes'] : null,
    },
    excerptOnError: v['stderr-excerpt-on-error'],
    fsync: v.fsync,
    gate: gateOptions(v),
    summary: v['session-summary'],
    recorded: recordedOptions(v),
  };
}

/** --restart and its bounds, or null with --restart never (then nothing of supervision runs). */
function restartOptions(v: RunValues): RestartOptions | null {
  if (v.restart === 'never') return null;
  return {
    mode: v.restart,
    maxRestarts: v['max-restarts'],
    windowMs: v['restart-window'],
    delayMs: v['restart-delay'],
    waitMs: v['restart-wait'],
  };
}

function gateOptions(v: RunValues): GateOptions {
  return {
    validateArgs: v['validate-args'] === 'on',
    validateOutput: v['validate-output'],
    onToolChange: v['on-tool-change'],
    sanitize: { definitions: v.sanitize === 'on', results: v['sanitize-results'] },
    // --name, when given: the pins' identity is then that name alone.
    name: typeof v.name === 'string' && v.name !== '' ? v.name : null,
    recordDir: typeof v['record-dir'] === 'string' ? v['record-dir'] : undefined,
    approvalTimeoutMs: v['approval-timeout'],
    secretsInArgs: v['secrets-in-args'],
  };
}

/** The options worth keeping in the session record (no paths to keys). */
function recordedOptions(v: RunValues): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(v)) if (name !== 'audit-key-file' && name !== 'config') kept[name] = value;
  kept['audit-key'] = typeof v['audit-key-file'] === 'string';
  return kept;
}

/** --otlp-endpoint and --otlp off as otel/config.ts's otlpConfig takes them. */
export function otlpCli(v: RunValues): { endpoint?: string; off: boolean } {
  return { off: v.otlp === 'off', ...(v['otlp-endpoint'] === null ? {} : { endpoint: v['otlp-endpoint'] }) };
}

/**
 * Whether the OpenTelemetry export may be on: not --otlp off, and an endpoint
 * on the command line or in OTEL_EXPORTER_OTLP_*. Only then is otel/ loaded
 * (dynamic imports: a session without export pays nothing for it).
 */
export function otlpWanted(v: RunValues, env: NodeJS.ProcessEnv): boolean {
  if (v.otlp === 'off') return false;
  if (v['otlp-endpoint'] !== null) return true;
  return Object.keys(env).some((k) => k.startsWith('OTEL_EXPORTER_OTLP_') && k.endsWith('ENDPOINT') && env[k]!.trim() !== '');
}
