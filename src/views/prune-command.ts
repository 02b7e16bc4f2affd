/**
 * `mcpguard prune [--older-than AGE] [--max-size SIZE] [--dry-run] [--json]
 * [--record-dir DIR] [--audit-key-file FILE]`, and the relay's `--retain`,
 * which runs the same prune in the background of a starting session.
 *
 * Exit codes: 0 done (also when nothing had to go, or the logs that must
 * stay are over --max-size: it says so); 1 a log could not be removed, the
 * tombstone chain cannot be extended, or another prune is running; 125 bad
 * options.
 */
import { statSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { EXIT_USAGE, GuardError } from '../base/errors.js';
import type { CommandIO } from './commands.js';
import { printable, table } from './format.js';
import { Clock } from './when.js';
import { loadAuditKey } from '../records/key.js';
import { describe, recordDirFor, resolveRecordDir } from '../records/location.js';
import { applyPrune, planPrune, summaryLine, survey, type Candidate, type PrunePlan, type Removal } from './prune.js';
import { AGE_EXAMPLE, SIZE_EXAMPLE, formatBytes, parseAge, parseSize, parseRetain, type RetainRules } from './retain-rules.js';

const OPTIONS = {
  'older-than': { type: 'string' },
  'max-size': { type: 'string' },
  'dry-run': { type: 'boolean' },
  'record-dir': { type: 'string' },
  json: { type: 'boolean' },
  'audit-key-file': { type: 'string' },
  utc: { type: 'boolean' },
} as const;

/** Run `mcpguard prune` with its arguments; resolves to the exit code. */
export async function runPruneCommand(argv: string[], io: CommandIO): Promise<number> {
  const fail = (message: string, code: number): number => {
    io.stderr.write(`mcpguard prune: ${message}\n`);
    return code;
  };
  let values: {
    'older-than'?: string;
    'max-size'?: string;
    'dry-run'?: boolean;
    'record-dir'?: string;
    json?: boolean;
    'audit-key-file'?: string;
    utc?: boolean;
  };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }));
  } catch (error) {
    const message = (error as Error).message;
    const option = /'(-[^' ]+)/.exec(message)?.[1] ?? '';
    if (/^Unknown option/.test(message)) return fail(`unknown option '${option}'`, EXIT_USAGE);
    if (/argument missing/.test(message)) return fail(`${option} expects a value, got nothing`, EXIT_USAGE);
    return fail(message.replace(/\. To specify a positional argument.*$/s, ''), EXIT_USAGE);
  }
  if (positionals.length > 0) return fail(`unexpected argument '${printable(positionals[0]!)}'`, EXIT_USAGE);
  const rules: RetainRules = { olderThanMs: null, maxBytes: null, olderThan: null, maxSize: null };
  if (values['older-than'] !== undefined) {
    const ms = parseAge(values['older-than']);
    if (ms === null) return fail(`--older-than expects ${AGE_EXAMPLE}, got '${printable(values['older-than'])}'`, EXIT_USAGE);
    Object.assign(rules, { olderThanMs: ms, olderThan: values['older-than'] });
  }
  if (values['max-size'] !== undefined) {
    const bytes = parseSize(values['max-size']);
    if (bytes === null) return fail(`--max-size expects ${SIZE_EXAMPLE}, got '${printable(values['max-size'])}'`, EXIT_USAGE);
    Object.assign(rules, { maxBytes: bytes, maxSize: values['max-size'] });
  }
  if (rules.olderThanMs === null && rules.maxBytes === null) return fail('says what to remove with --older-than AGE, --max-size SIZE, or both', EXIT_USAGE);
  if (values['record-dir'] === '') return fail("--record-dir expects a directory, got ''", EXIT_USAGE);
  if (values['audit-key-file'] === '') return fail("--audit-key-file expects a key file, got ''", EXIT_USAGE);
  const configured = resolveRecordDir(values['record-dir']);
  let dir: string;
  let key: Buffer | undefined;
  try {
    dir = recordDirFor(configured);
    key = values['audit-key-file'] === undefined ? undefined : loadAuditKey(values['audit-key-file'], configured);
  } catch (error) {
    return fail((error as Error).message, error instanceof GuardError ? error.exitCode : EXIT_USAGE);
  }
  if (!isDir(dir)) {
    if (values['record-dir'] !== undefined && dir === configured)
      return fail(
        `--record-dir expects a directory, got '${printable(values['record-dir'])}' (${exists(dir) ? 'not a directory' : 'does not exist'})`,
        EXIT_USAGE,
      );
    io.stderr.write(`mcpguard prune: no records in '${dir}': nothing to remove\n`);
    return 0;
  }

  const listedAt = new Date().toISOString();
  const candidates: Candidate[] = [];
  for (const c of survey(dir, (file, reason) => io.stderr.write(`mcpguard prune: ${file}: kept, cannot be read: ${reason}\n`))) candidates.push(c);
  const plan = planPrune(candidates, rules, Date.now(), listedAt);
  const dryRun = values['dry-run'] === true;
  let removed: Removal[] = plan.remove;
  let failed: Array<{ removal: Removal; error: string }> = [];
  // Even with nothing to remove, a prune records what it kept: verify finds a log deleted by hand since.
  if (!dryRun) {
    try {
      ({ removed, failed } = applyPrune(dir, plan, rules, key, 'prune'));
    } catch (error) {
      return fail(`nothing removed: ${describe(error)}`, 1);
    }
  }
  const removedBytes = removed.reduce((n, r) => n + r.bytes, 0);
  if (values.json === true) {
    for (const r of removed) io.stdout.write(`${JSON.stringify(removalJson(r, dryRun ? 'would_remove' : 'removed'))}\n`);
    for (const f of failed) io.stdout.write(`${JSON.stringify({ ...removalJson(f.removal, 'kept'), error: f.error })}\n`);
    io.stdout.write(`${JSON.stringify(summaryJson(plan, dryRun, removed.length, removedBytes))}\n`);
  } else {
    if (removed.length + failed.length > 0) {
      // Local time with the zone in the header, as the other views (--utc: UTC); --json keeps ISO UTC.
      const clock = new Clock(values.utc === true);
      const ended = (ms: number): string => clock.date(new Date(ms).toISOString());
      io.stdout.write(
        table(
          ['ACTION', 'SESSION', 'STATE', `ENDED ${clock.zone}`, 'SIZE', 'WHY'],
          [
            ...removed.map((r) => [dryRun ? 'would remove' : 'removed', r.sessionId, r.state, ended(r.endedMs), formatBytes(r.bytes), why(r, rules)]),
            ...failed.map((f) => ['kept', f.removal.sessionId, f.removal.state, ended(f.removal.endedMs), formatBytes(f.removal.bytes), f.error]),
          ],
        ),
      );
    }
    io.stdout.write(summaryLine(plan, rules, dryRun, removed.length, removedBytes));
  }
  for (const f of failed) io.stderr.write(`mcpguard prune: ${f.removal.file}: not removed: ${f.error}\n`);
  return failed.some((f) => !f.error.startsWith('changed since')) ? 1 : 0;
}

