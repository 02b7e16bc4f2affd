/**
 * The child's process tree, read from procfs (Linux). Used to find descendants
 * that left the child's process group (setsid, double fork) so that shutdown
 * can kill them too or name them as survivors. Each process is identified by
 * pid *and* start time, so a recycled pid is never mistaken for a descendant.
 * On systems without /proc the snapshot is empty and only the group is signalled.
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';

/** One scratch buffer for every read of a /proc file: a scan reads hundreds of small files. */
const scratch = Buffer.allocUnsafe(8192);

/** The text of a small /proc file (its first 8 KiB), read into the shared scratch buffer; throws as the read does. */
export function readProcText(path: string): string {
  const fd = openSync(path, 'r');
  try {
    return scratch.toString('latin1', 0, readSync(fd, scratch, 0, scratch.length, 0));
  } finally {
    closeSync(fd);
  }
}

export interface ProcInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** Start time in clock ticks since boot (field 22 of /proc/PID/stat). */
  start: string;
  comm: string;
  /** CPU time the process itself used, in clock ticks (fields 14 and 15 of /proc/PID/stat; not its reaped children's). */
  utime?: number;
  stime?: number;
}

/** Parse /proc/PID/stat; null if the process is gone. */
export function readProc(pid: number): ProcInfo | null {
  let text: string;
  try {
    text = readProcText(`/proc/${pid}/stat`);
  } catch {
    return null;
  }
  // comm is in parentheses and may itself contain spaces and ')'.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const fields = text.slice(close + 2).split(' ');
  // fields[0] is state (field 3); ppid is field 4, pgrp 5, session 6, starttime 22.
  if (fields[0] === 'Z') return null; // a zombie is already dead
  return {
    pid,
    ppid: Number(fields[1]),
    pgid: Number(fields[2]),
    sid: Number(fields[3]),
    start: fields[19] ?? '',
    comm,
    utime: Number(fields[11]),
    stime: Number(fields[12]),
  };
}

/** Every living (non-zombie) process, or null without procfs. */
function allProcs(): ProcInfo[] | null {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return null;
  }
  const procs: ProcInfo[] = [];
  for (const name of entries) {
    const c = name.charCodeAt(0);
    if (c < 0x30 || c > 0x39) continue;
    const info = readProc(Number(name));
    if (info !== null) procs.push(info);
  }
  return procs;
}

/**
 * Living members of process group `pgid`, or null without procfs. Unlike
 * `kill(-pgid, 0)` this does not count zombies, which a container's init may
 * never reap and which no signal can end anyway.
 */
export function groupMembers(pgid: number): ProcInfo[] | null {
  return allProcs()?.filter((p) => p.pgid === pgid) ?? null;
}

/** Every living descendant of `root` (not root itself). */
export function descendantsOf(root: number): ProcInfo[] {
  const children = new Map<number, ProcInfo[]>();
  for (const info of allProcs() ?? []) {
    const list = children.get(info.ppid);
    if (list === undefined) children.set(info.ppid, [info]);
    else list.push(info);
  }
  const found: ProcInfo[] = [];
  const stack = [root];
  while (stack.length > 0) {
    for (const child of children.get(stack.pop()!) ?? []) {
      found.push(child);
      stack.push(child.pid);
    }
  }
  return found;
}

/**
 * Every living process below any of `roots` (not the roots themselves, unless
 * one is below another), from
 * one read of /proc however many roots there are; null without procfs. The
 * resource meter walks from the server and from each descendant it has seen,
 * so an orphan re-parented away from the tree is still found.
 */
export function descendantsOfAny(roots: ReadonlyArray<{ pid: number; start?: string }>): ProcInfo[] | null {
  const procs = allProcs();
  if (procs === null) return null;
  const children = new Map<number, ProcInfo[]>();
  for (const info of procs) {
    const list = children.get(info.ppid);
    if (list === undefined) children.set(info.ppid, [info]);
    else list.push(info);
  }
  const found = new Map<number, ProcInfo>();
  // A root known by its start time is walked only if that same process is still there: a pid can be reused.
  const living = new Map(procs.map((p) => [p.pid, p.start]));
  const stack = roots.filter((r) => r.start === undefined || living.get(r.pid) === r.start).map((r) => r.pid);
  while (stack.length > 0) {
    for (const child of children.get(stack.pop()!) ?? []) {
      if (found.has(child.pid)) continue;
      found.set(child.pid, child);
      stack.push(child.pid);
    }
  }
  return [...found.values()];
}

