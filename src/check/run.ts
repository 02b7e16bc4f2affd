/**
 * One run of the check: the conversation in the era --protocol-version names
 * (or the probe finds), on one server process (two when auto finds a legacy
 * server: the probe's process is stopped and a new one gets initialize, as
 * the SDK v2 client does), then how the server ended. It ends with a report
 * of what was observed, never with an exception for something the server did.
 */
import { explainSpawnFailure } from '../process/spawn-failure.js';
import { ByteRing, type RingSnapshot } from '../stderr/ring.js';
import type { ShutdownReport } from '../process/shutdown.js';
import { converse } from './conversation.js';
import { decideByProbe, type DecidedBy, type Era, type EraDecision } from './era.js';
import { Exchange, type BehaviourFinding, type ConversationResult, type ServerInfo, type Step } from './exchange.js';
import { converseModern, discover } from './modern.js';
import { AUTO, DEFAULT_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSION, type CheckPlan } from './options.js';
import { startServer, type Ended } from './server.js';
import type { StdoutFinding } from './transcript.js';

export { STDERR_KEEP_BYTES } from './server.js';

export type ExitHow = 'before_stdin_closed' | 'after_stdin_closed' | 'after_sigterm' | 'after_sigkill' | 'unkillable' | 'interrupted';

export interface StdoutReport {
  bytes: number;
  lines: number;
  messages: number;
  notifications: number;
  serverRequests: string[];
  findings: StdoutFinding[];
  omitted: number;
}

export interface ExitReport {
  code: number | null;
  signal: NodeJS.Signals | null;
  how: ExitHow;
  /** From closing stdin to the exit, ms; null if it exited before. */
  msAfterStdinClosed: number | null;
  signalsSent: string[];
  survivors: Array<{ pid: number; comm: string }>;
}

export interface StderrReport {
  bytes: number;
  masked: number;
  ring: RingSnapshot;
}

export interface EraReport {
  /** Null: mcpguard was interrupted (or the server could not start) before it was known. */
  era: Era | null;
  decidedBy: DecidedBy | null;
  /** How it was decided, for a person. */
  how: string;
  /** The probe's own process, when auto found a legacy server and started a new one for initialize. */
  probe: { step: Step; stdout: StdoutReport; exit: ExitReport; stderr: StderrReport } | null;
}

export interface RunReport {
  run: number;
  status: 'clean' | 'violations' | 'could_not_run' | 'interrupted';
  /** Why it could not run (command not found, …). */
  error: string | null;
  durationMs: number;
  era: EraReport;
  stdout: StdoutReport;
  steps: Step[];
  server: ServerInfo | null;
  behaviour: BehaviourFinding[];
  exit: ExitReport | null;
  stderr: StderrReport;
}

/** Signals to mcpguard during a run: the first stops the conversation, the second cuts the grace waits. */
export interface Interrupt {
  first: Promise<void>;
  second: () => Promise<void>;
  signal: string | null;
  /** A second signal cut the grace waits short: how the server ended says nothing about it. */
  cut: boolean;
}

export async function checkOnce(plan: CheckPlan, version: string, run: number, interrupt: Interrupt): Promise<RunReport> {
  const startedAt = Date.now();
  const era = plan.protocolVersion === AUTO ? 'probing' : plan.protocolVersion === MODERN_PROTOCOL_VERSION ? 'modern' : 'legacy';
  const started = await startServer(plan, era, interrupt.first);
  if (!started.ok) return couldNotRun(plan, run, startedAt, started.error);
  let server = started.server;
  let talk: ConversationResult;
  let decision: EraDecision | null;
  let probe: EraReport['probe'] = null;

  if (era === 'legacy') {
    decision = { era: 'legacy', decidedBy: 'option', how: `named by --protocol-version ${plan.protocolVersion}` };
    talk = await converse(plan, plan.protocolVersion, version, server.io);
  } else if (era === 'modern') {
    decision = { era: 'modern', decidedBy: 'option', how: `named by --protocol-version ${plan.protocolVersion}` };
    talk = await converseModern(plan, version, new Exchange(server.io), null);
  } else {
    const exchange = new Exchange(server.io);
    const answer = await discover(plan, version, exchange, true);
    decision = decideByProbe(exchange.last, answer, server.io.show);
    if (decision?.era === 'modern') {
      server.io.transcript.decide('modern');
      talk = await converseModern(plan, version, exchange, { answer });
    } else if (decision === null) {
      talk = { ...exchangeResult(exchange), server: noServer() };
    } else {
      // The SDK v2 client probes on a process of its own and starts the session on a new one:
      // so does the check, so that a legacy server meets initialize first, as every client sends it.
      server.io.transcript.decide('legacy');
      const ended = await server.stop(interrupt.second);
      probe = { step: exchange.last, stdout: stdoutOf(ended), exit: exitOf(ended, plan.graceMs, interrupt), stderr: ended.stderr };
      // Interrupted while the probe's process was stopped: that process is the whole run.
      if (interrupt.signal !== null)
        return report(plan, run, startedAt, interrupt, { ...exchangeResult(exchange), server: noServer() }, ended, { ...decision, probe: null });
      const again = await startServer(plan, 'legacy', interrupt.first);
      if (!again.ok) return couldNotRun(plan, run, startedAt, again.error, probe);
      server = again.server;
      decision = { ...decision, how: `${decision.how}; initialize went to a new process, as the SDK v2 client does` };
      talk = await converse(plan, DEFAULT_PROTOCOL_VERSION, version, server.io);
    }
  }
  const ended = await server.stop(interrupt.second);
  return report(plan, run, startedAt, interrupt, talk, ended, {
    era: decision?.era ?? null,
    decidedBy: decision?.decidedBy ?? null,
    how: decision?.how ?? 'not known: interrupted',
    probe,
  });
}

