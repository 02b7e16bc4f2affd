/**
 * A session owns the child: the process, both stream readers, the relay, the
 * timers and the shutdown. It is started once and resolves once, with a
 * summary of what was observed. Every ending goes through `end(reason)`, where
 * the first reason wins, and then through the one shutdown sequence.
 */
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { exitCodeOf, type StartedChild } from './child.js';
import type { Call } from './calls.js';
import type { Diagnostics } from './diagnostics.js';
import type { Response } from './jsonrpc.js';
import type { Gate, GateIO } from './gate/gate.js';
import { JoinPool, LineSplitter } from './framing.js';
import type { SessionObserver } from './observer.js';
import { markedProcesses } from './marker.js';
import { DescendantTracker } from './proctree.js';
import { ReadBufferReclaimer } from './reclaim.js';
import { Relay, type RelayCounters, type RelayOptions } from './relay.js';
import { shutdownTree, type ShutdownReport } from './shutdown.js';
import { explainSpawnFailure } from './spawn-failure.js';
import { armWatchdog, type Watchdog } from './watchdog.js';
import { FrameWriter } from './writer.js';

export interface SessionOptions extends RelayOptions {
  command: string;
  args: readonly string[];
  /** Grace period of each shutdown step, ms. */
  graceMs: number;
  /** How long to wait for the child's pipes to reach EOF after it exited, ms. */
  drainMs: number;
  /** The session id the child's environment carries as MCPGUARD_SESSION_ID (null: not marked). */
  marker: string | null;
}

/** Where the child's stderr goes: every chunk, as it arrives, never paused. */
export interface StderrSink {
  write(chunk: Buffer, inFlight: readonly string[]): void;
  end(): void;
}

export interface SessionIO {
  input: Readable;
  output: Writable;
  diag: Diagnostics;
  observers: SessionObserver[];
  stderr: StderrSink;
  /** A watchdog armed when the child was started; else the session arms one. */
  watchdog?: Watchdog;
  /** Called once the child is running, before any frame reaches it. */
  onSpawn?: (pid: number) => void;
  /** Decorates a tools/call answer before it is written (the stderr excerpt). */
  decorate?: (call: Call, response: Response) => Buffer | null;
  /** Builds the gate that reviews each tools/call (null: no gate). */
  gate?: ((io: GateIO) => Gate) | null;
  /**
   * Called once the session's end is decided and the client's input closed,
   * before the child is shut down: what must not wait for the child (a probe
   * session's record, see probe.ts) is written here.
   */
  onEnding?: (ending: SessionEnding) => void;
}

/** What is known when the session's end is decided, before the child's shutdown. */
export interface SessionEnding {
  reason: string;
  pid: number;
  counters: RelayCounters;
  stderrBytes: number;
  protocol: SessionSummary['protocol'];
}

export type StreamEnd = 'eof' | 'cut_after_drain_timeout' | 'not_started';

export interface SessionSummary {
  endReason: string;
  pid: number | null;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** What mcpguard exits with: the child's code, or 128 + signal number. */
  status: number;
  spawnError: string | null;
  forcedKill: boolean;
  unkillable: boolean;
  signalsSent: string[];
  survivors: Array<{ pid: number; comm: string }>;
  /** Processes only the marker sweep found (a double-forked daemon); null if no sweep could run. */
  foundByMarker: Array<{ pid: number; comm: string }> | null;
  /** From the ending's trigger to the child's exit, ms (null if it never started). */
  triggerToExitMs: number | null;
  streamEnd: { stdout: StreamEnd; stderr: StreamEnd };
  stderrBytes: number;
  counters: RelayCounters;
  /** The protocol era and version the session spoke, as far as mcpguard could tell. */
  protocol: { era: string; version: string | null; decidedBy: string | null };
  outputDropped: number;
  /** Bytes the client never took before mcpguard gave up waiting at exit. */
  outputUnflushedBytes: number;
  startedAt: number;
  endedAt: number;
}

/** How long a closed child pipe waits for the child's exit before it counts as a pipe closed by a live server. */
export const EXIT_RACE_MS = 500;

export class Session {
  private readonly toClient: FrameWriter;
  private reason: string | null = null;
  private triggeredAt = 0;
  private escalations: Array<() => void> = [];
  private ended!: () => void;
  private readonly endRequested = new Promise<void>((resolve) => (this.ended = resolve));
  private stderrBytes = 0;
  /** Why the client's input is paused: its frames wait for the child, or mcpguard's answers wait for the client. */
  private readonly inputHeld = { byChild: false, byClient: false, done: false };
  /** Read by the client's line splitter after every line: while held, the rest of a read waits. */
  private readonly inputGate = { held: false };
  private resumeLines: () => boolean = () => true;
  /** Buffers of large joined frames, both directions: the writers give them back after the write. */
  private readonly joins = new JoinPool();

