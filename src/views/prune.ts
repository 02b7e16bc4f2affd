/**
 * Retention: remove whole session logs, oldest first, until the rules hold
 * (no log ended longer ago than --older-than, the logs take at most
 * --max-size), leaving a tombstone for each (tombstones.ts).
 *
 * What may go: a sealed log, and a crashed one (unsealed, and the mcpguard
 * that wrote it is gone: checked by pid and start time, records/live.ts).
 * Crashed logs go too because nothing else would ever remove them; their
 * tombstone says `crashed`. Never a running session's log, nor one whose
 * writer cannot be told alive or gone from here (`unknown`: another host's,
 * or an old log whose pid is in use): those are kept and counted.
 *
 * A log's age is from its end: the seal's time, else the session record's,
 * else (a crashed log) the file's last change. `--max-size` counts the
 * session logs (`*.jsonl`) only; when the logs that must stay are larger than
 * it, prune removes what it may and says by how much the rest is over.
 */
import { lstatSync, unlinkSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import type { LogRecord } from '../records/chain.js';
import { liveness, type Liveness } from '../records/live.js';
import { describe } from '../records/location.js';
import { listLogFiles, parseRecord, readLogEdges } from '../records/read.js';
import { formatBytes, type RetainRules } from './retain-rules.js';
import type { SideChain } from '../records/side-chain.js';
import { openTombstones, takePruneLock } from './tombstones.js';

/** One session log as prune sees it. */
export interface Candidate {
  file: string;
  name: string;
  sessionId: string;
  createdAt: string;
  bytes: number;
  state: 'sealed' | Liveness;
  /** When the session ended (ms), for --older-than. */
  endedMs: number;
  records: number | null;
  /** A sealed log's seal hash; for an unsealed one, the SHA-256 of its last complete line. */
  sealHash: string | null;
  lastLineSha256: string | null;
}

/** A candidate to remove and why. */
export interface Removal extends Candidate {
  reason: 'older-than' | 'max-size';
}

export interface PrunePlan {
  remove: Removal[];
  keep: Candidate[];
  /** Bytes of all session logs before, and after the removals. */
  totalBytes: number;
  afterBytes: number;
  /** Before listing: logs created after this are not part of the run's `kept` set. */
  listedAt: string;
}

/** A log that could not be read is not a candidate: it is kept (and counted in the size when it can be stat'ed). */
export function surveyLog(file: string): Candidate {
  const bytes = lstatSync(file).size;
  const edges = readLogEdges(file, 2, 2);
  const header = parseRecord(edges.head[0] ?? Buffer.alloc(0)) ?? undefined;
  const start = edges.head.map(parseRecord).find((r) => r?.type === 'session_start') ?? undefined;
  const lastLine = edges.tail.at(-1);
  const last = lastLine === undefined ? null : parseRecord(lastLine);
  const end = edges.tail.map(parseRecord).find((r) => r?.type === 'session_end') ?? undefined;
  const sealed = last?.type === 'seal' && !edges.torn;
  const endedMs = [last?.ts, end?.ended_at].map((t) => (typeof t === 'string' ? Date.parse(t) : NaN)).find(Number.isFinite) ?? lstatSync(file).mtimeMs;
  return {
    file,
    name: basename(file),
    sessionId: typeof header?.log_id === 'string' ? header.log_id : basename(file, '.jsonl'),
    createdAt: typeof header?.created_at === 'string' ? header.created_at : '',
    bytes,
    state: sealed ? 'sealed' : liveness(start, header),
    endedMs: sealed || !Number.isFinite(endedMs) ? endedMs : Math.max(endedMs, lstatSync(file).mtimeMs),
    records: sealed && typeof last?.records === 'number' ? last.records : typeof last?.seq === 'number' ? last.seq + 1 : null,
    sealHash: sealed && typeof last?.hash === 'string' ? last.hash : null,
    lastLineSha256: sealed || lastLine === undefined ? null : createHash('sha256').update(lastLine).update('\n').digest('hex'),
  };
}

/** Every session log of `dir`, one at a time (so a caller can yield between them); unreadable ones go to `skipped`. */
export function* survey(dir: string, skipped: (file: string, reason: string) => void = () => {}): Generator<Candidate> {
  for (const file of listLogFiles(dir)) {
    try {
      yield surveyLog(file);
    } catch (error) {
      skipped(file, describe(error));
    }
  }
}

/** Which logs go: with --older-than, every removable one that ended before the cutoff; then, oldest first, until the rest fit --max-size. */
export function planPrune(candidates: Candidate[], rules: RetainRules, now: number, listedAt: string): PrunePlan {
  const ordered = [...candidates].sort((a, b) => (a.createdAt === b.createdAt ? (a.name < b.name ? -1 : 1) : a.createdAt < b.createdAt ? -1 : 1));
  const removable = (c: Candidate): boolean => c.state === 'sealed' || c.state === 'crashed';
  const totalBytes = ordered.reduce((n, c) => n + c.bytes, 0);
  const remove: Removal[] = [];
  const gone = new Set<string>();
  let after = totalBytes;
  for (const c of ordered) {
    if (rules.olderThanMs !== null && removable(c) && now - c.endedMs > rules.olderThanMs) {
      remove.push({ ...c, reason: 'older-than' });
      gone.add(c.file);
      after -= c.bytes;
    }
  }
  for (const c of ordered) {
    if (rules.maxBytes === null || after <= rules.maxBytes) break;
    if (gone.has(c.file) || !removable(c)) continue;
    remove.push({ ...c, reason: 'max-size' });
    gone.add(c.file);
    after -= c.bytes;
  }
  return { remove, keep: ordered.filter((c) => !gone.has(c.file)), totalBytes, afterBytes: after, listedAt };
}

/** What a prune did. */
export interface PruneOutcome {
  removed: Removal[];
  /** Logs that were to go and did not, with why (changed since the survey, unlink failed). */
  failed: Array<{ removal: Removal; error: string }>;
}

/**
 * Carry out a plan under the directory's prune lock: for each log, check it
 * is still what the survey saw, write its tombstone, then unlink it; then the
 * run record. Throws (nothing removed) when the lock or the tombstone chain
 * cannot be had.
 */
export function applyPrune(dir: string, plan: PrunePlan, rules: RetainRules, key: Buffer | undefined, by: 'prune' | 'retain'): PruneOutcome {
  const release = takePruneLock(dir);
  if (typeof release === 'string') throw new Error(release);
  let chain: SideChain | null = null;
  const outcome: PruneOutcome = { removed: [], failed: [] };
  try {
    chain = openTombstones(dir, key);
    const rule = { older_than: rules.olderThan, max_size: rules.maxSize };
    for (const r of plan.remove) {
      let now: Candidate;
      try {
        now = surveyLog(r.file);
      } catch (error) {
        outcome.failed.push({ removal: r, error: describe(error) });
        continue;
      }
      // A crashed log that came back to life cannot be; a log that grew or changed state since the survey is left for the next run.
      if (now.state !== r.state || now.bytes !== r.bytes || now.sealHash !== r.sealHash) {
        outcome.failed.push({ removal: r, error: 'changed since it was listed; left for the next prune' });
        continue;
      }
      chain.append({
        type: 'pruned',
        session_id: r.sessionId,
        file: r.name,
        state: r.state,
        records: r.records,
        bytes: r.bytes,
        seal_hash: r.sealHash,
        last_line_sha256: r.lastLineSha256,
        created_at: r.createdAt || null,
        ended_at: new Date(r.endedMs).toISOString(),
        reason: r.reason,
        rule,
        by,
        pid: process.pid,
      });
      try {
        unlinkSync(r.file);
        outcome.removed.push(r);
      } catch (error) {
        chain.append({ type: 'prune_undone', session_id: r.sessionId, file: r.name, error: describe(error) });
        outcome.failed.push({ removal: r, error: describe(error) });
      }
    }
    const keptNames = [...plan.keep.map((c) => c.name), ...outcome.failed.map((f) => f.removal.name)];
    const kept = keptSet(
      keptNames.map((name) => ({ name, createdAt: createdOf(plan, name) })),
      plan.listedAt,
    );
    chain.append({
      type: 'prune_run',
      by,
      rule,
      listed_at: plan.listedAt,
      removed: outcome.removed.length,
      removed_bytes: outcome.removed.reduce((n, r) => n + r.bytes, 0),
      kept: kept.count,
      kept_sha256: kept.sha256,
    });
  } finally {
    chain?.close();
    release();
  }
  return outcome;
}

function createdOf(plan: PrunePlan, name: string): string {
  return [...plan.keep, ...plan.remove].find((c) => c.name === name)?.createdAt ?? '';
}

/**
 * The logs a prune run kept, as verify recomputes them: the file names of the
 * logs created before `listedAt` (a log made while the prune ran is not
 * counted on either side), sorted, and their SHA-256.
 */
export function keptSet(logs: Array<{ name: string; createdAt: string }>, listedAt: string): { count: number; sha256: string; names: string[] } {
  const names = logs
    .filter((l) => l.createdAt < listedAt)
    .map((l) => l.name)
    .sort();
  return { count: names.length, sha256: createHash('sha256').update(names.join('\n')).digest('hex'), names };
}

/** One line about a plan or its outcome, for people. */
export function summaryLine(plan: PrunePlan, rules: RetainRules, dryRun: boolean, removed: number, removedBytes: number): string {
  const verb = dryRun ? 'would remove' : 'removed';
  const staying = plan.keep.filter((c) => c.state === 'running').length;
  const unknown = plan.keep.filter((c) => c.state === 'unknown').length;
  let text = `${verb} ${removed} log${removed === 1 ? '' : 's'} (${formatBytes(removedBytes)}); ${formatBytes(plan.totalBytes - removedBytes)} of session logs ${dryRun ? 'would stay' : 'stay'}`;
  if (staying + unknown > 0) text += ` (kept: ${staying} running${unknown > 0 ? `, ${unknown} whose mcpguard cannot be told alive or gone` : ''})`;
  if (rules.maxBytes !== null && plan.afterBytes > rules.maxBytes) {
    text += `; still ${formatBytes(plan.afterBytes - rules.maxBytes)} over --max-size ${rules.maxSize!}: the rest may not be removed`;
  }
  return `${text}\n`;
}

export type { LogRecord };