function report(plan: CheckPlan, run: number, startedAt: number, interrupt: Interrupt, talk: ConversationResult, ended: Ended, era: EraReport): RunReport {
  const exit = exitOf(ended, plan.graceMs, interrupt);
  const behaviour = [...talk.findings, ...(exit.how === 'interrupted' ? [] : judgeExit(exit.how, ended.shutdown, ended.exit, plan.graceMs))];
  const stdout = stdoutOf(ended);
  const probeViolations = era.probe === null ? 0 : era.probe.stdout.findings.length + era.probe.stdout.omitted;
  const violations = stdout.findings.length + stdout.omitted + behaviour.length + probeViolations;
  return {
    run,
    status: interrupt.signal !== null ? 'interrupted' : violations > 0 ? 'violations' : 'clean',
    error: interrupt.signal !== null ? `interrupted by ${interrupt.signal}` : null,
    durationMs: Date.now() - startedAt,
    era,
    stdout,
    steps: talk.steps,
    server: talk.server,
    behaviour,
    exit,
    stderr: ended.stderr,
  };
}

function stdoutOf(ended: Ended): StdoutReport {
  const t = ended.transcript;
  return {
    bytes: t.bytes,
    lines: t.lines,
    messages: t.messages,
    notifications: t.notifications,
    serverRequests: t.serverRequests,
    findings: t.findings,
    omitted: t.omittedFindings,
  };
}

function exitOf(ended: Ended, graceMs: number, interrupt: Interrupt): ExitReport {
  const { exit, shutdown, afterClose } = ended;
  const how = interrupt.cut ? 'interrupted' : exitHow(shutdown, exit, afterClose, graceMs);
  return { code: exit.code, signal: exit.signal, how, msAfterStdinClosed: afterClose, signalsSent: shutdown.signals, survivors: shutdown.survivors };
}

function exchangeResult(exchange: Exchange): Omit<ConversationResult, 'server'> {
  return { steps: exchange.steps, findings: exchange.findings };
}

function noServer(): ServerInfo {
  return { protocolVersion: null, name: null, version: null, tools: null };
}

function exitHow(shutdown: ShutdownReport, exit: { signal: NodeJS.Signals | null }, afterClose: number | null, graceMs: number): ExitHow {
  if (afterClose === null) return 'before_stdin_closed';
  if (shutdown.unkillable) return 'unkillable';
  // Signals sent after the leader's own timely exit went to processes it left behind.
  if (shutdown.signals.length === 0 || afterClose < graceMs) return 'after_stdin_closed';
  return exit.signal === 'SIGKILL' && shutdown.forced ? 'after_sigkill' : 'after_sigterm';
}

function judgeExit(how: ExitHow, shutdown: ShutdownReport, exit: { code: number | null; signal: NodeJS.Signals | null }, graceMs: number): BehaviourFinding[] {
  const found: BehaviourFinding[] = [];
  const status = exit.signal !== null ? `signal ${exit.signal}` : `exit status ${exit.code}`;
  if (how === 'before_stdin_closed') found.push({ kind: 'exited_early', message: `shutdown: the server exited before stdin was closed (${status})` });
  else if (how === 'after_stdin_closed' && (exit.code !== 0 || exit.signal !== null)) {
    found.push({ kind: 'exit_status', message: `shutdown: the server ended with ${status} after stdin closed` });
  } else if (how === 'after_sigterm') {
    found.push({ kind: 'no_exit_on_eof', message: `shutdown: the server was still running --grace ${graceMs} ms after stdin closed; stopped with SIGTERM` });
  } else if (how === 'after_sigkill') {
    found.push({
      kind: 'no_exit_on_eof',
      message: `shutdown: the server was still running --grace ${graceMs} ms after stdin closed and ${graceMs} ms after SIGTERM; killed with SIGKILL`,
    });
  } else if (how === 'unkillable') {
    found.push({ kind: 'unkillable', message: 'shutdown: the server did not exit even after SIGKILL' });
  }
  if ((how === 'before_stdin_closed' || how === 'after_stdin_closed') && shutdown.signals.length > 0) {
    found.push({
      kind: 'left_processes',
      message: `shutdown: processes the server started were still running after it exited; sent them ${shutdown.signals.join(', ')}`,
    });
  }
  if (shutdown.survivors.length > 0) {
    found.push({ kind: 'survivors', message: `shutdown: still running after SIGKILL: ${shutdown.survivors.map((p) => `${p.pid} (${p.comm})`).join(', ')}` });
  }
  return found;
}

function couldNotRun(plan: CheckPlan, run: number, startedAt: number, error: unknown, probe: EraReport['probe'] = null): RunReport {
  const { why } = explainSpawnFailure(plan.command, error, { cwd: plan.cwd, env: plan.env });
  return {
    run,
    status: 'could_not_run',
    error: `cannot start ${JSON.stringify(plan.command)}: ${why}`,
    durationMs: Date.now() - startedAt,
    era: { era: null, decidedBy: null, how: 'not known: the server could not start', probe },
    stdout: { bytes: 0, lines: 0, messages: 0, notifications: 0, serverRequests: [], findings: [], omitted: 0 },
    steps: [],
    server: null,
    behaviour: [],
    exit: null,
    stderr: { bytes: 0, masked: 0, ring: new ByteRing(0).snapshot() },
  };
}