  constructor(private readonly options: SessionOptions, private readonly io: SessionIO) {
    // Created before the child so a client that is already gone is noticed; the
    // pressure callback is bound to the child's stdout once it exists. A client
    // that stops reading is also not read from: the answers mcpguard writes on
    // its own (rejections, refusals) would otherwise pile up without bound.
    this.toClient = new FrameWriter(io.output, {
      queueLimit: options.maxFrameBytes,
      onPressure: (full) => {
        this.pauseChildStdout(full);
        this.holdInput('byClient', full);
      },
      onClosed: () => this.end('client_gone'),
      joins: this.joins,
    });
  }

  private pauseChildStdout: (full: boolean) => void = () => {};

  private holdInput(why: 'byChild' | 'byClient', held: boolean): void {
    const h = this.inputHeld;
    h[why] = held;
    this.inputGate.held = h.byChild || h.byClient || h.done;
    if (this.inputGate.held) return void this.io.input.pause();
    // Lines of an earlier read come before any new read; splitting them may close the gate again.
    if (this.resumeLines() && !this.inputGate.held) this.io.input.resume();
  }

  /** First cause wins; later calls only escalate a shutdown already under way. */
  end(reason: string): void {
    if (this.reason !== null) return;
    this.reason = reason;
    this.triggeredAt = Date.now();
    this.ended();
  }

  /** Wait for the client to take what was written to it (see FrameWriter.drained); bytes left behind. */
  flushOutput(stallMs: number): Promise<number> {
    return this.toClient.drained(stallMs);
  }

  /** A further signal while shutting down: cut the current wait short. */
  escalate(): void {
    const waiting = this.escalations;
    this.escalations = [];
    for (const resolve of waiting) resolve();
  }

  /** Run the session over a child started with `startChild` (so its start can overlap mcpguard's own). */
  async run(started: StartedChild, startedAt = Date.now()): Promise<SessionSummary> {
    const { options, io } = this;
    const { child, exited } = started;
    const spawned = await started.spawned;
    if (spawned !== null || child === null || child.pid === undefined) return this.spawnFailed(spawned, startedAt);
    const pid = child.pid;
    io.onSpawn?.(pid);
    const watchdog = io.watchdog ?? armWatchdog(pid, options.graceMs, options.marker);
    const marker = options.marker;
    const tracker = process.platform === 'linux' ? new DescendantTracker(pid, marker === null ? null : () => markedProcesses(marker)) : null;

    void exited.then(() => this.end('child_exit'));

    const toChild = new FrameWriter(child.stdin, {
      queueLimit: options.maxFrameBytes,
      onPressure: (full) => this.holdInput('byChild', full),
      // Requests that could not get in are answered by the relay (Delivery); the session ends unless the child is exiting anyway.
      onClosed: (error, expected) => {
        if (!expected) this.childStreamLost(exited, `the server closed its stdin (${(error as NodeJS.ErrnoException).code ?? error.message})`, 'child_stdin_closed');
      },
      joins: this.joins,
    });
    const reclaimer = new ReadBufferReclaimer();
    const relay = new Relay(options, this.toClient, toChild, io.diag, io.observers, (reason) => this.end(reason), io.decorate ?? null, io.gate ?? null);
    this.pauseChildStdout = (full) => (full ? child.stdout.pause() : child.stdout.resume());

    // Child stdout → relay.
    const childLines = new LineSplitter(options.maxFrameBytes, (event) => relay.fromChild(event), null, this.joins);
    const stdoutEnded = streamEnded(child.stdout);
    child.stdout.on('data', (chunk: Buffer) => {
      reclaimer.account(chunk.length, 'stdout');
      childLines.push(chunk);
    });
    void stdoutEnded.then(() => {
      childLines.end();
      this.childStreamLost(exited, 'the server closed its stdout', 'child_stdout_closed');
    });

    // Child stderr: always drained, never paused.
    const stderrEnded = streamEnded(child.stderr);
    child.stderr.on('data', (chunk: Buffer) => {
      reclaimer.account(chunk.length);
      this.stderrBytes += chunk.length;
      io.stderr.write(chunk, relay.calls.inFlightCallIds());
    });
    void stderrEnded.then(() => io.stderr.end());

    started.release();

    // Client stdin → relay.
    const clientLines = new LineSplitter(options.maxFrameBytes, (event) => relay.fromClient(event), this.inputGate, this.joins);
    this.resumeLines = () => clientLines.resume();
    const onInput = (chunk: Buffer) => clientLines.push(chunk);
    io.input.on('data', onInput);
    io.input.once('end', () => {
      clientLines.end();
      this.end('client_eof');
    });
    io.input.once('error', () => this.end('client_eof'));

    // Periodic snapshots find descendants before an exit re-parents them.
    const sampler = tracker === null ? null : setInterval(() => tracker.snapshot(), 1000);
    sampler?.unref();

    await this.endRequested;
    relay.inputClosed = true;
    io.onEnding?.({ reason: this.reason ?? 'child_exit', pid, counters: relay.counters, stderrBytes: this.stderrBytes, protocol: { era: relay.eras.tracker.era, version: relay.eras.tracker.version, decidedBy: relay.eras.tracker.decidedBy } });
    const shutdown: ShutdownReport = await shutdownTree(
      {
        pgid: pid,
        closeStdin: () => toChild.end(),
        exited,
        tracker,
      },
      options.graceMs,
      () => new Promise<void>((resolve) => this.escalations.push(resolve)),
    );
    if (sampler !== null) clearInterval(sampler);
    watchdog.disarm();
    const exit = await exited;

    // Wait for the pipes to reach EOF, but not forever: a stray process may hold them.
    // Answers the child wrote just before exiting are still in the pipe: relay them first.
    const drainDeadline = Math.max(0, exit.at + options.drainMs - Date.now());
    const [outEnd, errEnd] = await Promise.all([
      cutAfter(stdoutEnded, drainDeadline, () => child.stdout.destroy()),
      cutAfter(stderrEnded, drainDeadline, () => child.stderr.destroy()),
    ]);
    if (outEnd !== 'eof') childLines.end();

    // Requests the child never answered get their one answer now.
    const ownExit = this.reason === 'child_exit';
    relay.answerPending(
      ownExit ? 'unknown_after_dispatch' : 'cancelled_after_dispatch',
      ownExit ? `the server exited (${describeExit(exit.code, exit.signal)}) before answering` : `the session ended (${this.reason}) before the server answered`,
      { exitStatus: { code: exit.code, signal: exit.signal }, streamEnd: { stdout: outEnd, stderr: errEnd } },
    );
    io.input.off('data', onInput);
    this.holdInput('byClient', true);
    this.inputHeld.done = true;

    return {
      endReason: this.reason ?? 'child_exit',
      pid,
      exitCode: exit.code,
      signal: exit.signal,
      status: exitCodeOf(exit.code, exit.signal, constants.signals as unknown as Record<string, number>),
      spawnError: null,
      forcedKill: shutdown.forced,
      unkillable: shutdown.unkillable,
      signalsSent: shutdown.signals,
      survivors: shutdown.survivors,
      foundByMarker: shutdown.foundByMarker,
      triggerToExitMs: Math.max(0, exit.at - this.triggeredAt),
      streamEnd: { stdout: outEnd, stderr: errEnd },
      stderrBytes: this.stderrBytes,
      counters: relay.counters,
      protocol: { era: relay.eras.tracker.era, version: relay.eras.tracker.version, decidedBy: relay.eras.tracker.decidedBy },
      outputDropped: this.toClient.dropped,
      outputUnflushedBytes: 0,
      startedAt,
      endedAt: Date.now(),
    };
  }

