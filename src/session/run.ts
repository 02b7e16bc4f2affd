/**
 * The relay's wiring: everything a session needs besides the child itself,
 * which the command line has already started (so the server's start-up runs
 * while these modules load). Builds the stderr tap, the audit log and the
 * session, runs it, and writes the session record and summary.
 */
import type { StartedChild } from '../process/child.js';
import { AuditLog } from './audit.js';
import { ignoredSignalText, reportDebugSignals } from '../process/debug-signals.js';
import { Diagnostics } from '../mask/diagnostics.js';
import { EXIT_RECORD_FAILURE } from '../base/errors.js';
import { processMasker } from '../mask/mask.js';
import { jsonLine } from '../mask/escape.js';
import { gateFactory, type GateOptions } from '../gate/setup.js';
import type { Policy } from '../gate/policy.js';
import { openOutput } from '../base/output.js';
import { ProbeWatch } from './probe.js';
import { ResourceMeter } from '../process/resources.js';
import { markedProcesses } from '../process/marker.js';
import type { RelayCounters } from '../relay/relay.js';
import { Session, type SessionEnding, type SessionIO, type SessionSummary } from './session.js';
import type { SessionOptions } from './session-types.js';
import { StderrTap, type StderrOptions, type StderrSummary } from '../stderr/tap.js';
import { excerptDecorator } from '../stderr/decorate.js';
import { humanSummary, summaryFormat, type SummaryMode } from './summary.js';
import type { Watchdog } from '../process/watchdog.js';
import type { LiveExport } from '../otel/live.js';
import type { OtlpConfig } from '../otel/api.js';
import { basename } from 'node:path';

/**
 * The relay's options, typed: the command line builds this once from its
 * option table (cli/run-config.ts), so nothing below it reads option names.
 */
export interface RunConfig {
  /** Framing, era, timing and --restart for the session (its command and marker come from Prepared). */
  session: Omit<SessionOptions, 'command' | 'args' | 'marker'>;
  stderr: StderrOptions;
  /** --stderr-excerpt-on-error. */
  excerptOnError: boolean;
  /** --fsync. */
  fsync: boolean;
  gate: GateOptions;
  /** --session-summary. */
  summary: SummaryMode;
  /** The options worth keeping in the session record (no paths to keys). */
  recorded: Record<string, unknown>;
}

/** What the command line prepared before the child started. */
export interface Prepared {
  config: RunConfig;
  command: string;
  args: string[];
  /** The session's id: its record file, its summary, and MCPGUARD_SESSION_ID in the child's environment. */
  sessionId: string;
  started: StartedChild;
  startedAt: number;
  watchdog: Watchdog | undefined;
  /** Record directory and key, already checked; null with --records off. */
  records: { dir: string; key: Buffer | undefined } | null;
  /** Signals that arrived before the session existed, and where later ones go. */
  signals: { pending: NodeJS.Signals[]; handler: ((signal: NodeJS.Signals) => void) | null };
  /** The policy, loaded and checked before the child started; null without --policy. */
  policy: Policy | null;
  /** --approve-cmd resolved to an absolute file before the child started; null without it. */
  approveCmd: string[] | null;
  /** Why this session keeps no records (--records off, or best-effort with an unusable directory); null when it does. */
  recordsOff: string | null;
  /** The OpenTelemetry export's configuration (--otlp-endpoint, OTEL_*), checked before the child started; null: export off. */
  otlp?: OtlpConfig | null;
}

/** At exit, give up on a client that took nothing from stdout for this long. */
export const OUTPUT_STALL_MS = 2000;

