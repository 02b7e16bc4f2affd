/**
 * A session owns the child: the process, both stream readers, the relay, the
 * timers and the shutdown. It is started once and resolves once, with a
 * summary of what was observed. Every ending goes through `end(reason)`, where
 * the first reason wins, and then through the one shutdown sequence.
 */
import { constants } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { exitCodeOf, startChild, type ExitInfo, type StartedChild } from '../process/child.js';
import type { Call } from '../mcp/call.js';
import { JoinPool, LineSplitter } from '../wire/framing.js';
import { FramePrescan } from '../wire/json-prescan.js';
import { notification } from '../wire/jsonrpc.js';
import { markedEnv } from '../process/marker.js';
import { ReadBufferReclaimer } from '../process/reclaim.js';
import { Relay } from '../relay/relay.js';
import { emptyCounters } from '../relay/counters.js';
import type { ShutdownReport } from '../process/shutdown.js';
import { explainSpawnFailure } from '../process/spawn-failure.js';
import { Generation, STDIN_STALL_MS, type StreamEnd } from './generation.js';
import { HandshakeWatch, ReplayTap, replayHandshake, type ReplayOutcome } from './handshake.js';
import { ChildLink } from '../relay/link.js';
import { RestartPolicy } from './restart-policy.js';
import { generationTagger } from './tag.js';
import type { Watchdog } from '../process/watchdog.js';
import { FrameWriter } from '../wire/writer.js';
import type { SessionIO, SessionOptions, SessionSummary } from './session-types.js';
import { describeExit, sessionStatus } from './exit-status.js';

export { EXIT_RACE_MS, type StreamEnd } from './generation.js';

/** The least time a restarted server gets to answer the replayed initialize (and mcpguard's own tools/list). */
export const HANDSHAKE_MIN_MS = 10000;

