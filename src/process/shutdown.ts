/**
 * The one shutdown sequence, used by every ending (client EOF, signal, invalid
 * frame, child noise, the child's own exit):
 *
 *   close stdin → wait grace → SIGTERM + SIGCONT to the group → wait grace →
 *   SIGKILL the group → bounded wait → report a process that will not die.
 *
 * Then whatever is left of the tree — group members that outlived the leader,
 * known descendants that left the group, processes that carry the session
 * marker in their environment (a double-forked daemon: see marker.ts) — goes
 * through the same TERM → KILL. The caller keeps reading both child streams
 * the whole time.
 */
import { groupAlive, signalGroup } from './child.js';
import type { DescendantTracker, ProcInfo } from './proctree.js';

/** How long to wait for a SIGKILLed process to be reaped before calling it unkillable. */
export const KILL_WAIT_MS = 2000;
const POLL_MS = 25;

export interface ShutdownTarget {
  pgid: number;
  closeStdin(): void;
  /** Resolves when the child has exited. */
  exited: Promise<unknown>;
  tracker: DescendantTracker | null;
}

export interface ShutdownReport {
  /** Signals sent to the group, in order. */
  signals: string[];
  /** SIGKILL was needed. */
  forced: boolean;
  /** The child did not exit even after SIGKILL within the bounded wait. */
  unkillable: boolean;
  /** Processes of the tree still alive at the end. */
  survivors: Array<{ pid: number; comm: string }>;
  /** Processes found only by the session marker (the tree walk never saw them); null if no sweep could run. */
  foundByMarker: Array<{ pid: number; comm: string }> | null;
}

/**
 * Run the sequence. `skip` resolves early to cut the current wait short
 * (a second signal to mcpguard escalates to the next step).
 */
export async function shutdownTree(target: ShutdownTarget, graceMs: number, skip: () => Promise<void>): Promise<ShutdownReport> {
  const report: ShutdownReport = { signals: [], forced: false, unkillable: false, survivors: [], foundByMarker: null };
  target.tracker?.snapshot();
  target.closeStdin();
  if (!(await within(target.exited, graceMs, skip))) {
    terminate(target.pgid, report);
    if (!(await within(target.exited, graceMs, skip))) {
      kill(target.pgid, report);
      if (!(await within(target.exited, KILL_WAIT_MS))) report.unkillable = true;
    }
  }
  await reapTheRest(target, graceMs, report, skip);
  report.foundByMarker = target.tracker?.foundByMarker()?.map((p) => ({ pid: p.pid, comm: p.comm })) ?? null;
  return report;
}

/** Group members that outlived the leader, descendants that left the group, marked processes. */
async function reapTheRest(target: ShutdownTarget, graceMs: number, report: ShutdownReport, skip: () => Promise<void>): Promise<void> {
  target.tracker?.snapshot();
  // The one sweep every session pays for (milliseconds: see marker.ts); the others are on the slow path.
  target.tracker?.sweep();
  const strays = (): ProcInfo[] => target.tracker?.outsideGroup(target.pgid) ?? [];
  const anyLeft = () => groupAlive(target.pgid) || strays().length > 0;
  if (!anyLeft()) return;
  terminate(target.pgid, report);
  for (const p of strays()) {
    signal(p.pid, 'SIGTERM');
    signal(p.pid, 'SIGCONT');
  }
  if (await until(() => !anyLeft(), graceMs, skip)) return;
  // A daemon may have forked again on SIGTERM: its children carry the marker too.
  target.tracker?.sweep();
  kill(target.pgid, report);
  for (const p of strays()) signal(p.pid, 'SIGKILL');
  await until(() => !anyLeft(), KILL_WAIT_MS);
  target.tracker?.sweep();
  report.survivors = strays().map((p) => ({ pid: p.pid, comm: p.comm }));
  if (groupAlive(target.pgid)) report.survivors.push({ pid: -target.pgid, comm: '(process group)' });
}

function terminate(pgid: number, report: ShutdownReport): void {
  if (signalGroup(pgid, 'SIGTERM')) report.signals.push('SIGTERM');
  // A stopped process cannot act on SIGTERM until it is continued.
  signalGroup(pgid, 'SIGCONT');
}

function kill(pgid: number, report: ShutdownReport): void {
  if (signalGroup(pgid, 'SIGKILL')) report.signals.push('SIGKILL');
  report.forced = true;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

/** True if `promise` settled within `ms` (or `skip` fired first: false). */
async function within(promise: Promise<unknown>, ms: number, skip?: () => Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = promise.then(() => true);
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const race = [settled, timeout];
  if (skip) race.push(skip().then(() => false));
  try {
    return await Promise.race(race);
  } finally {
    clearTimeout(timer);
  }
}

/** Poll `done` until true or `ms` pass. */
async function until(done: () => boolean, ms: number, skip?: () => Promise<void>): Promise<boolean> {
  const deadline = Date.now() + ms;
  let skipped = false;
  void skip?.().then(() => {
    skipped = true;
  });
  while (Date.now() < deadline && !skipped) {
    if (done()) return true;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  return done();
}
