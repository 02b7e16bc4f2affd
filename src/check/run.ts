/**
 * One run of the check. It owns the server process from spawn to reaping:
 * both stream readers, the stderr ring, the timers, the watchdog, and the one
 * shutdown sequence of the relay (close stdin → grace → SIGTERM the group →
 * grace → SIGKILL). It ends with a report of what was observed, never with an
 * exception for something the server did.
 */
import { spawnInGroup } from '../child.js';
import { markedEnv, markedProcesses } from '../marker.js';
import { Masker } from '../mask.js';
import { DescendantTracker } from '../proctree.js';
import { newSessionId } from '../records/session-id.js';
import { shutdownTree, type ShutdownReport } from '../shutdown.js';
import { explainSpawnFailure } from '../spawn-failure.js';
import { Redactor } from '../stderr/redact.js';
import { ByteRing, type RingSnapshot } from '../stderr/ring.js';
import { armWatchdog } from '../watchdog.js';
import type { Readable } from 'node:stream';
import type { Request } from '../jsonrpc.js';
import { converse, type BehaviourFinding, type ServerInfo, type Step } from './conversation.js';
import type { CheckPlan } from './options.js';
import { Transcript, type StdoutFinding } from './transcript.js';

/** Bytes of stderr kept per run (first half and last half); the rest is counted. */
export const STDERR_KEEP_BYTES = 64 * 1024;
/** After the exit, how long the pipes may stay open (a grandchild holding them) before they are cut. */
const DRAIN_MS = 1000;

export type ExitHow = 'before_stdin_closed' | 'after_stdin_closed' | 'after_sigterm' | 'after_sigkill' | 'unkillable' | 'interrupted';

