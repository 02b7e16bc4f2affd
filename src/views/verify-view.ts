/**
 * `mcpguard verify`: the verdict of verify.ts on every log, as a table (the
 * reason a chain breaks on a line of its own under its row) and a count.
 *
 * Exit codes: 0 every chain intact; 1 a chain does not verify (tampering, a
 * wrong or missing key, an unreadable file); 2 every chain is intact but some
 * log is unsealed or torn (a running session, a crash or a cut tail;
 * `--allow-unsealed` makes that 0).
 */
import { StreamingTable, type Column } from './format.js';
import { jsonLine } from '../mask/escape.js';
import { loadAuditKey } from '../records/key.js';
import type { CommandIO } from './view-kit.js';
import type { TableStyle } from './format.js';
import { isIntact, verifyDir, type VerifyResult } from './verify.js';

const COLUMNS: Column[] = [{ header: 'STATUS' }, { header: 'FILE', clip: 'middle', min: 24 }, { header: 'RECORDS' }];

export interface VerifyQuery {
  dir: string;
  configured: string;
  exists: boolean;
  json: boolean;
  keyFile: string | undefined;
  allowUnsealed: boolean;
  style: TableStyle;
}

export function verifyView(q: VerifyQuery, out: (text: string) => void, io: CommandIO): number {
  const key = q.keyFile === undefined ? undefined : loadAuditKey(q.keyFile, q.configured);
  const results = q.exists ? verifyDir(q.dir, key) : [];
  if (results.length === 0) io.stderr.write(`mcpguard verify: no session logs in '${q.dir}'\n`);
  const crashOnly = (r: VerifyResult): boolean => r.status === 'unsealed' || r.status === 'torn';
  if (q.json) for (const r of results) out(`${jsonLine(r)}\n`);
  else {
    const grid = new StreamingTable(COLUMNS, q.style);
    for (const r of results) {
      const detail = r.reason === null ? [] : [r.line === null ? r.reason : `line ${r.line} (seq ${r.line - 1}): ${r.reason}`];
      // `live` (a running session's intact log) and `pruned` (gone, its tombstone kept) are intact: lower case.
      out(
        grid.add([isIntact(r.status) ? r.status : r.status.toUpperCase(), r.file, String(r.records)], {
          colours: [r.status === 'ok' ? 'green' : isIntact(r.status) ? undefined : crashOnly(r) ? 'yellow' : 'red'],
          notes: detail,
        }),
      );
    }
    out(grid.end());
    const counts = new Map<string, number>();
    for (const r of results) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
    out(`${results.length} log${results.length === 1 ? '' : 's'}: ${[...counts].map(([s, n]) => `${n} ${s}`).join(', ') || 'none'}\n`);
  }
  if (results.some((r) => !isIntact(r.status) && !crashOnly(r))) return 1;
  if (results.some(crashOnly) && !q.allowUnsealed) return 2;
  return 0;
}
