/**
 * Is a session's mcpguard still running? Decided by its process, never by the
 * absence of a seal: an unsealed log is `running` while the mcpguard that
 * writes it is alive, and `crashed` once that process is gone.
 *
 * A pid alone cannot say it: pids are reused, and after a crash another
 * process may hold the same number. So session_start records mcpguard's start
 * identity (`mcpguard_start`), and a session is running only when a process
 * with its pid exists AND started at the recorded moment:
 * - Linux: field 22 of /proc/PID/stat (start time in clock ticks after boot)
 *   with the boot id (/proc/sys/kernel/random/boot_id): exact, and a reboot
 *   makes every old session gone.
 * - elsewhere (macOS): kill(pid, 0) says whether the pid exists, and
 *   `ps -o lstart= -p PID` its start time to the second, compared with the
 *   recorded wall-clock start (`started_ms`) within START_SLACK_MS.
 * The host name is recorded too: a record directory shared between machines
 * says `unknown` for another host's sessions rather than guess.
 * A log from before this record (no `mcpguard_start`) is `crashed` when its pid
 * is gone and `unknown` when some process holds it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { LogRecord } from './chain.js';

/** How a session's mcpguard fares: alive, gone, or not known from here. */
export type Liveness = 'running' | 'crashed' | 'unknown';

/** What session_start records about mcpguard's own process (besides `mcpguard_pid`). */
export interface StartIdentity {
  host: string;
  /** Wall-clock start of the process, ms since the epoch (to within a few ms). */
  started_ms: number;
  /** Linux: /proc/self/stat field 22, in clock ticks after boot. */
  start_ticks?: number;
  /** Linux: the boot the ticks count from. */
  boot_id?: string;
}

/** A wall-clock start read back with `ps` is good to the second; allow for rounding both ways. */
const START_SLACK_MS = 2000;

let own: StartIdentity | undefined;

/** This process's start identity, for session_start (read once). */
export function ownStartIdentity(): StartIdentity {
  if (own !== undefined) return own;
  const identity: StartIdentity = { host: hostname(), started_ms: Math.round(Date.now() - process.uptime() * 1000) };
  const ticks = procStartTicks(process.pid);
  const boot = bootId();
  if (ticks !== null && boot !== null) Object.assign(identity, { start_ticks: ticks, boot_id: boot });
  own = identity;
  return identity;
}

/**
 * The liveness of the mcpguard that wrote a log, from its session_start
 * record (else its header's `writer_pid`). Callers ask only about unsealed
 * logs: a sealed one has ended whatever its process does now.
 */
export function liveness(start: LogRecord | undefined, header?: LogRecord): Liveness {
  const pid = start?.mcpguard_pid ?? header?.writer_pid;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return 'unknown';
  const recorded = start?.mcpguard_start;
  const identity = typeof recorded === 'object' && recorded !== null ? (recorded as Partial<StartIdentity>) : null;
  if (identity !== null && typeof identity.host === 'string' && identity.host !== hostname()) return 'unknown';
  const exists = pidExists(pid);
  if (exists === false) return 'crashed';
  if (identity === null) return 'unknown'; // a pid that exists, and nothing to tell its process from another
  const match = sameProcess(pid, identity);
  if (match === null) return 'unknown';
  return match ? 'running' : 'crashed';
}

/** Does the process `pid` (known to exist) have the recorded start? null when this system cannot tell. */
function sameProcess(pid: number, identity: Partial<StartIdentity>): boolean | null {
  if (typeof identity.start_ticks === 'number' && typeof identity.boot_id === 'string') {
    const boot = bootId();
    if (boot !== null) {
      if (boot !== identity.boot_id) return false; // rebooted since: that process is long gone
      const ticks = procStartTicks(pid);
      return ticks === null ? false : ticks === identity.start_ticks;
    }
  }
  if (typeof identity.started_ms !== 'number') return null;
  const started = psStartMs(pid);
  if (started === undefined) return null;
  return started !== null && Math.abs(started - identity.started_ms) <= START_SLACK_MS;
}

/** true: a process with this pid exists (perhaps another user's); false: none; null: cannot tell. */
function pidExists(pid: number): boolean | null {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ESRCH') return false;
    if (code === 'EPERM') return true;
    return null;
  }
}

/** Field 22 of /proc/PID/stat (after the `(comm)`, which may hold spaces and parentheses); null off Linux or when gone. */
export function procStartTicks(pid: number): number | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state), so field 22 is fields[19].
  const ticks = Number(fields[19]);
  return Number.isSafeInteger(ticks) ? ticks : null;
}

let boot: string | null | undefined;
function bootId(): string | null {
  if (boot !== undefined) return boot;
  try {
    boot = readFileSync('/proc/sys/kernel/random/boot_id', 'latin1').trim() || null;
  } catch {
    boot = null;
  }
  return boot;
}

/** A process's start from `ps -o lstart=` (to the second); null when ps names no such process, undefined when ps cannot be run. */
function psStartMs(pid: number): number | null | undefined {
  let text: string;
  try {
    text = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      timeout: 2000,
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { ...process.env, LC_ALL: 'C', TZ: process.env.TZ ?? '' },
    }).trim();
  } catch (error) {
    // ps exits 1 when no process matches.
    return (error as { status?: unknown }).status === 1 ? null : undefined;
  }
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}