export interface RunReport {
  run: number;
  status: 'clean' | 'violations' | 'could_not_run' | 'interrupted';
  /** Why it could not run (command not found, …). */
  error: string | null;
  durationMs: number;
  stdout: { bytes: number; lines: number; messages: number; notifications: number; serverRequests: string[]; findings: StdoutFinding[]; omitted: number };
  steps: Step[];
  server: ServerInfo | null;
  behaviour: BehaviourFinding[];
  exit: {
    code: number | null;
    signal: NodeJS.Signals | null;
    how: ExitHow;
    /** From closing stdin to the exit, ms; null if it exited before. */
    msAfterStdinClosed: number | null;
    signalsSent: string[];
    survivors: Array<{ pid: number; comm: string }>;
  } | null;
  stderr: { bytes: number; masked: number; ring: RingSnapshot };
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
  // Marked like a relay session, so that a daemon the server double-forks is found and stopped too.
  const marker = newSessionId();
  let child: ReturnType<typeof spawnInGroup>;
  try {
    child = spawnInGroup(plan.command, plan.args, { cwd: plan.cwd, env: markedEnv(plan.env, marker) });
  } catch (error) {
    // Node throws for some failures (an empty command, ENOTDIR) and emits 'error' for others.
    return couldNotRun(plan, run, startedAt, error);
  }
  // If `error` is emitted instead of `spawn`, `exit` will never be emitted.
  const spawnError = await new Promise<Error | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', (error) => resolve(error));
  });
  if (spawnError !== null || child.pid === undefined) return couldNotRun(plan, run, startedAt, spawnError);
  const pid = child.pid;
  const watchdog = armWatchdog(pid, plan.graceMs, marker);
  const tracker = process.platform === 'linux' ? new DescendantTracker(pid, () => markedProcesses(marker)) : null;
  const sampler = tracker === null ? null : setInterval(() => tracker.snapshot(), 1000);
  sampler?.unref();

  type Exit = { code: number | null; signal: NodeJS.Signals | null; at: number };
  let exitInfo: Exit | null = null;
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve((exitInfo = { code, signal, at: Date.now() }))));

  child.stdin.on('error', () => {}); // EPIPE: the server closed its stdin or exited; the exit is reported
  const write = (frame: string) => {
    if (exitInfo === null && child.stdin.writable) child.stdin.write(frame);
  };
  // Reports end up in public CI logs: what is shown of the server's bytes is masked like stderr.
  const masker = new Masker(plan.env);
  const show = (bytes: Buffer, max?: number) => masker.quote(bytes, max);

  const transcript = new Transcript({
    maxFrameBytes: plan.maxFrameBytes,
    allowBatch: plan.protocolVersion === '2025-03-26',
    show,
    onServerRequest: (request) => write(answerFor(request)),
  });
  const stdoutEnded = streamEnded(child.stdout);
  child.stdout.on('data', (chunk: Buffer) => transcript.push(chunk));
  void stdoutEnded.then(() => transcript.end());

  // stderr: always drained, masked, and only its first and last bytes kept.
  const redactor = new Redactor({ env: plan.env });
  const ring = new ByteRing(STDERR_KEEP_BYTES, 'head+tail');
  const stderrEnded = streamEnded(child.stderr);
  child.stderr.on('data', (chunk: Buffer) => ring.push(redactor.push(chunk)));

  // Wait on `exit`, then give the pipes a bounded time to reach EOF: a process
  // the server left behind may hold them open forever.
  const drained = exited.then((exit) => {
    const ms = Math.max(0, exit.at + DRAIN_MS - Date.now());
    return Promise.all([cutAfter(stdoutEnded, ms, () => child.stdout.destroy()), cutAfter(stderrEnded, ms, () => child.stderr.destroy())]);
  });

  const talk = await converse(plan, version, { transcript, write, show, gone: drained.then(() => {}), stopped: interrupt.first });

  let closedAt = 0;
  let before = false;
  const shutdown = await shutdownTree(
    {
      pgid: pid,
      closeStdin: () => {
        closedAt = Date.now();
        before = exitInfo !== null;
        child.stdin.end();
      },
      exited,
      tracker,
    },
    plan.graceMs,
    interrupt.second,
  );
  if (sampler !== null) clearInterval(sampler);
  watchdog.disarm();
  const exit = await exited;
  await drained;
  transcript.end();
  ring.push(redactor.flush());

  const how = interrupt.cut ? 'interrupted' : exitHow(shutdown, exit, before ? null : exit.at - closedAt, plan.graceMs);
  const behaviour = [...talk.findings, ...(how === 'interrupted' ? [] : judgeExit(how, shutdown, exit, plan.graceMs))];
  const violations = transcript.findings.length + transcript.omittedFindings + behaviour.length;
  return {
    run,
    status: interrupt.signal !== null ? 'interrupted' : violations > 0 ? 'violations' : 'clean',
    error: interrupt.signal !== null ? `interrupted by ${interrupt.signal}` : null,
    durationMs: Date.now() - startedAt,
    stdout: {
      bytes: transcript.bytes, lines: transcript.lines, messages: transcript.messages, notifications: transcript.notifications,
      serverRequests: transcript.serverRequests, findings: transcript.findings, omitted: transcript.omittedFindings,
    },
    steps: talk.steps,
    server: talk.server,
    behaviour,
    exit: {
      code: exit.code, signal: exit.signal, how, msAfterStdinClosed: before ? null : exit.at - closedAt,
      signalsSent: shutdown.signals, survivors: shutdown.survivors,
    },
    stderr: { bytes: redactor.bytesIn, masked: redactor.count, ring: ring.snapshot() },
  };
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
    found.push({ kind: 'no_exit_on_eof', message: `shutdown: the server was still running --grace ${graceMs} ms after stdin closed and ${graceMs} ms after SIGTERM; killed with SIGKILL` });
  } else if (how === 'unkillable') {
    found.push({ kind: 'unkillable', message: 'shutdown: the server did not exit even after SIGKILL' });
  }
  if ((how === 'before_stdin_closed' || how === 'after_stdin_closed') && shutdown.signals.length > 0) {
    found.push({ kind: 'left_processes', message: `shutdown: processes the server started were still running after it exited; sent them ${shutdown.signals.join(', ')}` });
  }
  if (shutdown.survivors.length > 0) {
    found.push({ kind: 'survivors', message: `shutdown: still running after SIGKILL: ${shutdown.survivors.map((p) => `${p.pid} (${p.comm})`).join(', ')}` });
  }
  return found;
}

/**
 * The check declares no client capabilities, so a server request gets "method
 * not found", except ping, which every party must answer.
 */
function answerFor(request: Request): string {
  if (request.method === 'ping') return `${JSON.stringify({ jsonrpc: '2.0', id: request.id, result: {} })}\n`;
  return `${JSON.stringify({ jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `mcpguard check offers no ${request.method}` } })}\n`;
}

function couldNotRun(plan: CheckPlan, run: number, startedAt: number, error: unknown): RunReport {
  const { why } = explainSpawnFailure(plan.command, error, { cwd: plan.cwd, env: plan.env });
  return {
    run, status: 'could_not_run', error: `cannot start ${JSON.stringify(plan.command)}: ${why}`, durationMs: Date.now() - startedAt,
    stdout: { bytes: 0, lines: 0, messages: 0, notifications: 0, serverRequests: [], findings: [], omitted: 0 },
    steps: [], server: null, behaviour: [], exit: null,
    stderr: { bytes: 0, masked: 0, ring: new ByteRing(0).snapshot() },
  };
}

function streamEnded(stream: Readable): Promise<void> {
  return new Promise((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
}

async function cutAfter(ended: Promise<void>, ms: number, cut: () => void): Promise<'eof' | 'cut'> {
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([ended.then(() => 'eof' as const), new Promise<'cut'>((resolve) => (timer = setTimeout(() => resolve('cut'), ms)))]);
  clearTimeout(timer);
  if (result === 'cut') cut();
  return result;
}
