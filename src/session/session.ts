/**
 * A session owns the child: the process, both stream readers, the relay, the
 * timers and the shutdown. It is started once and resolves once, with a
 * summary of what was observed. Every ending goes through `end(reason)`, where
 * the first reason wins, and then through the one shutdown sequence. `run`
 * reads as its four steps: wire up, supervise the generations (a Supervisor,
 * supervisor.ts, which also restarts a crashed server), shut down, summarize.
 */
import type { ExitInfo, StartedChild } from '../process/child.js';
import type { Call } from '../mcp/call.js';
import { JoinPool } from '../wire/framing.js';
import { ReadBufferReclaimer } from '../process/reclaim.js';
import { Relay } from '../relay/relay.js';
import type { ShutdownReport } from '../process/shutdown.js';
import type { StreamEnd } from './generation.js';
import { HandshakeWatch, ReplayTap } from './handshake.js';
import { ChildLink } from '../relay/link.js';
import { RestartPolicy } from './restart-policy.js';
import { generationTagger } from './tag.js';
import { FrameWriter } from '../wire/writer.js';
import type { SessionIO, SessionOptions, SessionSummary } from './session-types.js';
import { describeExit, sessionStatus, spawnFailedSummary } from './exit-status.js';
import { Supervisor, type Restarted } from './supervisor.js';
import { ClientInput } from './client-input.js';

export { EXIT_RACE_MS, type StreamEnd } from './generation.js';
export { HANDSHAKE_MIN_MS } from './supervisor.js';

export type { GenerationEnd, GenerationStart, RestartNotice, SessionEnding, SessionIO, SessionOptions, SessionSummary, StderrSink } from './session-types.js';

export class Session {
  private readonly toClient: FrameWriter;
  private reason: string | null = null;
  private triggeredAt = 0;
  private escalations: Array<() => void> = [];
  private ended!: () => void;
  private readonly endRequested = new Promise<void>((resolve) => (this.ended = resolve));
  /** mcpguard's stdin, in lines for the relay; paused while a side is full (client-input.ts). */
  private readonly input: ClientInput;
  /** Buffers of large joined frames, both directions: the writers give them back after the write. */
  private readonly joins = new JoinPool();
  /** The generations of the server (supervisor.ts), from wireUp on. */
  private supervisor: Supervisor | null = null;

  constructor(
    private readonly options: SessionOptions,
    private readonly io: SessionIO,
  ) {
    this.input = new ClientInput(io.input);
    // Created before the child so a client that is already gone is noticed; the
    // pressure callback is bound to the child's stdout once it exists. A client
    // that stops reading is also not read from: the answers mcpguard writes on
    // its own (rejections, refusals) would otherwise pile up without bound.
    this.toClient = new FrameWriter(io.output, {
      queueLimit: options.maxFrameBytes,
      onPressure: (full) => {
        this.supervisor?.pauseChildStdout(full);
        this.input.hold('byClient', full);
      },
      onClosed: () => this.end('client_gone'),
      joins: this.joins,
    });
  }

