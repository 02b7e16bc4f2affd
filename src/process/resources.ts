/**
 * What the server's process tree cost: CPU time and peak resident memory of
 * the server and every descendant, read straight from procfs (Linux).
 *
 * Why not `pidusage`: on Linux it reads the same /proc/PID/stat, but spawns
 * `getconf` twice on first use, keeps a descriptor open per pid, does not walk
 * the tree and has no high-water mark; a direct read is cheaper (see
 * bench/resources.js) and needs no dependency.
 *
 * The figures, all lower bounds of what the tree really used:
 *
 * - sampled CPU: every process seen (pid + start time) counts with the
 *   utime/stime it had when last seen. Samples come every SAMPLE_MS and once
 *   when the session's end is decided, before the tree is shut down (that one
 *   also looks for processes carrying the session marker: a daemon that left
 *   the tree); CPU a process used after its last sample, and a process that
 *   lived and died between two samples, are missed.
 * - reaped CPU: what the kernel added to mcpguard's own cutime/cstime
 *   (/proc/self/stat) during the session: the server's whole CPU once it is
 *   reaped, including every descendant that some process of the tree waited
 *   for. An orphan re-parented to init is not in it (the sample is); neither
 *   are mcpguard's other children, except the ones it reaps too: the watchdog
 *   shell and --approve-cmd runs (milliseconds).
 * - `cpu_user_ms`/`cpu_system_ms` take the larger of the two, per figure.
 * - peak RSS: the larger of the highest sum of VmRSS over the tree at one
 *   sample, and the highest VmHWM (the kernel's high-water mark) of any one
 *   process seen. RSS counts shared pages once per process, as ps and top do.
 *
 * Elsewhere (macOS, the BSDs) there is no procfs: `method: 'unavailable'`, no
 * figures, and no cost.
 */
import { descendantsOfAny, readProc, readProcText, treeOf, type ProcInfo } from './proctree.js';

/** How often the tree is sampled (an unref'd timer: it never keeps mcpguard alive). */
export const SAMPLE_MS = 1000;

/**
 * Linux reports CPU times in USER_HZ ticks, 100 a second on every
 * architecture it still supports (the ABI fixes it; sysconf(_SC_CLK_TCK) says
 * the same). Reading it would mean spawning `getconf`.
 */
const MS_PER_TICK = 10;

/** The `resources` member of the session record. */
export interface ResourceFigures {
  /** `procfs`, or `unavailable` (no figures) where there is no /proc. */
  method: 'procfs' | 'unavailable';
  cpu_user_ms: number | null;
  cpu_system_ms: number | null;
  peak_rss_bytes: number | null;
  /** Samples taken (the periodic ones and the one at the end). */
  samples: number;
  /** Processes of the tree seen by at least one sample (the server included). */
  processes_seen: number;
  sampled_cpu_ms: { user: number; system: number } | null;
  reaped_cpu_ms: { user: number; system: number } | null;
  /** The process with the highest VmHWM. */
  peak_process: { pid: number; comm: string; rss_bytes: number } | null;
  /** Time mcpguard spent sampling, ms. */
  sampling_ms: number;
}

interface Seen {
  pid: number;
  start: string;
  comm: string;
  utime: number;
  stime: number;
  hwmBytes: number;
}

/** Samples one process tree from the server's spawn to its end. */
export class ResourceMeter {
  private readonly seen = new Map<string, Seen>();
  private timer: NodeJS.Timeout | null = null;
  private root: number | null = null;
  private reapedAtStart: { user: number; system: number } | null = null;
  private samples = 0;
  private peakTreeRss = 0;
  private costNs = 0n;
  private finished: ResourceFigures | null = null;
  /** Processes no longer alive: folded into these totals, so a server that forks all day costs no memory here. */
  private gone = { user: 0, system: 0, count: 0 };
  private peak: Seen | null = null;

  private readonly available: boolean;
  private readonly findMarked: (() => ProcInfo[] | null) | null;

  /**
   * `findMarked` finds the processes that carry the session marker (marker.ts):
   * the last sample adds them, so a daemon that left the tree before any
   * sample saw it still counts with what it used until then. It reads every
   * process's environ (milliseconds), so only once, never on the timer.
   */
  constructor(options: { available?: boolean; findMarked?: (() => ProcInfo[] | null) | null } = {}) {
    this.available = options.available ?? (process.platform === 'linux' && selfChildrenCpu() !== null);
    this.findMarked = options.findMarked ?? null;
  }

  /** Start sampling the tree under `pid` (the server, leader of its own group). */
  start(pid: number): void {
    if (!this.available || this.root !== null) return;
    this.root = pid;
    this.reapedAtStart = selfChildrenCpu();
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.timer.unref();
  }

  /** The last sample: when the session's end is decided, before the tree is shut down; it adds the marked processes. */
  lastSample(): void {
    this.sample(true);
  }

