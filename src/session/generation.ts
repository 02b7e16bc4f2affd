/**
 * One generation of the server: one process (the leader of its own process
 * group), its three pipes, its watchdog and descendant tracker, its shutdown
 * and the drain of its pipes after it exited. A session without --restart
 * has exactly one; with --restart each start of the server is a new one,
 * numbered from 1, and the last one's exit is the session's exit status.
 */
import type { Readable } from 'node:stream';
import type { ExitInfo, StartedChild } from '../process/child.js';
import { LineSplitter, type LineEvent } from '../wire/framing.js';
import type { JoinPool } from '../wire/framing.js';
import { FramePrescan } from '../wire/json-prescan.js';
import { markedProcesses } from '../process/marker.js';
import { DescendantTracker } from '../process/proctree.js';
import type { ReadBufferReclaimer } from '../process/reclaim.js';
import { shutdownTree, type ShutdownReport } from '../process/shutdown.js';
import { armWatchdog, type Watchdog } from '../process/watchdog.js';
import { FrameWriter, QueueRefusal } from '../wire/writer.js';

export type StreamEnd = 'eof' | 'cut_after_drain_timeout' | 'not_started';

export interface GenerationOptions {
  maxFrameBytes: number;
  graceMs: number;
  drainMs: number;
  marker: string | null;
  /** --restart (null: never): frames this generation never took are kept for the next one. */
  restart: unknown;
}

export interface GenerationHooks {
  /** Buffers of large joined frames, shared with the session's other splitter and writers. */
  joins?: JoinPool;
  /** Every line of the child's stdout. */
  line(event: LineEvent): void;
  /** Every chunk of the child's stderr, as it arrives. */
  stderr(chunk: Buffer): void;
  /** The child's stdin is full (true) or took its queue again (false). */
  pressure(full: boolean): void;
  /** The child took nothing from its stdin for STDIN_STALL_MS with the queue full: from now on what does not fit is refused. */
  stdinStalled?(): void;
  /** The child closed stdin (unexpectedly) or stdout while running; `reason` is the session's end reason. */
  streamLost(what: string, reason: string): void;
}

export class Generation {
  readonly pid: number;
  readonly startedAt = Date.now();
  readonly toChild: FrameWriter;
  readonly exited: Promise<ExitInfo>;
  /** Set once the exit was seen. */
  exit: ExitInfo | null = null;
  stderrBytes = 0;
  /** The last bytes of its stderr (raw: masked by whoever keeps them). */
  private readonly tail: Buffer[] = [];
  private tailBytes = 0;
  /** Its end was recorded (onGenerationEnd). */
  recorded = false;
  /** It closed a pipe while still running, and was stopped for a restart: which pipe (null: it did not). */
  lostStream: string | null = null;
  private readonly watchdog: Watchdog;
  private readonly tracker: DescendantTracker | null;
  private readonly sampler: NodeJS.Timeout | null;
  private readonly lines: LineSplitter;
  private readonly stdoutEnded: Promise<void>;
  private readonly stderrEnded: Promise<void>;
  private shutdownDone: Promise<ShutdownReport> | null = null;
  private drainDone: Promise<{ stdout: StreamEnd; stderr: StreamEnd }> | null = null;

  /**
   * Take over a child that has spawned (`started.spawned` resolved to null).
   * `watchdog` is one armed when the child started, if any.
   */
  constructor(
    readonly number: number,
    private readonly started: StartedChild,
    private readonly options: GenerationOptions,
    hooks: GenerationHooks,
    reclaimer: ReadBufferReclaimer,
    watchdog: Watchdog | undefined,
  ) {
    const child = started.child!;
    const pid = child.pid!;
    this.pid = pid;
    this.exited = started.exited;
    void this.exited.then((exit) => (this.exit = exit));
    const marker = options.marker;
    this.watchdog = watchdog ?? armWatchdog(pid, options.graceMs, marker);
    this.tracker = process.platform === 'linux' ? new DescendantTracker(pid, marker === null ? null : () => markedProcesses(marker)) : null;

    this.toChild = new FrameWriter(child.stdin, {
      queueLimit: options.maxFrameBytes,
      onPressure: hooks.pressure,
      onClosed: (error, expected) => {
        if (!expected) this.streamLost(hooks, `the server closed its stdin (${(error as NodeJS.ErrnoException).code ?? error.message})`, 'child_stdin_closed');
      },
      joins: hooks.joins,
      // With --restart, what this generation never took goes to the next one (Supervisor.supervise, supervisor.ts, requeues it).
      keepQueuedOnClose: options.restart !== null,
      // A server that stopped reading must not hide the client's later frames (its end of input above all) for ever.
      stall: {
        ms: STDIN_STALL_MS,
        error: new QueueRefusal(`the server took nothing from its stdin for ${STDIN_STALL_MS} ms with mcpguard's queue to it full; not delivered`),
        onStall: hooks.stdinStalled,
      },
    });

    this.lines = new LineSplitter(options.maxFrameBytes, hooks.line, null, hooks.joins, new FramePrescan());
    this.stdoutEnded = streamEnded(child.stdout);
    child.stdout.on('data', (chunk: Buffer) => {
      reclaimer.account(chunk.length, 'stdout');
      this.lines.push(chunk);
    });
    void this.stdoutEnded.then(() => {
      this.lines.end();
      this.streamLost(hooks, 'the server closed its stdout', 'child_stdout_closed');
    });

    // Always drained, never paused.
    this.stderrEnded = streamEnded(child.stderr);
    child.stderr.on('data', (chunk: Buffer) => {
      reclaimer.account(chunk.length, 'stderr');
      this.stderrBytes += chunk.length;
      this.keepTail(chunk);
      hooks.stderr(chunk);
    });
    started.release();

    // Periodic snapshots find descendants before an exit re-parents them.
    this.sampler = this.tracker === null ? null : setInterval(() => this.tracker!.snapshot(), 1000);
    this.sampler?.unref();
  }