  /**
   * The client's EOF means "no more requests", not "drop the ones I sent":
   * every request read before it is decided and, if allowed, dispatched and
   * answered before the server's stdin is closed. The wait is bounded by
   * --grace (a call that hangs must not hold the session for ever), and any
   * other cause of ending (a signal, the server's exit) cuts it short.
   */
  private async clientEof(relay: Relay): Promise<void> {
    relay.clientEnded();
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.options.graceMs)));
    await Promise.race([relay.whenAnswered(), graceOver, this.endRequested]);
    clearTimeout(timer);
    this.end('client_eof');
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

  /** Resolves at the next escalation: what a shutdown step waits on besides its grace. */
  private escalation(): Promise<void> {
    return new Promise<void>((resolve) => this.escalations.push(resolve));
  }

  /** Run the session over a child started with `startChild` (so its start can overlap mcpguard's own). */
  async run(started: StartedChild, startedAt = Date.now()): Promise<SessionSummary> {
    const spawned = await started.spawned;
    if (spawned !== null || started.child === null || started.child.pid === undefined) return this.spawnFailed(spawned, startedAt);
    const restart = this.options.restart === null ? null : new RestartPolicy(this.options.restart);
    const wired = this.wireUp(started, restart !== null);
    const restarted = await wired.supervisor.supervise(restart);
    const ended = await this.shutDown(wired);
    return this.summary(wired, ended, restarted, restart !== null, startedAt);
  }

  /** The first generation, the relay and the client's input, wired together. */
  private wireUp(started: StartedChild, restarting: boolean): Wired {
    const { options, io } = this;
    const reclaimer = new ReadBufferReclaimer();
    const link = new ChildLink({
      waitMs: options.restart?.waitMs ?? 0,
      queueLimit: options.maxFrameBytes,
      expired: (call) => relay.restartWaitExpired(call as Call, options.restart!.waitMs),
      onPressure: (full) => this.input.hold('byChild', full),
    });
    const handshake = restarting ? { watch: new HandshakeWatch(), tap: new ReplayTap() } : null;
    const supervisor = new Supervisor(
      options,
      io,
      {
        reason: () => this.reason,
        endRequested: this.endRequested,
        end: (reason) => this.end(reason),
        holdInput: (full) => this.input.hold('byChild', full),
        escalation: () => this.escalation(),
      },
      { relay: () => relay, link, reclaimer, toClient: this.toClient, joins: this.joins, handshake },
    );
    this.supervisor = supervisor;
    supervisor.gen = supervisor.start(1, started, io.watchdog);
    const { gen } = supervisor;
    const tagger = generationTagger(() => supervisor.gen.number);
    const observers = handshake === null ? [tagger, ...io.observers] : [tagger, handshake.watch, ...io.observers];
    // With --restart the relay shows each raw line to the replay (which takes its own answers) and then the watch.
    const taps = handshake === null ? [] : [handshake.tap, handshake.watch];
    const relay = new Relay(options, this.toClient, link, io.diag, observers, (reason) => this.end(reason), io.decorate ?? null, io.gate ?? null, taps);
    io.onSpawn?.(gen.pid);
    io.onGeneration?.({ generation: 1, pid: gen.pid, startedAt: gen.startedAt });
    link.goUp(gen.toChild);

    // Client stdin → relay.
    this.input.read(
      options.maxFrameBytes,
      this.joins,
      (event) => relay.fromClient(event),
      () => void this.clientEof(relay),
      () => this.end('client_eof'),
    );
    return { relay, link, supervisor };
  }

  /** The one shutdown of the last generation: requests the child never answered get their one answer now. */
  private async shutDown({ relay, link, supervisor }: Wired): Promise<Ended> {
    const { io } = this;
    const { gen } = supervisor;
    relay.closeInput();
    const exitSoFar = gen.exit;
    io.onEnding?.({
      reason: this.reason ?? 'child_exit',
      pid: gen.pid,
      counters: relay.counters,
      stderrBytes: supervisor.stderrBytes,
      protocol: relay.protocol(),
    });
    const shutdown: ShutdownReport = await gen.shutdown(() => this.escalation());
    const exit = await gen.exited;
    const streamEnd = await gen.drain();

    const ownExit = this.reason === 'child_exit' || this.reason === 'restart_limit' || (this.reason === 'restart_failed' && exitSoFar !== null);
    relay.answerPending(
      ownExit ? 'unknown_after_dispatch' : 'cancelled_after_dispatch',
      ownExit
        ? `the server exited (${describeExit(exit.code, exit.signal)}) before answering`
        : `the session ended (${this.reason}) before the server answered`,
      { exitStatus: { code: exit.code, signal: exit.signal }, streamEnd },
    );
    link.close(new Error('the session ended while the server was being restarted'));
    if (!gen.recorded) supervisor.recordEnd(gen, exit, streamEnd, shutdown, 'session_end', null);
    io.stderr.end();
    this.input.stop();
    return { shutdown, exit, streamEnd };
  }

  /** What the session observed, from its last generation's end. */
  private summary(
    { relay, supervisor }: Wired,
    { shutdown, exit, streamEnd }: Ended,
    { restarts, crashed, stoppedBy }: Restarted,
    restarting: boolean,
    startedAt: number,
  ): SessionSummary {
    const { gen } = supervisor;
    return {
      endReason: this.reason ?? 'child_exit',
      pid: gen.pid,
      exitCode: exit.code,
      signal: exit.signal,
      status: sessionStatus(this.reason, exit, crashed),
      spawnError: null,
      forcedKill: shutdown.forced,
      unkillable: shutdown.unkillable,
      signalsSent: shutdown.signals,
      survivors: shutdown.survivors,
      foundByMarker: shutdown.foundByMarker,
      triggerToExitMs: Math.max(0, exit.at - this.triggeredAt),
      streamEnd,
      stderrBytes: supervisor.stderrBytes,
      counters: relay.counters,
      protocol: relay.protocol(),
      outputDropped: this.toClient.dropped,
      outputUnflushedBytes: 0,
      startedAt,
      endedAt: Date.now(),
      restarts: restarting ? { count: restarts, generations: gen.number, stoppedBy } : null,
    };
  }

  /** The server never started: said once on stderr, and the summary of a session without a child. */
  private spawnFailed(error: Error | null, startedAt: number): SessionSummary {
    const summary = spawnFailedSummary(this.options.command, error, startedAt);
    this.io.diag.line(`cannot start ${JSON.stringify(this.options.command)}: ${summary.spawnError}`);
    this.reason = 'spawn_failed';
    return summary;
  }
}

/** What wireUp made that the later steps of a run use. */
interface Wired {
  relay: Relay;
  link: ChildLink;
  supervisor: Supervisor;
}

/** How the last generation ended. */
interface Ended {
  shutdown: ShutdownReport;
  exit: ExitInfo;
  streamEnd: { stdout: StreamEnd; stderr: StreamEnd };
}
