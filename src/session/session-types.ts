/**
 * What a session is given and what it reports: its options, the callbacks
 * through which it tells the rest of mcpguard what happens (generations,
 * restarts, the ending), and the summary it resolves to. Kept apart from
 * session.ts, which runs the child, so that readers of these shapes (run.ts,
 * audit, the summary printer) need not read the supervision code.
 */
import type { Readable, Writable } from 'node:stream';
import type { Diagnostics } from '../mask/diagnostics.js';
import type { Gate, GateIO } from '../gate/gate.js';
import type { SessionObserver } from '../relay/observer.js';
import type { ResponseDecorator } from '../relay/hooks.js';
import type { RelayCounters, RelayOptions } from '../relay/relay.js';
import type { StreamEnd } from './generation.js';
import type { RestartOptions } from './restart-policy.js';
import type { Watchdog } from '../process/watchdog.js';

export interface SessionOptions extends RelayOptions {
  command: string;
  args: readonly string[];
  /** Grace period of each shutdown step, ms. */
  graceMs: number;
  /** How long to wait for the child's pipes to reach EOF after it exited, ms. */
  drainMs: number;
  /** The session id the child's environment carries as MCPGUARD_SESSION_ID (null: not marked). */
  marker: string | null;
  /** --restart and its bounds; null: the server's exit ends the session (--restart never). */
  restart: RestartOptions | null;
}

/** A generation of the server started (the first is the child the command line started). */
export interface GenerationStart {
  generation: number;
  pid: number;
  startedAt: number;
}

/** A generation of the server ended: how, and what came next. */
export interface GenerationEnd extends GenerationStart {
  endedAt: number;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  status: number;
  stderrBytes: number;
  /** Its last stderr text, raw (the records mask it); null if it wrote none. */
  stderrTail: string | null;
  streamEnd: { stdout: StreamEnd; stderr: StreamEnd };
  signalsSent: string[];
  survivors: Array<{ pid: number; comm: string }>;
  /** 'restart in N ms', or 'session_end'. */
  next: string;
  delayMs: number | null;
}

/** What a restart told the client and what it could not keep. */
export interface RestartNotice {
  generation: number;
  /** The kept initialize was replayed (legacy era). */
  replayed: boolean;
  /** The tool list differs from the last one the client was given (null: not compared). */
  toolsChanged: boolean | null;
  listChangedSent: boolean;
  /** A notifications/message warning went to the client (logging was negotiated). */
  warned: boolean;
  stateLost: string;
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
  /** Decorates a tools/call answer before it is written (the stderr excerpt, stderr/decorate.ts). */
  decorate?: ResponseDecorator;
  /** Builds the gate that reviews each tools/call (null: no gate). */
  gate?: ((io: GateIO) => Gate) | null;
  /**
   * Called once the session's end is decided and the client's input closed,
   * before the child is shut down: what must not wait for the child (a probe
   * session's record, see probe.ts) is written here.
   */
  onEnding?: (ending: SessionEnding) => void;
  /** Each generation of the server, as it starts (--restart: there may be several). */
  onGeneration?: (start: GenerationStart) => void;
  onGenerationEnd?: (end: GenerationEnd) => void;
  /** A new generation took over and the client was told what it needs to know. */
  onRestarted?: (notice: RestartNotice) => void;
}

/** What is known when the session's end is decided, before the child's shutdown. */
export interface SessionEnding {
  reason: string;
  pid: number;
  counters: RelayCounters;
  stderrBytes: number;
  protocol: SessionSummary['protocol'];
}

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
  /** With --restart: restarts done, generations run, and what stopped them (null: nothing did). */
  restarts?: { count: number; generations: number; stoppedBy: string | null } | null;
}
