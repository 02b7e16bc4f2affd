/**
 * One server process of a check run, from spawn to reaping: both stream
 * readers, the stderr ring, the timers, the watchdog, and the one shutdown
 * sequence of the relay (close stdin → grace → SIGTERM the group → grace →
 * SIGKILL). A run uses one; under --protocol-version auto, a legacy server
 * gets a second one after the probe, as the SDK v2 client does.
 */
import { spawnInGroup } from '../process/child.js';
import { markedEnv, markedProcesses } from '../process/marker.js';
import { Masker } from '../mask/mask.js';
import { DescendantTracker } from '../process/proctree.js';
import { newSessionId } from '../records/session-id.js';
import { shutdownTree, type ShutdownReport } from '../process/shutdown.js';
import { Redactor } from '../mask/redact.js';
import { ByteRing, type RingSnapshot } from '../stderr/ring.js';
import { armWatchdog } from '../process/watchdog.js';
import type { Readable } from 'node:stream';
import type { Request } from '../wire/jsonrpc.js';
import type { ConversationIO } from './exchange.js';
import type { CheckPlan } from './options.js';
import { Transcript, type TranscriptEra } from './transcript.js';

/** Bytes of stderr kept per process (first half and last half); the rest is counted. */
export const STDERR_KEEP_BYTES = 64 * 1024;
/** After the exit, how long the pipes may stay open (a grandchild holding them) before they are cut. */
const DRAIN_MS = 1000;

/** How the process ended and what it left on its streams. */
export interface Ended {
  exit: { code: number | null; signal: NodeJS.Signals | null; at: number };
  shutdown: ShutdownReport;
  /** Exit time minus the time stdin was closed; null if it exited before. */
  afterClose: number | null;
  transcript: Transcript;
  stderr: { bytes: number; masked: number; ring: RingSnapshot };
}

export type Started = { ok: true; server: ServerProcess } | { ok: false; error: unknown };

/** Spawn the server; `{ ok: false }` when it could not start (command not found, …). */
export async function startServer(plan: CheckPlan, era: TranscriptEra, stopped: Promise<void>): Promise<Started> {
  // Marked like a relay session, so that a daemon the server double-forks is found and stopped too.
  const marker = newSessionId();
  let child: ReturnType<typeof spawnInGroup>;
  try {
    child = spawnInGroup(plan.command, plan.args, { cwd: plan.cwd, env: markedEnv(plan.env, marker) });
  } catch (error) {
    // Node throws for some failures (an empty command, ENOTDIR) and emits 'error' for others.
    return { ok: false, error };
  }
  // If `error` is emitted instead of `spawn`, `exit` will never be emitted.
  const spawnError = await new Promise<Error | null>((resolve) => {
    child.once('spawn', () => resolve(null));
    child.once('error', (error) => resolve(error));
  });
  if (spawnError !== null || child.pid === undefined) return { ok: false, error: spawnError };
  return { ok: true, server: new ServerProcess(plan, child, marker, era, stopped) };
}

export class ServerProcess {
  readonly io: ConversationIO;
  private exitInfo: Ended['exit'] | null = null;
  private readonly exited: Promise<Ended['exit']>;
  private readonly drained: Promise<unknown>;
  private readonly redactor: Redactor;
  private readonly ring = new ByteRing(STDERR_KEEP_BYTES, 'head+tail');
  private readonly watchdog: ReturnType<typeof armWatchdog>;
  private readonly tracker: DescendantTracker | null;
  private readonly sampler: NodeJS.Timeout | null;

  constructor(
    private readonly plan: CheckPlan,
    private readonly child: ReturnType<typeof spawnInGroup>,
    marker: string,
    era: TranscriptEra,
    stopped: Promise<void>,
  ) {
    const pid = child.pid!;
    this.watchdog = armWatchdog(pid, plan.graceMs, marker);
    this.tracker = process.platform === 'linux' ? new DescendantTracker(pid, () => markedProcesses(marker)) : null;
    const tracker = this.tracker;
    this.sampler = tracker === null ? null : setInterval(() => tracker.snapshot(), 1000);
    this.sampler?.unref();
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve((this.exitInfo = { code, signal, at: Date.now() }))));

    child.stdin.on('error', () => {}); // EPIPE: the server closed its stdin or exited; the exit is reported
    const write = (frame: string) => {
      if (this.exitInfo === null && child.stdin.writable) child.stdin.write(frame);
    };
    // Reports end up in public CI logs: what is shown of the server's bytes is masked like stderr.
    const masker = new Masker(plan.env);
    const show = (bytes: Buffer, max?: number) => masker.quote(bytes, max);
    const transcript = new Transcript({
      maxFrameBytes: plan.maxFrameBytes,
      allowBatch: plan.protocolVersion === '2025-03-26',
      show,
      onServerRequest: (request) => write(answerFor(request)),
      era,
    });
    const stdoutEnded = streamEnded(child.stdout);
    child.stdout.on('data', (chunk: Buffer) => transcript.push(chunk));
    void stdoutEnded.then(() => transcript.end());

    // stderr: always drained, masked, and only its first and last bytes kept.
    this.redactor = new Redactor({ env: plan.env });
    const stderrEnded = streamEnded(child.stderr);
    child.stderr.on('data', (chunk: Buffer) => this.ring.push(this.redactor.push(chunk)));

    // Wait on `exit`, then give the pipes a bounded time to reach EOF: a process
    // the server left behind may hold them open forever.
    this.drained = this.exited.then((exit) => {
      const ms = Math.max(0, exit.at + DRAIN_MS - Date.now());
      return Promise.all([cutAfter(stdoutEnded, ms, () => child.stdout.destroy()), cutAfter(stderrEnded, ms, () => child.stderr.destroy())]);
    });
    this.io = { transcript, write, show, gone: this.drained.then(() => {}), stopped };
  }

  /** Close stdin and go through the grace path; `skip` (a second signal) cuts the waits short. */
  async stop(skip: () => Promise<void>): Promise<Ended> {
    let closedAt = 0;
    let before = false;
    const shutdown = await shutdownTree(
      {
        pgid: this.child.pid!,
        closeStdin: () => {
          closedAt = Date.now();
          before = this.exitInfo !== null;
          this.child.stdin.end();
        },
        exited: this.exited,
        tracker: this.tracker,
      },
      this.plan.graceMs,
      skip,
    );
    if (this.sampler !== null) clearInterval(this.sampler);
    this.watchdog.disarm();
    const exit = await this.exited;
    await this.drained;
    this.io.transcript.end();
    this.ring.push(this.redactor.flush());
    return {
      exit,
      shutdown,
      afterClose: before ? null : exit.at - closedAt,
      transcript: this.io.transcript,
      stderr: { bytes: this.redactor.bytesIn, masked: this.redactor.count, ring: this.ring.snapshot() },
    };
  }
}

/**
 * The check declares no client capabilities, so a server request gets "method
 * not found", except ping, which every party must answer. (Legacy era only:
 * in the modern era requests on stdout are findings and get no answer.)
 */
function answerFor(request: Request): string {
  if (request.method === 'ping') return `${JSON.stringify({ jsonrpc: '2.0', id: request.id, result: {} })}\n`;
  return `${JSON.stringify({ jsonrpc: '2.0', id: request.id, error: { code: -32601, message: `mcpguard check offers no ${request.method}` } })}\n`;
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