  /**
   * One of the child's pipes closed while the session runs. A process that
   * exits closes them too, usually just before its exit is seen: wait a
   * moment for that, so a crash stays a crash. If it is still running, its
   * requests or answers can no longer pass: say so once and end the session.
   */
  private childStreamLost(exited: Promise<unknown>, what: string, reason: string): void {
    if (this.reason !== null) return;
    let timer: NodeJS.Timeout | undefined;
    const settle = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, EXIT_RACE_MS);
    });
    void Promise.race([exited, settle]).then(() => {
      clearTimeout(timer);
      if (this.reason !== null) return;
      this.io.diag.line(`${what} while still running; ending the session`);
      this.end(reason);
    });
  }

  private spawnFailed(error: Error | null, startedAt: number): SessionSummary {
    const { status, why: message } = explainSpawnFailure(this.options.command, error);
    this.io.diag.line(`cannot start ${JSON.stringify(this.options.command)}: ${message}`);
    this.reason = 'spawn_failed';
    return {
      endReason: 'spawn_failed', pid: null, exitCode: null, signal: null, status, spawnError: message,
      forcedKill: false, unkillable: false, signalsSent: [], survivors: [], foundByMarker: null, triggerToExitMs: null,
      streamEnd: { stdout: 'not_started', stderr: 'not_started' }, stderrBytes: 0,
      counters: { clientFrames: 0, childFrames: 0, rejectedClient: 0, noiseLines: 0, noiseBytes: 0, lateResponses: 0, ignoredClientBytes: 0, undelivered: 0, states: {}, shapeRejections: 0, eraViolations: {} },
      protocol: { era: 'unknown', version: null, decidedBy: null },
      outputDropped: 0, outputUnflushedBytes: 0, startedAt, endedAt: Date.now(),
    };
  }
}

function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  return signal !== null ? `killed by ${signal}` : `exit code ${code}`;
}

function streamEnded(stream: Readable): Promise<void> {
  // A child that exits at once may have ended its pipes before the session listens: 'end' is not emitted twice.
  if (stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
}

async function cutAfter(ended: Promise<void>, ms: number, cut: () => void): Promise<StreamEnd> {
  let timer: NodeJS.Timeout | undefined;
  const result = await Promise.race([
    ended.then(() => 'eof' as const),
    new Promise<'cut_after_drain_timeout'>((resolve) => {
      timer = setTimeout(() => resolve('cut_after_drain_timeout'), ms);
    }),
  ]);
  clearTimeout(timer);
  if (result !== 'eof') cut();
  return result;
}