/** Run the relay session; resolves to mcpguard's exit status (EXIT_RECORD_FAILURE when the audit log failed). */
export async function runRelay(p: Prepared): Promise<number> {
  const c = p.config;
  const diagStream = openOutput(2);
  const diag = new Diagnostics(diagStream);
  reportDebugSignals((what) => diag.line(ignoredSignalText(what)));
  const output = openOutput(1);
  const stderr = new StderrTap(
    c.stderr,
    process.env,
    (bytes) => diag.mirror(bytes),
    (limit) => diag.line(mirrorCapText(limit)),
  );
  diagStream.on('drain', () => stderr.resumeMirror());
  const decorate = c.excerptOnError ? excerptDecorator(stderr) : undefined;
  let session: Session | undefined;
  const audit =
    p.records === null
      ? null
      : new AuditLog({ dir: p.records.dir, fsync: c.fsync, key: p.records.key }, p.sessionId, (error) => {
          diag.line(`cannot write the audit log: ${error.message}; ending the session`);
          session?.end('record_failure');
        });
  audit?.sessionStarted({ command: p.command, args: p.args, cwd: process.cwd(), options: c.recorded });
  const otel = p.otlp ? await loadExport(p, p.otlp, (line) => diag.line(line)) : null;
  if (otel !== null) diag.onLine = otel.diagnostic;
  const probe = new ProbeWatch();
  let isProbe = false;
  // CPU and memory of the server's tree: sampled while it runs, once more when the end is decided (before the tree is shut down), finished once it is reaped.
  const meter = new ResourceMeter({ findMarked: () => markedProcesses(p.sessionId) });
  // A probe session is sealed before its child is waited for: its client SIGKILLs mcpguard a second after ending it.
  const sealProbe = (ending: SessionEnding): void => {
    meter.lastSample();
    isProbe = probe.isProbe(ending.reason);
    if (isProbe) audit?.sessionEnded(processMasker().value(probeEndLine(ending, stderr.summary(), p.startedAt)));
  };
  session = new Session(
    {
      command: p.command,
      args: p.args,
      ...c.session,
      marker: p.sessionId,
    },
    // The stderr tap observes first: a call's stderr counts are set before anyone records the call.
    {
      input: process.stdin,
      output,
      diag,
      observers: [stderr, ...(audit === null ? [] : [audit]), probe, ...(otel === null ? [] : [otel.observer])],
      stderr,
      decorate,
      gate: gateFactory(c.gate, p.policy, [p.command, ...p.args].join(' '), (type, body) => audit?.gateRecord(type, body), p.approveCmd, p.records?.key),
      watchdog: p.watchdog,
      onSpawn: (pid) => {
        audit?.childSpawned(pid);
        meter.start(pid);
      },
      onEnding: sealProbe,
      ...(c.session.restart === null ? {} : supervisionRecords(audit, otel)),
    },
  );
  // The session's first records were written before the session existed to be ended.
  if (audit?.failure) session.end('record_failure');
  const live = session;
  p.signals.handler = (signal) => {
    live.end(`signal_${signal}`);
    live.escalate();
  };
  for (const signal of p.signals.pending.splice(0)) p.signals.handler(signal);

  const summary = await session.run(p.started, p.startedAt);
  // Everything the client is owed goes out before the summary, as long as the client keeps reading.
  summary.outputUnflushedBytes = await session.flushOutput(OUTPUT_STALL_MS);
  const mirrorSummary = stderr.mirrorSummary();
  if (mirrorSummary !== null) diag.writeLine(mirrorSummary);
  // Reasons, the stderr tail and the like quote both sides: masked like everything else mcpguard keeps.
  const record = processMasker().value(summaryLine(summary, stderr.summary()));
  // A session without records says so, and why, in its summary (the only account it leaves).
  if (p.recordsOff !== null) record.records = { state: 'off', reason: p.recordsOff };
  if (isProbe) record.probe = true;
  if (audit !== null) record.name = audit.sessionName.name;
  // Finished after session.run: the server has been reaped, so its CPU is in mcpguard's own cutime.
  if (summary.pid !== null) record.resources = meter.finish();
  // The export's last flush comes after the server was reaped: it can delay mcpguard's exit by its bound, never the child's shutdown.
  if (otel !== null) record.otlp = await finishExport(otel, summary, stderr.summary());
  // A probe's log was sealed when the session ended; the record below goes to the summary only.
  if (audit !== null && !audit.log.sealed) audit.sessionEnded(record);
  if (audit?.failure) diag.line(`the audit log ${audit.log.path} is incomplete: ${audit.failure.message}`);
  if (audit !== null && audit.droppedAfterSeal > 0) {
    diag.line(`${audit.droppedAfterSeal} event(s) after the probe session's log was sealed are not in it (see the session summary)`);
  }
  const summaryAs = summaryFormat(c.summary);
  if (summaryAs === 'json') diag.writeLine(jsonLine({ mcpguard: 'session_end', session_id: p.sessionId, ...record }));
  if (summaryAs === 'human') {
    const place = { sessionId: p.sessionId, command: p.command, args: p.args, logPath: audit?.log.path ?? null, recordsOff: p.recordsOff };
    for (const line of humanSummary(record, place)) diag.line(line);
  }
  await diag.flush(1000);
  // The child's own status is in the summary; the exit status says the record is incomplete.
  return audit?.failure ? EXIT_RECORD_FAILURE : summary.status;
}

/** Said once, when the mirror of the child's stderr first reaches its cap. */
function mirrorCapText(limit: number): string {
  return `the mirror of the server's stderr reached its cap of ${limit} bytes (--stderr-passthrough-bytes raises it): from here on it is counted, not shown; the records still keep each call's and the session's stderr within their own budgets`;
}

