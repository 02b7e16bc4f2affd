/**
 * The generations of the server. Each is started and wired to the relay (its
 * stdout's lines, its stderr, its pressure, a pipe it closes while running);
 * with --restart, one that exits while the client is still connected is
 * replaced: its calls get their one answer (never a retry), a pause
 * (backoff), a new process, the kept handshake replayed and checked, the
 * client told what changed. The Session (session.ts) holds one Supervisor;
 * the session's end and its shutdown stay there.
 */
import { constants } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { exitCodeOf, startChild, type ExitInfo, type StartedChild } from '../process/child.js';
import type { JoinPool } from '../wire/framing.js';
import { notification } from '../wire/jsonrpc.js';
import type { FrameWriter } from '../wire/writer.js';
import { markedEnv } from '../process/marker.js';
import type { ReadBufferReclaimer } from '../process/reclaim.js';
import type { ShutdownReport } from '../process/shutdown.js';
import type { Watchdog } from '../process/watchdog.js';
import type { Relay } from '../relay/relay.js';
import type { ChildLink } from '../relay/link.js';
import { Generation, STDIN_STALL_MS, type StreamEnd } from './generation.js';
import { replayHandshake, type HandshakeWatch, type ReplayOutcome, type ReplayTap } from './handshake.js';
import type { RestartPolicy } from './restart-policy.js';
import type { SessionIO, SessionOptions } from './session-types.js';
import { describeExit } from './exit-status.js';

/** The least time a restarted server gets to answer the replayed initialize (and mcpguard's own tools/list). */
export const HANDSHAKE_MIN_MS = 10000;

/** What the supervisor needs of its session: its end (the first cause wins there) and its input. */
export interface SessionControl {
  /** The session's end reason once decided, else null. */
  reason(): string | null;
  /** Resolves when the session's end is decided. */
  readonly endRequested: Promise<void>;
  end(reason: string): void;
  /** The child's stdin is full (true) or took its queue again: the client's input waits meanwhile. */
  holdInput(full: boolean): void;
  /** Resolves at the next escalation (a further signal): a shutdown step is cut short. */
  escalation(): Promise<void>;
}

/** What the session wired that the generations are connected to. */
export interface SupervisedParts {
  relay: () => Relay;
  link: ChildLink;
  reclaimer: ReadBufferReclaimer;
  toClient: FrameWriter;
  joins: JoinPool;
  /** With --restart: the handshake kept to replay, and the relay's tap through which the replay takes its own answers. */
  handshake: { watch: HandshakeWatch; tap: ReplayTap } | null;
}

/** The server's generations for one session: the one running now, and with --restart the ones after it. */
export class Supervisor {
  /** The generation running now (a restart replaces it). */
  gen!: Generation;
  /** Bytes of stderr seen from every generation. */
  stderrBytes = 0;
  /** Pause (true) or resume the running generation's stdout: mcpguard's output to the client is full. */
  pauseChildStdout: (full: boolean) => void = () => {};

  constructor(
    private readonly options: SessionOptions,
    private readonly io: SessionIO,
    private readonly session: SessionControl,
    private readonly parts: SupervisedParts,
  ) {}

  /** Each generation runs until it exits or the session ends; a restart replaces it. */
  async supervise(restart: RestartPolicy | null): Promise<Restarted> {
    const { options, io } = this;
    const { link } = this.parts;
    const relay = this.parts.relay();
    let restarts = 0;
    /** The exit of the generation whose crash started the last restart: what a restart that fails leaves mcpguard with. */
    let crashed: ExitInfo | null = null;
    let stoppedBy: string | null = null;
    for (;;) {
      const gen = this.gen;
      const exitedFirst = await Promise.race([this.session.endRequested.then(() => false), gen.exited.then(() => true)]);
      if (!exitedFirst || this.session.reason() !== null) break;
      // A generation stopped because it closed a pipe failed, whatever it exited with.
      const decision = restart === null ? null : restart.decide(gen.exit!, Date.now(), gen.lostStream !== null);
      if (decision === null || !decision.restart) {
        if (decision !== null && decision.why === 'limit')
          stoppedBy = `--max-restarts ${options.restart!.maxRestarts} within --restart-window ${options.restart!.windowMs} ms reached`;
        this.session.end(decision !== null && decision.why === 'limit' ? 'restart_limit' : 'child_exit');
        break;
      }
      crashed = gen.exit;
      // The server crashed with the client still connected: a new generation takes over, and
      // gets what this one never took (frames still in mcpguard's queue, not in its stdin).
      link.goDown();
      relay.serverDown();
      link.requeue(gen.toChild.takeQueued());
      this.session.holdInput(false);
      const how = gen.lostStream === null ? 'exited' : 'was stopped and exited';
      io.diag.line(
        `the server (generation ${gen.number}, pid ${gen.pid}) ${how} (${describeExit(gen.exit!.code, gen.exit!.signal)}) with the client connected; restarting it in ${decision.delayMs} ms (restart ${decision.attempt})`,
      );
      await this.closeGeneration(gen, `restart in ${decision.delayMs} ms`, decision.delayMs);
      relay.serverRestarted();
      const slept = await Promise.race([delay(decision.delayMs).then(() => true), this.session.endRequested.then(() => false)]);
      if (!slept || this.session.reason() !== null) break;
      const nextGen = await this.spawnNext(gen.number + 1);
      if (nextGen instanceof Error) {
        stoppedBy = `the server could not be started again: ${nextGen.message}`;
        io.diag.line(stoppedBy);
        this.session.end('restart_failed');
        break;
      }
      this.gen = nextGen;
      restarts++;
      io.onGeneration?.({ generation: nextGen.number, pid: nextGen.pid, startedAt: nextGen.startedAt });
      // A server may take a while to start: its handshake gets --restart-wait, and never less than HANDSHAKE_MIN_MS.
      const outcome = await this.replay(nextGen, Math.max(options.restart!.waitMs, HANDSHAKE_MIN_MS));
      if (this.session.reason() !== null) break;
      if (!outcome.ok && outcome.kind === 'exited') {
        // It died before it could take over: a crash like any other, counted against --max-restarts.
        // What its stdin never took is mcpguard's own replay, nobody's to pass on.
        nextGen.toChild.takeQueued();
        continue;
      }
      if (!outcome.ok) {
        stoppedBy = outcome.reason;
        io.diag.line(`${outcome.reason}; ending the session`);
        this.session.end(outcome.kind === 'incompatible' ? 'restart_incompatible' : 'restart_failed');
        break;
      }
      link.goUp(nextGen.toChild);
      this.tellClient(nextGen.number, outcome);
    }
    return { restarts, crashed, stoppedBy };
  }