/**
 * Children of `pid` as the kernel lists them in /proc/PID/task/TID/children
 * (one file per thread); null if it cannot say (no such files: a kernel
 * without CONFIG_PROC_CHILDREN, or the process is gone).
 */
export function childPids(pid: number): number[] | null {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  const pids: number[] = [];
  for (const task of tasks) {
    let text: string;
    try {
      text = readProcText(`/proc/${pid}/task/${task}/children`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && task === String(pid)) return null;
      continue; // a thread that just ended
    }
    for (const word of text.split(/\s+/)) if (word !== '') pids.push(Number(word));
  }
  return pids;
}

/**
 * The living processes at and below `roots` (each root only if that same
 * process, by start time when given, is still there), found through the
 * kernel's children lists: it reads only the tree, not every process on the
 * machine. Null where the kernel has no children lists (use descendantsOfAny).
 */
export function treeOf(roots: ReadonlyArray<{ pid: number; start?: string }>): ProcInfo[] | null {
  const found = new Map<number, ProcInfo>();
  const stack: number[] = [];
  for (const root of roots) {
    if (found.has(root.pid)) continue;
    const info = readProc(root.pid);
    if (info === null || (root.start !== undefined && info.start !== root.start)) continue;
    found.set(info.pid, info);
    stack.push(info.pid);
  }
  while (stack.length > 0) {
    const pid = stack.pop()!;
    const children = childPids(pid);
    if (children === null) {
      if (readProc(pid) !== null) return null; // alive, yet no list: the kernel has none
      continue;
    }
    for (const child of children) {
      if (found.has(child)) continue;
      const info = readProc(child);
      if (info === null) continue;
      found.set(child, info);
      stack.push(child);
    }
  }
  return [...found.values()];
}

/** True if the same process (pid and start time) is still alive. */
export function stillAlive(info: ProcInfo): boolean {
  const now = readProc(info.pid);
  return now !== null && now.start === info.start;
}

/**
 * Remembers every descendant ever seen, so that processes orphaned by their
 * parent's exit (re-parented to init) can still be found at shutdown. With
 * `findMarked` (the session marker's sweep, see marker.ts) it also finds the
 * ones that left before any walk saw them: a daemon that forked twice.
 * `root` leads its own process group.
 */
export class DescendantTracker {
  private readonly known = new Map<number, ProcInfo>();
  private readonly markerOnly = new Map<number, ProcInfo>();
  /** Group members only the marker found (orphans no walk reaches): named once they leave the group. */
  private readonly markedInGroup = new Set<number>();
  private swept = false;

  constructor(
    private readonly root: number,
    private readonly findMarked: (() => ProcInfo[] | null) | null = null,
  ) {}

  snapshot(): void {
    for (const info of descendantsOf(this.root)) this.known.set(info.pid, info);
    // Children of known descendants that were orphaned are found by walking from each of them too.
    for (const info of [...this.known.values()]) {
      if (!stillAlive(info)) continue;
      for (const more of descendantsOf(info.pid)) this.known.set(more.pid, more);
    }
  }

  /**
   * Add the marked processes that no walk has seen (each
   * costs a read of every same-user process's environ: milliseconds, so only
   * at shutdown, never on a timer).
   */
  sweep(): void {
    const marked = this.findMarked?.() ?? null;
    if (marked === null) return;
    this.swept = true;
    for (const info of marked) {
      if (info.pid === this.root) continue;
      const seen = this.known.get(info.pid);
      if (seen !== undefined && seen.start === info.start) continue;
      this.known.set(info.pid, info);
      // A group member is reached by the group's signals, unless it leaves the group (setsid) after
      // this sweep, on SIGTERM say: known, it is followed there like any descendant that left.
      if (info.pgid === this.root) this.markedInGroup.add(info.pid);
      else this.markerOnly.set(info.pid, info);
    }
  }

  /** What only the marker found (whether still alive or not); null if no sweep could run. */
  foundByMarker(): ProcInfo[] | null {
    return this.swept ? [...this.markerOnly.values()] : null;
  }

  /** Known descendants still alive outside the group `pgid`. */
  outsideGroup(pgid: number): ProcInfo[] {
    const out: ProcInfo[] = [];
    for (const info of this.known.values()) {
      const now = readProc(info.pid);
      if (now === null || now.start !== info.start || now.pgid === pgid) continue;
      out.push(now);
      if (this.markedInGroup.has(now.pid)) this.markerOnly.set(now.pid, now);
    }
    return out;
  }
}
