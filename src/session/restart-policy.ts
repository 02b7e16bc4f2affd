/**
 * When a server that exited is started again, and after how long. Pure
 * arithmetic over the exit and the times of earlier restarts; the session
 * does the waiting and the spawning.
 */
/** The longest backoff between two restarts (--restart-delay may not exceed it). */
export const RESTART_DELAY_CAP_MS = 30000;

export type RestartMode = 'never' | 'on-failure' | 'always';

export interface RestartOptions {
  mode: RestartMode;
  /** Most restarts within `windowMs`. */
  maxRestarts: number;
  windowMs: number;
  /** The first backoff (before jitter), ms. */
  delayMs: number;
  /** How long a request that arrives while the server is down may wait for the next one, ms. */
  waitMs: number;
}

export type RestartDecision = { restart: true; delayMs: number; attempt: number } | { restart: false; why: 'not_enabled' | 'clean_exit' | 'limit' };

export class RestartPolicy {
  /** When each restart within the window was decided (ms since the epoch). */
  private readonly recent: number[] = [];
  /** Restarts over the whole session. */
  count = 0;

  constructor(
    readonly options: RestartOptions,
    private readonly random: () => number = Math.random,
  ) {}

  get enabled(): boolean {
    return this.options.mode !== 'never';
  }

  /**
   * A server exited while its client was still connected (the only case the
   * session asks about). `now` is when its exit was seen; `failed`: it failed
   * whatever it exited with (mcpguard stopped it after it closed a pipe).
   */
  decide(exit: { code: number | null; signal: string | null }, now = Date.now(), failed = false): RestartDecision {
    if (!this.enabled) return { restart: false, why: 'not_enabled' };
    if (this.options.mode === 'on-failure' && !failed && exit.code === 0 && exit.signal === null) return { restart: false, why: 'clean_exit' };
    while (this.recent.length > 0 && now - this.recent[0]! >= this.options.windowMs) this.recent.shift();
    if (this.recent.length >= this.options.maxRestarts) return { restart: false, why: 'limit' };
    const delayMs = backoff(this.options.delayMs, this.recent.length, this.random());
    this.recent.push(now);
    this.count++;
    return { restart: true, delayMs, attempt: this.count };
  }
}

/**
 * The wait before the restart that follows `earlier` restarts within the
 * window: the delay doubled that many times, capped, then "equal jitter"
 * (between half and all of it) so servers restarted together do not retry
 * in step. The floor grows with every doubling, which is what tests assert.
 */
export function backoff(delayMs: number, earlier: number, random: number): number {
  const full = Math.min(RESTART_DELAY_CAP_MS, delayMs * 2 ** Math.min(earlier, 30));
  return Math.round(full / 2 + (full / 2) * random);
}