  /** One sample now. */
  sample(last = false): void {
    if (this.root === null || this.finished !== null) return;
    const t0 = process.hrtime.bigint();
    // Walking from each process seen before too finds an orphan that was re-parented away from the server.
    const roots = [{ pid: this.root }, ...[...this.seen.values()].map((s) => ({ pid: s.pid, start: s.start }))];
    if (last) for (const info of this.findMarked?.() ?? []) roots.push({ pid: info.pid, start: info.start });
    const tree = treeOf(roots) ?? this.scan(roots);
    let treeRss = 0;
    const alive = new Set<string>();
    for (const info of tree) {
      const memory = readMemory(info.pid);
      if (memory === null) continue; // gone since the scan
      treeRss += memory.rss;
      const key = `${info.pid}:${info.start}`;
      alive.add(key);
      const before = this.seen.get(key);
      this.seen.set(key, {
        pid: info.pid,
        start: info.start,
        comm: info.comm,
        utime: Math.max(info.utime ?? 0, before?.utime ?? 0),
        stime: Math.max(info.stime ?? 0, before?.stime ?? 0),
        hwmBytes: Math.max(memory.hwm, before?.hwmBytes ?? 0),
      });
    }
    // A process not found by this sample is gone: it keeps what it was last seen with.
    for (const [key, s] of this.seen) {
      if (alive.has(key)) continue;
      this.retire(s);
      this.seen.delete(key);
    }
    this.peakTreeRss = Math.max(this.peakTreeRss, treeRss);
    this.samples++;
    this.costNs += process.hrtime.bigint() - t0;
  }

  /** Without the kernel's children lists: one scan of every process in /proc (a few ms with a few hundred). */
  private scan(roots: ReadonlyArray<{ pid: number; start?: string }>): ProcInfo[] {
    const tree = descendantsOfAny(roots) ?? [];
    for (const root of roots) {
      if (tree.some((p) => p.pid === root.pid)) continue;
      const info = readProc(root.pid);
      if (info !== null && (root.start === undefined || info.start === root.start)) tree.push(info);
    }
    return tree;
  }

  private retire(s: Seen): void {
    this.gone.user += s.utime;
    this.gone.system += s.stime;
    this.gone.count++;
    if (this.peak === null || s.hwmBytes > this.peak.hwmBytes) this.peak = s;
  }

  /** Stop sampling and give the figures (call once the server has been reaped, so its CPU is in mcpguard's cutime). */
  finish(): ResourceFigures {
    if (this.finished !== null) return this.finished;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (!this.available || this.root === null) {
      this.finished = {
        method: 'unavailable',
        cpu_user_ms: null,
        cpu_system_ms: null,
        peak_rss_bytes: null,
        samples: 0,
        processes_seen: 0,
        sampled_cpu_ms: null,
        reaped_cpu_ms: null,
        peak_process: null,
        sampling_ms: 0,
      };
      return this.finished;
    }
    for (const s of this.seen.values()) this.retire(s);
    this.seen.clear();
    const { user, system, count } = this.gone;
    const peak = this.peak;
    const now = selfChildrenCpu();
    const start = this.reapedAtStart;
    const reaped = now === null || start === null ? null : { user: Math.max(0, now.user - start.user), system: Math.max(0, now.system - start.system) };
    const sampled = { user: user * MS_PER_TICK, system: system * MS_PER_TICK };
    this.finished = {
      method: 'procfs',
      cpu_user_ms: Math.max(sampled.user, reaped?.user ?? 0),
      cpu_system_ms: Math.max(sampled.system, reaped?.system ?? 0),
      peak_rss_bytes: Math.max(this.peakTreeRss, peak?.hwmBytes ?? 0),
      samples: this.samples,
      processes_seen: count,
      sampled_cpu_ms: sampled,
      reaped_cpu_ms: reaped,
      peak_process: peak === null ? null : { pid: peak.pid, comm: peak.comm, rss_bytes: peak.hwmBytes },
      sampling_ms: Math.round(Number(this.costNs) / 1e4) / 100,
    };
    return this.finished;
  }
}

/** VmRSS and VmHWM of a process in bytes (from kB in /proc/PID/status); null if it is gone or a zombie. */
export function readMemory(pid: number): { rss: number; hwm: number } | null {
  let text: string;
  try {
    text = readProcText(`/proc/${pid}/status`);
  } catch {
    return null;
  }
  const rss = /\nVmRSS:\s+(\d+) kB/.exec(text);
  const hwm = /\nVmHWM:\s+(\d+) kB/.exec(text);
  // A zombie (or a kernel thread) has no memory lines.
  if (rss === null) return null;
  return { rss: Number(rss[1]) * 1024, hwm: Number(hwm?.[1] ?? rss[1]) * 1024 };
}

/** CPU of mcpguard's reaped children so far, ms (cutime and cstime of /proc/self/stat); null without procfs. */
export function selfChildrenCpu(): { user: number; system: number } | null {
  let text: string;
  try {
    text = readProcText('/proc/self/stat');
  } catch {
    return null;
  }
  // Fields after the command's closing parenthesis: state is field 3, cutime 16, cstime 17.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const user = Number(fields[13]);
  const system = Number(fields[14]);
  return Number.isFinite(user) && Number.isFinite(system) ? { user: user * MS_PER_TICK, system: system * MS_PER_TICK } : null;
}