function why(r: Removal, rules: RetainRules): string {
  return r.reason === 'older-than' ? `ended more than ${rules.olderThan!} ago` : `over --max-size ${rules.maxSize!}`;
}

function removalJson(r: Removal, action: string): Record<string, unknown> {
  return {
    action,
    session_id: r.sessionId,
    file: r.file,
    state: r.state,
    created_at: r.createdAt || null,
    ended_at: new Date(r.endedMs).toISOString(),
    bytes: r.bytes,
    records: r.records,
    reason: r.reason,
  };
}

function summaryJson(plan: PrunePlan, dryRun: boolean, removed: number, removedBytes: number): Record<string, unknown> {
  return {
    summary: true,
    dry_run: dryRun,
    removed,
    removed_bytes: removedBytes,
    bytes_before: plan.totalBytes,
    bytes_after: plan.totalBytes - removedBytes,
    kept: plan.keep.length,
    kept_running: plan.keep.filter((c) => c.state === 'running').length,
    kept_unknown: plan.keep.filter((c) => c.state === 'unknown').length,
  };
}

/**
 * The relay's `--retain`: prune `dir` while the session runs, one log per
 * turn of the event loop, so the server's start and the relay are not held
 * up; anything that goes wrong is one line on stderr, never the session's
 * failure. The session's own log is running, so it always stays.
 */
export async function pruneOnStart(dir: string, retain: string, key: Buffer | undefined, warn: (line: string) => void): Promise<void> {
  try {
    const rules = parseRetain(retain);
    if (typeof rules === 'string') return; // checked with the options; cannot happen
    await turn();
    const listedAt = new Date().toISOString();
    const candidates: Candidate[] = [];
    for (const c of survey(dir)) {
      candidates.push(c);
      await turn();
    }
    const full = planPrune(candidates, rules, Date.now(), listedAt);
    if (full.remove.length === 0) return;
    // The removals run in one go: at most START_BATCH of them per session start, the rest at the next.
    const plan = { ...full, remove: full.remove.slice(0, START_BATCH), keep: [...full.keep, ...full.remove.slice(START_BATCH)] };
    const { failed } = applyPrune(dir, plan, rules, key, 'retain');
    for (const f of failed) if (!f.error.startsWith('changed since')) warn(`--retain: ${f.removal.file}: not removed: ${f.error}`);
  } catch (error) {
    warn(`--retain: nothing pruned: ${describe(error)}`);
  }
}

const START_BATCH = 200;

function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function isDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