export type { GenerationEnd, GenerationStart, RestartNotice, SessionEnding, SessionIO, SessionOptions, SessionSummary, StderrSink } from './session-types.js';

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

  constructor(
    private readonly options: SessionOptions,
    private readonly io: SessionIO,
  ) {
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

  /** Run the session over a child started with `startChild` (so its start can overlap mcpguard's own). */
  async run(started: StartedChild, startedAt = Date.now()): Promise<SessionSummary> {
    const spawned = await started.spawned;
    if (spawned !== null || started.child === null || started.child.pid === undefined) return this.spawnFailed(spawned, startedAt);
    const restart = this.options.restart === null ? null : new RestartPolicy(this.options.restart);
    const wired = this.wireUp(started, restart !== null);
    const restarted = await this.superviseGenerations(restart, wired);
    const ended = await this.shutDown(wired);
    return this.summary(ended, restarted, restart !== null, startedAt);
  }

  /** The first generation, the relay and the client's input, wired together. */
  private wireUp(started: StartedChild, restarting: boolean): Wired {
    const { options, io } = this;
    const reclaimer = new ReadBufferReclaimer();
    const link = new ChildLink({
      waitMs: options.restart?.waitMs ?? 0,
      queueLimit: options.maxFrameBytes,
      expired: (call) => relay.restartWaitExpired(call as Call, options.restart!.waitMs),
      onPressure: (full) => this.holdInput('byChild', full),
    });
    this.link = (call) => link.isWaiting(call);
    const watch = restarting ? new HandshakeWatch() : null;
    this.gen = this.startGeneration(1, started, reclaimer, io.watchdog, () => relay);
    const tagger = generationTagger(() => this.gen.number);
    const observers = watch === null ? [tagger, ...io.observers] : [tagger, watch, ...io.observers];
    // With --restart the relay shows each raw line to the replay (which takes its own answers) and then the watch.
    const taps = watch === null ? [] : [this.replayTap, watch];
    const relay = new Relay(options, this.toClient, link, io.diag, observers, (reason) => this.end(reason), io.decorate ?? null, io.gate ?? null, taps);
    this.relay = relay;
    this.watch = watch;
    io.onSpawn?.(this.gen.pid);
    io.onGeneration?.({ generation: 1, pid: this.gen.pid, startedAt: this.gen.startedAt });
    link.goUp(this.gen.toChild);

    // Client stdin → relay.
    const clientLines = new LineSplitter(options.maxFrameBytes, (event) => relay.fromClient(event), this.inputGate, this.joins, new FramePrescan());
    this.resumeLines = () => clientLines.resume();
    const onInput = (chunk: Buffer) => clientLines.push(chunk);
    io.input.on('data', onInput);
    io.input.once('end', () => {
      clientLines.end();
      void this.clientEof(relay);
    });
    io.input.once('error', () => this.end('client_eof'));
    return { relay, link, reclaimer, onInput };
  }

  /** Each generation runs until it exits or the session ends; a restart replaces it. */
  private async superviseGenerations(restart: RestartPolicy | null, { relay, link, reclaimer }: Wired): Promise<Restarted> {
    const { options, io } = this;
    let restarts = 0;
    /** The exit of the generation whose crash started the last restart: what a restart that fails leaves mcpguard with. */
    let crashed: ExitInfo | null = null;
    let stoppedBy: string | null = null;
    for (;;) {
      const gen = this.gen;
      const exitedFirst = await Promise.race([this.endRequested.then(() => false), gen.exited.then(() => true)]);
      if (!exitedFirst || this.reason !== null) break;
      // A generation stopped because it closed a pipe failed, whatever it exited with.
      const decision = restart === null ? null : restart.decide(gen.exit!, Date.now(), gen.lostStream !== null);
      if (decision === null || !decision.restart) {
        if (decision !== null && decision.why === 'limit')
          stoppedBy = `--max-restarts ${options.restart!.maxRestarts} within --restart-window ${options.restart!.windowMs} ms reached`;
        this.end(decision !== null && decision.why === 'limit' ? 'restart_limit' : 'child_exit');
        break;
      }
      crashed = gen.exit;
      // The server crashed with the client still connected: a new generation takes over, and
      // gets what this one never took (frames still in mcpguard's queue, not in its stdin).
      link.goDown();
      link.requeue(gen.toChild.takeQueued());
      this.holdInput('byChild', false);
      const how = gen.lostStream === null ? 'exited' : 'was stopped and exited';
      io.diag.line(
        `the server (generation ${gen.number}, pid ${gen.pid}) ${how} (${describeExit(gen.exit!.code, gen.exit!.signal)}) with the client connected; restarting it in ${decision.delayMs} ms (restart ${decision.attempt})`,
      );
      await this.closeGeneration(gen, `restart in ${decision.delayMs} ms`, decision.delayMs);
      relay.serverRestarted();
      const slept = await Promise.race([delay(decision.delayMs).then(() => true), this.endRequested.then(() => false)]);
      if (!slept || this.reason !== null) break;
      const nextGen = await this.spawnNext(gen.number + 1, reclaimer, () => relay);
      if (nextGen instanceof Error) {
        stoppedBy = `the server could not be started again: ${nextGen.message}`;
        io.diag.line(stoppedBy);
        this.end('restart_failed');
        break;
      }
      this.gen = nextGen;
      restarts++;
      io.onGeneration?.({ generation: nextGen.number, pid: nextGen.pid, startedAt: nextGen.startedAt });
      // A server may take a while to start: its handshake gets --restart-wait, and never less than HANDSHAKE_MIN_MS.
      const outcome = await this.replay(nextGen, Math.max(options.restart!.waitMs, HANDSHAKE_MIN_MS));
      if (this.reason !== null) break;
      if (!outcome.ok && outcome.kind === 'exited') {
        // It died before it could take over: a crash like any other, counted against --max-restarts.
        // What its stdin never took is mcpguard's own replay, nobody's to pass on.
        nextGen.toChild.takeQueued();
        continue;
      }
      if (!outcome.ok) {
        stoppedBy = outcome.reason;
        io.diag.line(`${outcome.reason}; ending the session`);
        this.end(outcome.kind === 'incompatible' ? 'restart_incompatible' : 'restart_failed');
        break;
      }
      link.goUp(nextGen.toChild);
      this.tellClient(nextGen.number, outcome);
    }
    return { restarts, crashed, stoppedBy };
  }

  /** The one shutdown of the last generation: requests the child never answered get their one answer now. */
  private async shutDown({ relay, link, onInput }: Wired): Promise<Ended> {
    const { io, gen } = this;
    relay.closeInput();
    const exitSoFar = gen.exit;
    io.onEnding?.({ reason: this.reason ?? 'child_exit', pid: gen.pid, counters: relay.counters, stderrBytes: this.stderrBytes, protocol: relay.protocol() });
    const shutdown: ShutdownReport = await gen.shutdown(() => new Promise<void>((resolve) => this.escalations.push(resolve)));
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
    if (!gen.recorded) this.recordGeneration(gen, exit, streamEnd, shutdown, 'session_end', null);
    io.stderr.end();
    io.input.off('data', onInput);
    this.holdInput('byClient', true);
    this.inputHeld.done = true;
    return { shutdown, exit, streamEnd };
  }

  /** What the session observed, from its last generation's end. */
  private summary({ shutdown, exit, streamEnd }: Ended, { restarts, crashed, stoppedBy }: Restarted, restarting: boolean, startedAt: number): SessionSummary {
    const { gen } = this;
    const relay = this.relay!;
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
      stderrBytes: this.stderrBytes,
      counters: relay.counters,
      protocol: relay.protocol(),
      outputDropped: this.toClient.dropped,
      outputUnflushedBytes: 0,
      startedAt,
      endedAt: Date.now(),
      restarts: restarting ? { count: restarts, generations: gen.number, stoppedBy } : null,
    };
  }

  /** The generation running now (a restart replaces it). */
  private gen!: Generation;
  private relay: Relay | null = null;
  private watch: HandshakeWatch | null = null;

  /** Wire one generation's pipes to the relay and the stderr sink. */
  private startGeneration(n: number, started: StartedChild, reclaimer: ReadBufferReclaimer, watchdog: Watchdog | undefined, relay: () => Relay): Generation {
    const gen: Generation = new Generation(
      n,
      started,
      this.options,
      {
        line: (event) => relay().fromChild(event),
        stderr: (chunk) => {
          this.stderrBytes += chunk.length;
          this.io.stderr.write(chunk, relay().inFlightCallIds());
        },
        pressure: (full) => this.holdInput('byChild', full),
        stdinStalled: () =>
          this.io.diag.line(
            `the server (pid ${gen.pid}) took nothing from its stdin for ${STDIN_STALL_MS} ms with mcpguard's queue to it full; reading the client again, and refusing the requests that do not fit until it reads`,
          ),
        joins: this.joins,
        streamLost: (what, reason) => {
          if (this.reason !== null || gen.lostStream !== null) return;
          if (this.options.restart !== null) {
            // A server that stopped talking but runs on is a failed server: stop it, and the restart loop takes over.
            gen.lostStream = what;
            this.io.diag.line(`${what} while still running (generation ${n}, pid ${gen.pid}); stopping it to start it again (--restart)`);
            void gen.shutdown(() => new Promise<void>((resolve) => this.escalations.push(resolve)));
            return;
          }
          this.io.diag.line(`${what} while still running; ending the session`);
          this.end(reason);
        },
      },
      reclaimer,
      watchdog,
    );
    this.pauseChildStdout = (full) => gen.pauseStdout(full);
    return gen;
  }

  /** The next generation, or the error that kept it from starting. */
  private async spawnNext(n: number, reclaimer: ReadBufferReclaimer, relay: () => Relay): Promise<Generation | Error> {
    const { command, args, marker } = this.options;
    const started = startChild(command, args, { env: marker === null ? process.env : markedEnv(process.env, marker) });
    const error = await started.spawned;
    if (error !== null || started.child === null || started.child.pid === undefined) return error ?? new Error('no process id');
    return this.startGeneration(n, started, reclaimer, undefined, relay);
  }

  /** The relay's tap through which mcpguard's own replay takes the lines of a new generation meant for it. */
  private readonly replayTap = new ReplayTap();

  private async replay(gen: Generation, waitMs: number): Promise<ReplayOutcome> {
    const relay = this.relay!;
    // A modern-era server has no handshake: every request carries what it needs.
    if (relay.modern() || this.watch === null) return { ok: true, replayed: false, toolsChanged: null, listChanged: false, logging: false };
    return await Promise.race([
      replayHandshake(this.watch, {
        send: (frame) => gen.toChild.write(frame),
        intercept: (take) => (this.replayTap.take = take),
        waitMs,
        generation: gen.number,
        taken: (key) => relay.idTaken(key),
        exited: gen.exited,
      }),
      this.endRequested.then((): ReplayOutcome => ({ ok: true, replayed: false, toolsChanged: null, listChanged: false, logging: false })),
    ]);
  }

  /** After a restart, what the client must hear: its tools changed, and the server forgot its state. */
  private tellClient(n: number, outcome: ReplayOutcome & { ok: true }): void {
    if (outcome.toolsChanged === true && outcome.listChanged) this.toClient.write(notification('notifications/tools/list_changed', {}));
    const lost = `mcpguard restarted the MCP server (now generation ${n}) after it exited; what it kept in memory (subscriptions, log level, open streams) is gone${outcome.toolsChanged === true ? '; its tool list changed' : ''}`;
    if (outcome.logging) this.toClient.write(notification('notifications/message', { level: 'warning', logger: 'mcpguard', data: lost }));
    this.io.onRestarted?.({
      generation: n,
      replayed: outcome.replayed,
      toolsChanged: outcome.toolsChanged,
      listChangedSent: outcome.toolsChanged === true && outcome.listChanged,
      warned: outcome.logging,
      stateLost: lost,
    });
  }

  /** Shut down what is left of a crashed generation, relay its last lines, answer its calls, record it. */
  private async closeGeneration(gen: Generation, next: string, delayMs: number): Promise<void> {
    const shutdown = await gen.shutdown(() => new Promise<void>((resolve) => this.escalations.push(resolve)));
    const exit = await gen.exited;
    const streamEnd = await gen.drain();
    const relay = this.relay!;
    relay.answerCrashed(
      (call) => this.link(call),
      `the server exited (${describeExit(exit.code, exit.signal)}) before answering; mcpguard restarts it but does not retry the request (it may have run)`,
      { exitStatus: { code: exit.code, signal: exit.signal }, streamEnd },
    );
    this.io.stderr.end();
    this.recordGeneration(gen, exit, streamEnd, shutdown, next, delayMs);
  }

  private link: (call: Call) => boolean = () => false;

  private recordGeneration(
    gen: Generation,
    exit: ExitInfo,
    streamEnd: { stdout: StreamEnd; stderr: StreamEnd },
    shutdown: ShutdownReport,
    next: string,
    delayMs: number | null,
  ): void {
    gen.recorded = true;
    this.io.onGenerationEnd?.({
      generation: gen.number,
      pid: gen.pid,
      startedAt: gen.startedAt,
      endedAt: exit.at,
      exitCode: exit.code,
      signal: exit.signal,
      status: exitCodeOf(exit.code, exit.signal, constants.signals as unknown as Record<string, number>),
      stderrBytes: gen.stderrBytes,
      stderrTail: gen.stderrTail(),
      streamEnd,
      signalsSent: shutdown.signals,
      survivors: shutdown.survivors,
      next,
      delayMs,
    });
  }

  private spawnFailed(error: Error | null, startedAt: number): SessionSummary {
    const { status, why: message } = explainSpawnFailure(this.options.command, error);
    this.io.diag.line(`cannot start ${JSON.stringify(this.options.command)}: ${message}`);
    this.reason = 'spawn_failed';
    return {
      endReason: 'spawn_failed',
      pid: null,
      exitCode: null,
      signal: null,
      status,
      spawnError: message,
      forcedKill: false,
      unkillable: false,
      signalsSent: [],
      survivors: [],
      foundByMarker: null,
      triggerToExitMs: null,
      streamEnd: { stdout: 'not_started', stderr: 'not_started' },
      stderrBytes: 0,
      counters: emptyCounters(),
      protocol: { era: 'unknown', version: null, decidedBy: null },
      outputDropped: 0,
      outputUnflushedBytes: 0,
      startedAt,
      endedAt: Date.now(),
    };
  }
}

/** What wireUp made that the later steps of a run use. */
interface Wired {
  relay: Relay;
  link: ChildLink;
  reclaimer: ReadBufferReclaimer;
  /** The client's input listener, taken off at the end. */
  onInput: (chunk: Buffer) => void;
}

/** What the restarts came to (--restart). */
interface Restarted {
  restarts: number;
  crashed: ExitInfo | null;
  stoppedBy: string | null;
}

/** How the last generation ended. */
interface Ended {
  shutdown: ShutdownReport;
  exit: ExitInfo;
  streamEnd: { stdout: StreamEnd; stderr: StreamEnd };
}
