/**
 * `mcpguard export otlp [SESSION…] [--since T] [--otlp-endpoint URL] [--record-dir DIR]`:
 * the recorded sessions sent to an OpenTelemetry backend, as the live export
 * would have sent them (otel/backfill.ts). Span ids derive from the session
 * and call ids, so exporting again, or after a live export, replaces and
 * never duplicates. One line per session says what was sent, dropped and failed.
 *
 * Exit codes: 0 every item accepted; 1 nothing to export, or some item was
 * dropped or failed; 125 bad options or no endpoint.
 */
import { parseArgs } from 'node:util';
import { EXIT_USAGE, GuardError } from '../base/errors.js';
import { parseOptionValue } from '../base/option-table.js';
import { processMasker } from '../mask/mask.js';
import { recordDirFor, resolveRecordDir } from '../records/location.js';
import type { DeliveryStats, Exporter } from '../otel/api.js';
import { listLogs } from './views.js';
import { pickSession } from './view-kit.js';
import { parseWhen } from './when.js';

/** Longest wait for the collector to take one batch (BATCH_ITEMS items). */
const DRAIN_MS = 30_000;

export async function runExportCommand(argv: string[], io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream } = process): Promise<number> {
  const fail = (message: string, code = EXIT_USAGE): number => {
    io.stderr.write(`mcpguard export: ${processMasker().text(message)}\n`);
    return code;
  };
  let values: { since?: string; 'otlp-endpoint'?: string; 'record-dir'?: string };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { since: { type: 'string' }, 'otlp-endpoint': { type: 'string' }, 'record-dir': { type: 'string' } },
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    return fail((error as Error).message);
  }
  if (positionals[0] !== 'otlp') return fail(`expects 'otlp' (the only format), got '${positionals[0] ?? ''}'`);
  let since: number | null = null;
  let endpoint: string | null = null;
  try {
    if (values.since !== undefined) since = parseWhen(values.since, '--since');
    if (values['otlp-endpoint'] !== undefined)
      endpoint = parseOptionValue('otlp-endpoint', { kind: 'url', default: null, help: '' }, values['otlp-endpoint']) as string;
  } catch (error) {
    return fail((error as Error).message, error instanceof GuardError ? error.exitCode : EXIT_USAGE);
  }
  const { otlpConfig } = await import('../otel/config.js');
  let config: ReturnType<typeof otlpConfig>;
  try {
    config = otlpConfig(process.env, endpoint === null ? {} : { endpoint });
  } catch (error) {
    return fail((error as Error).message);
  }
  if (config === null) return fail('no endpoint: give --otlp-endpoint URL, or set OTEL_EXPORTER_OTLP_ENDPOINT (and not OTEL_SDK_DISABLED=true)');
  let dir: string;
  try {
    dir = recordDirFor(resolveRecordDir(values['record-dir']));
  } catch (error) {
    return fail((error as Error).message);
  }
  const logs = listLogs(dir);
  const wanted = positionals.slice(1);
  const chosen = [];
  for (const name of wanted) {
    const log = pickSession(logs, name, dir);
    if (typeof log === 'string') return fail(log, 1);
    chosen.push(log);
  }
  const sessions = wanted.length === 0 ? logs : chosen;
  if (sessions.length === 0) return fail(`no sessions in '${dir}'`, 1);
  const [{ backfillLog }, { createExporter }, { scope }] = await Promise.all([
    import('../otel/backfill.js'),
    import('../otel/exporter.js'),
    import('../otel/live.js'),
  ]);
  let incomplete = false;
  for (const log of sessions) {
    const total = emptyStats();
    let current: Exporter | null = null;
    const drain = async (): Promise<void> => {
      if (current !== null) add(total, await current.shutdown(DRAIN_MS));
    };
    let result: Awaited<ReturnType<typeof backfillLog>>;
    try {
      result = await backfillLog(log.file, {
        sampler: config.sampler,
        masker: processMasker(),
        since,
        next: async () => {
          await drain();
          current = createExporter(config!, scope());
          return current;
        },
      });
      await drain();
    } catch (error) {
      incomplete = true;
      io.stderr.write(`mcpguard export: ${log.sessionId}: ${processMasker().text((error as Error).message)}\n`);
      continue;
    }
    const lost = total.dropped.spans + total.dropped.logs + total.failed.spans + total.failed.logs;
    if (lost > 0) incomplete = true;
    io.stdout.write(
      `${log.sessionId}: ${result.calls} call(s); sent ${total.sent.spans} span(s), ${total.sent.logs} log record(s); dropped ${total.dropped.spans + total.dropped.logs}; failed ${total.failed.spans + total.failed.logs}${result.open ? ' (no session record yet: no session span)' : ''}\n`,
    );
  }
  return incomplete ? 1 : 0;
}

function emptyStats(): DeliveryStats {
  return { sent: { spans: 0, logs: 0, metrics: 0 }, dropped: { spans: 0, logs: 0, metrics: 0 }, failed: { spans: 0, logs: 0, metrics: 0 }, errors: 0 };
}

function add(total: DeliveryStats, s: DeliveryStats): void {
  for (const k of ['sent', 'dropped', 'failed'] as const) for (const sig of ['spans', 'logs', 'metrics'] as const) total[k][sig] += s[k][sig];
  total.errors += s.errors;
}