  /** Its last stderr text (at most TAIL_BYTES, from a line start when cut), or null if it wrote none. */
  stderrTail(): string | null {
    if (this.tailBytes === 0) return null;
    let text = Buffer.concat(this.tail);
    if (text.length > TAIL_BYTES) {
      text = text.subarray(text.length - TAIL_BYTES);
      // A cut may fall inside a secret, which masking could then not recognise: start at the next line.
      const nl = text.indexOf(10);
      text = nl === -1 ? Buffer.alloc(0) : text.subarray(nl + 1);
    }
    return text.toString('utf8');
  }

  private keepTail(chunk: Buffer): void {
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    // Keep a little more than the tail, so a cut can move to a line start.
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= TAIL_BYTES * 2) this.tailBytes -= this.tail.shift()!.length;
  }

  /** Pause or resume reading the child's stdout (the client is not taking answers). */
  pauseStdout(full: boolean): void {
    const out = this.started.child!.stdout;
    if (full) out.pause();
    else out.resume();
  }

  /** The one shutdown sequence for this generation's tree (once; later calls get the same report). */
  shutdown(skip: () => Promise<void>): Promise<ShutdownReport> {
    this.shutdownDone ??= (async () => {
      const report = await shutdownTree(
        { pgid: this.pid, closeStdin: () => this.toChild.end(), exited: this.exited, tracker: this.tracker },
        this.options.graceMs,
        skip,
      );
      if (this.sampler !== null) clearInterval(this.sampler);
      this.watchdog.disarm();
      return report;
    })();
    return this.shutdownDone;
  }

  /**
   * After the exit: wait for the pipes to reach EOF, but not forever (a stray
   * process may hold them). Answers the child wrote just before exiting are
   * still in the pipe: they are relayed first.
   */
  drain(): Promise<{ stdout: StreamEnd; stderr: StreamEnd }> {
    this.drainDone ??= (async () => {
      const exit = await this.exited;
      const child = this.started.child!;
      const deadline = Math.max(0, exit.at + this.options.drainMs - Date.now());
      const [stdout, stderr] = await Promise.all([
        cutAfter(this.stdoutEnded, deadline, () => child.stdout.destroy()),
        cutAfter(this.stderrEnded, deadline, () => child.stderr.destroy()),
      ]);
      if (stdout !== 'eof') this.lines.end();
      return { stdout, stderr };
    })();
    return this.drainDone;
  }

  /**
   * One of the child's pipes closed while it runs. A process that exits
   * closes them too, usually just before its exit is seen: wait a moment for
   * that, so a crash stays a crash.
   */
  private streamLost(hooks: GenerationHooks, what: string, reason: string): void {
    if (this.exit !== null) return;
    let timer: NodeJS.Timeout | undefined;
    const settle = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, EXIT_RACE_MS);
    });
    void Promise.race([this.exited, settle]).then(() => {
      clearTimeout(timer);
      if (this.exit === null) hooks.streamLost(what, reason);
    });
  }
}

/** Most bytes of a generation's stderr kept for its record. */
export const TAIL_BYTES = 2048;

/**
 * How long a server may take nothing from its stdin, with mcpguard's queue to
 * it full, before mcpguard reads the client again and refuses what does not
 * fit (see FrameWriterOptions.stall).
 */
export const STDIN_STALL_MS = 5000;

/** How long a closed child pipe waits for the child's exit before it counts as a pipe closed by a live server. */
export const EXIT_RACE_MS = 500;

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
