/**
 * The filters of `sessions` and `activity`: each option a predicate, all of
 * them ANDed. A new filter is one more entry in a list (sessionFilters,
 * callFilters); values are checked up front, and a bad one is a GuardError
 * naming the option and the value (exit 125).
 */
import { GuardError } from '../base/errors.js';
import type { ActivityRow } from './activity.js';
import type { SessionRow } from './views.js';
import { parseWhen } from './when.js';
import { CALL_STATES } from '../mcp/call.js';

export type Predicate<T> = (item: T) => boolean;

/**
 * The call states `--failed` lists: the server's error answers (`error`) and
 * tool errors, refusals by mcpguard or the gate, timeouts, and calls whose
 * fate is unknown because the server went away with them in flight.
 */
export const FAILED_STATES: ReadonlySet<string> = new Set([
  'error',
  'tool_error',
  'rejected',
  'denied',
  'timed_out_after_dispatch',
  'unknown_after_dispatch',
  'no_final_record',
]);

export { CALL_STATES };

/**
 * A session failed: its server exited non-zero or had to be killed, or could
 * not start, or a call failed, or its mcpguard crashed (liveness `crashed`: it
 * is gone and never sealed the log; a session whose fate cannot be told from
 * here, `unknown`, is not counted).
 */
export function sessionFailed(row: SessionRow): boolean {
  return failedBecause(row).length > 0;
}

/**
 * Why a session counts as failed, in words, one reason each (empty: it did
 * not fail). `sessions --failed` prints them under the row: a row that is red
 * for a failed call and a row that is red for its exit look alike otherwise,
 * and without colour nothing says why a row is listed at all.
 */
export function failedBecause(row: SessionRow): string[] {
  const why: string[] = [];
  if (row.spawn_failed === true) why.push('server did not start');
  if (row.exit_code !== null && row.exit_code !== 0) why.push(`server exited ${row.exit_code}`);
  if (row.forced_kill === true) why.push('server killed (SIGKILL)');
  const calls = row.failed_calls ?? 0;
  if (calls > 0) why.push(`${calls} failed call${calls === 1 ? '' : 's'}`);
  if (row.liveness === 'crashed') why.push('mcpguard crashed');
  return why;
}

/** A glob (`*`, `?`, `[...]`) as an anchored RegExp; everything else matches itself. */
export function globToRegExp(glob: string): RegExp {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[') {
      const close = glob.indexOf(']', i + 2);
      if (close === -1) source += '\\[';
      else {
        const body = glob.slice(i + 1, close).replace(/\\/g, '\\\\');
        source += `[${body.startsWith('!') ? `^${body.slice(1)}` : body}]`;
        i = close;
      }
    } else source += c.replace(/[.+^${}()|\\\]]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}

/** The filter options the views take, as parsed. */
export interface FilterValues {
  since?: string;
  until?: string;
  name?: string;
  failed?: boolean;
  state?: string;
  tool?: string;
}

function timeBound(values: FilterValues, utc: boolean, now: number): { since: number | null; until: number | null } {
  const since = values.since === undefined ? null : parseWhen(values.since, '--since', utc, now);
  const until = values.until === undefined ? null : parseWhen(values.until, '--until', utc, now);
  if (since !== null && until !== null && since > until) throw new GuardError('bad_option', `--since '${values.since}' is after --until '${values.until}'`);
  return { since, until };
}

function within(iso: string | null, since: number | null, until: number | null): boolean {
  if (since === null && until === null) return true;
  const t = iso === null ? NaN : Date.parse(iso);
  if (!Number.isFinite(t)) return false;
  return (since === null || t >= since) && (until === null || t <= until);
}

/** The predicates of `sessions`: --since/--until (its start), --name GLOB, --failed. */
export function sessionFilters(values: FilterValues, utc: boolean, now = Date.now()): Array<Predicate<SessionRow>> {
  const { since, until } = timeBound(values, utc, now);
  const filters: Array<Predicate<SessionRow>> = [];
  if (since !== null || until !== null) filters.push((r) => within(r.started_at, since, until));
  if (values.name !== undefined) {
    if (values.name === '') throw new GuardError('bad_option', "--name expects a name or a glob (e.g. 'files*'), got ''");
    const glob = globToRegExp(values.name);
    filters.push((r) => glob.test(r.name));
  }
  if (values.failed === true) filters.push(sessionFailed);
  return filters;
}

/** The predicates of `activity`: --since/--until (when the call was first recorded), --state S[,S...], --tool GLOB, --failed. */
export function callFilters(values: FilterValues, utc: boolean, now = Date.now()): Array<Predicate<ActivityRow>> {
  const { since, until } = timeBound(values, utc, now);
  const filters: Array<Predicate<ActivityRow>> = [];
  if (since !== null || until !== null) filters.push((r) => within(r.time, since, until));
  if (values.state !== undefined) {
    const states = values.state.split(',').map((s) => s.trim());
    const unknown = states.find((s) => !CALL_STATES.includes(s));
    if (unknown !== undefined)
      throw new GuardError('bad_option', `--state expects one or more of ${CALL_STATES.join(', ')} (comma-separated), got '${values.state}'`);
    filters.push((r) => r.kind === 'call' && states.includes(r.state));
  }
  if (values.tool !== undefined) {
    if (values.tool === '') throw new GuardError('bad_option', "--tool expects a tool name or a glob (e.g. 'read_*'), got ''");
    const glob = globToRegExp(values.tool);
    filters.push((r) => r.kind === 'call' && r.tool !== null && glob.test(r.tool));
  }
  // A declined era probe keeps its state (error) for --state, but is not a failure.
  if (values.failed === true) filters.push((r) => r.kind === 'call' && FAILED_STATES.has(r.state) && r.probe_declined !== true);
  return filters;
}

/** True when `item` passes every predicate. */
export function passes<T>(item: T, filters: ReadonlyArray<Predicate<T>>): boolean {
  for (const f of filters) if (!f(item)) return false;
  return true;
}