/** The session-end record as one JSON object (until the audit log carries it). */
function summaryLine(s: SessionSummary, stderr: StderrSummary): Record<string, unknown> {
  return {
    end_reason: s.endReason,
    pid: s.pid,
    exit_code: s.exitCode,
    signal: s.signal,
    status: s.status,
    spawn_error: s.spawnError,
    forced_kill: s.forcedKill,
    unkillable: s.unkillable,
    signals_sent: s.signalsSent,
    survivors: s.survivors,
    found_by_marker: s.foundByMarker,
    trigger_to_exit_ms: s.triggerToExitMs,
    stream_end: s.streamEnd,
    stderr_bytes_seen: s.stderrBytes,
    ...trafficFields(s.counters, stderr),
    era: s.protocol.era,
    protocol_version: s.protocol.version,
    era_decided_by: s.protocol.decidedBy,
    output_dropped_frames: s.outputDropped,
    output_unflushed_bytes: s.outputUnflushedBytes,
    duration_ms: s.endedAt - s.startedAt,
    ...(s.restarts == null ? {} : { restarts: s.restarts.count, generations: s.restarts.generations, restarts_stopped_by: s.restarts.stoppedBy }),
  };
}

/** The records of a supervised session: each generation's start and end, and each restart. */
function supervisionRecords(audit: AuditLog | null, otel: LiveExport | null): Pick<SessionIO, 'onGeneration' | 'onGenerationEnd' | 'onRestarted'> {
  return {
    onGeneration: (g) => audit?.generationStarted(g),
    onGenerationEnd: (g) =>
      audit?.generationEnded({
        generation: g.generation,
        pid: g.pid,
        started_at: new Date(g.startedAt).toISOString(),
        ended_at: new Date(g.endedAt).toISOString(),
        exit_code: g.exitCode,
        signal: g.signal,
        status: g.status,
        stream_end: g.streamEnd,
        signals_sent: g.signalsSent,
        survivors: g.survivors,
        stderr_bytes_seen: g.stderrBytes,
        stderr_tail: g.stderrTail,
        next: g.next,
        delay_ms: g.delayMs,
      }),
    onRestarted: (r) => {
      otel?.restarted();
      audit?.restarted({
        generation: r.generation,
        handshake_replayed: r.replayed,
        tools_changed: r.toolsChanged,
        list_changed_sent: r.listChangedSent,
        client_warned: r.warned,
        state_lost: r.stateLost,
      });
    },
  };
}

/**
 * The session's export, loaded with a dynamic import() (a session without
 * export loads none of otel/), or null when it cannot start (said once; the
 * session runs anyway).
 */
async function loadExport(p: Prepared, config: OtlpConfig, say: (line: string) => void): Promise<LiveExport | null> {
  const c = p.config;
  const policy = c.recorded.policy;
  try {
    const { startExport } = await import('../otel/live.js');
    return startExport({
      config,
      sessionId: p.sessionId,
      startedAt: p.startedAt,
      schema: c.gate.validateArgs,
      policy: p.policy === null ? null : typeof policy === 'string' ? basename(policy) : 'inline',
    });
  } catch (error) {
    say(`the OpenTelemetry export is off: ${(error as Error).message}`);
    return null;
  }
}

/** The session's root span, the last metrics and the bounded flush: what the export sent, dropped and failed, for the session record. */
async function finishExport(otel: LiveExport, s: SessionSummary, e: StderrSummary): Promise<Record<string, unknown>> {
  const stats = await otel.finish({
    endedAt: s.endedAt,
    endReason: s.endReason,
    protocolVersion: s.protocol.version,
    status: s.status,
    stderrTail: e.tail,
    stderrSeen: e.bytes_seen,
    stderrRetained: e.bytes_retained,
    restarts: s.restarts?.count ?? null,
  });
  // The root span's times, kept so that `mcpguard export otlp` sends this span again exactly as it went out.
  return { ...stats, session_span: { started_at: new Date(s.startedAt).toISOString(), ended_at: new Date(s.endedAt).toISOString() } };
}

/**
 * A probe session's record, written when its end is decided: the traffic so
 * far, and no exit (`child_exit: "not_awaited"`; the shutdown comes after the
 * seal, and its findings go only to the session summary on stderr).
 */
function probeEndLine(e: SessionEnding, stderr: StderrSummary, startedAt: number): Record<string, unknown> {
  return {
    end_reason: e.reason,
    probe: true,
    child_exit: 'not_awaited',
    pid: e.pid,
    exit_code: null,
    signal: null,
    status: null,
    stderr_bytes_seen: e.stderrBytes,
    ...trafficFields(e.counters, stderr),
    era: e.protocol.era,
    protocol_version: e.protocol.version,
    era_decided_by: e.protocol.decidedBy,
    duration_ms: Date.now() - startedAt,
  };
}

function trafficFields(c: RelayCounters, stderr: StderrSummary): Record<string, unknown> {
  return {
    stderr,
    frames: { client: c.clientFrames, child: c.childFrames },
    rejected: { client: c.rejectedClient, child: c.noiseLines },
    redactions: stderr.redactions,
    stdout_noise_lines: c.noiseLines,
    stdout_noise_bytes: c.noiseBytes,
    late_responses: c.lateResponses,
    undelivered_requests: c.undelivered,
    calls: c.states,
    era_probes_declined: c.eraProbesDeclined,
    era_violations: c.eraViolations,
    shape_rejections: c.shapeRejections,
  };
}