  /** Wire one generation's pipes to the relay and the stderr sink. */
  start(n: number, started: StartedChild, watchdog: Watchdog | undefined): Generation {
    const { reclaimer, relay } = this.parts;
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
        pressure: (full) => this.session.holdInput(full),
        stdinStalled: () =>
          this.io.diag.line(
            `the server (pid ${gen.pid}) took nothing from its stdin for ${STDIN_STALL_MS} ms with mcpguard's queue to it full; reading the client again, and refusing the requests that do not fit until it reads`,
          ),
        joins: this.parts.joins,
        streamLost: (what, reason) => {
          if (this.session.reason() !== null || gen.lostStream !== null) return;
          if (this.options.restart !== null) {
            // A server that stopped talking but runs on is a failed server: stop it, and the restart loop takes over.
            gen.lostStream = what;
            this.io.diag.line(`${what} while still running (generation ${n}, pid ${gen.pid}); stopping it to start it again (--restart)`);
            void gen.shutdown(() => this.session.escalation());
            return;
          }
          this.io.diag.line(`${what} while still running; ending the session`);
          this.session.end(reason);
        },
      },
      reclaimer,
      watchdog,
    );
    this.pauseChildStdout = (full) => gen.pauseStdout(full);
    return gen;
  }

  /** The next generation, or the error that kept it from starting. */
  private async spawnNext(n: number): Promise<Generation | Error> {
    const { command, args, marker } = this.options;
    const started = startChild(command, args, { env: marker === null ? process.env : markedEnv(process.env, marker) });
    const error = await started.spawned;
    if (error !== null || started.child === null || started.child.pid === undefined) return error ?? new Error('no process id');
    return this.start(n, started, undefined);
  }

  private async replay(gen: Generation, waitMs: number): Promise<ReplayOutcome> {
    const relay = this.parts.relay();
    const handshake = this.parts.handshake;
    // A modern-era server has no handshake: every request carries what it needs.
    if (relay.modern() || handshake === null) return { ok: true, replayed: false, toolsChanged: null, listChanged: false, logging: false };
    return await Promise.race([
      replayHandshake(handshake.watch, {
        send: (frame) => gen.toChild.write(frame),
        intercept: (take) => (handshake.tap.take = take),
        waitMs,
        generation: gen.number,
        taken: (key) => relay.idTaken(key),
        exited: gen.exited,
      }),
      this.session.endRequested.then((): ReplayOutcome => ({ ok: true, replayed: false, toolsChanged: null, listChanged: false, logging: false })),
    ]);
  }

  /** After a restart, what the client must hear: its tools changed, and the server forgot its state. */
  private tellClient(n: number, outcome: ReplayOutcome & { ok: true }): void {
    if (outcome.toolsChanged === true && outcome.listChanged) this.parts.toClient.write(notification('notifications/tools/list_changed', {}));
    const lost = `mcpguard restarted the MCP server (now generation ${n}) after it exited; what it kept in memory (subscriptions, log level, open streams) is gone${outcome.toolsChanged === true ? '; its tool list changed' : ''}`;
    if (outcome.logging) this.parts.toClient.write(notification('notifications/message', { level: 'warning', logger: 'mcpguard', data: lost }));
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
    const shutdown = await gen.shutdown(() => this.session.escalation());
    const exit = await gen.exited;
    const streamEnd = await gen.drain();
    const relay = this.parts.relay();
    relay.answerCrashed(
      (call) => this.parts.link.isWaiting(call),
      `the server exited (${describeExit(exit.code, exit.signal)}) before answering; mcpguard restarts it but does not retry the request (it may have run)`,
      { exitStatus: { code: exit.code, signal: exit.signal }, streamEnd },
    );
    this.io.stderr.end();
    this.recordEnd(gen, exit, streamEnd, shutdown, next, delayMs);
  }

  /** A generation's end, told once (GenerationEnd): at a restart, or by the session's shutdown for the last one. */
  recordEnd(
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
}

/** What the restarts came to (--restart). */
export interface Restarted {
  restarts: number;
  crashed: ExitInfo | null;
  stoppedBy: string | null;
}
