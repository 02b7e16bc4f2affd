// Per-record cost of SessionLog.append, with and without fsync, as a ratio to
// a plain fs.writeSync of the same bytes to an O_APPEND descriptor (the floor:
// one write per record is what any audit log pays).
//   npm run build && node bench/records.js [records] [fsync-records]
import { closeSync, constants, fsyncSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SessionLog, newCallId } from '../dist/records/store.js';

const N = Number(process.argv[2] ?? 20000);
const N_FSYNC = Number(process.argv[3] ?? 500);
const ROUNDS = 5;
const KEY = Buffer.from('bench-key-bench-key-bench-key-32');
const root = join(fileURLToPath(new URL('..', import.meta.url)), '.bench-tmp', `records-${process.pid}`);
mkdirSync(root, { recursive: true });
let fileNo = 0;
let recordBytes = 0;

// What the core appends for every call: its final record.
const body = (i) => ({
  call_id: newCallId(),
  session_id: 's_bench',
  request_id: i,
  method: 'tools/call',
  tool: 'echo',
  state: 'completed',
  stderr_bytes_seen: 1234,
  stderr_bytes_retained: 1234,
  stderr_truncated: false,
  exit_status: null,
  stream_end: null,
  started_at: '2026-11-29T11:22:33.000Z',
  ended_at: '2026-11-29T11:22:33.004Z',
});

// Microseconds per record for SessionLog.append; also returns the lines it wrote.
function timeLog(count, fsync, key) {
  const bodies = Array.from({ length: count }, (_, i) => body(i));
  const log = SessionLog.create({ dir: root, fsync, key }, `s_bench_${fileNo++}`);
  const start = process.hrtime.bigint();
  for (const b of bodies) log.append('call_end', b);
  const us = Number(process.hrtime.bigint() - start) / 1000 / count;
  log.seal();
  const lines = readFileSync(log.path, 'utf8')
    .split('\n')
    .slice(1, count + 1)
    .map((l) => Buffer.from(`${l}\n`));
  return { us, lines };
}

// Microseconds per record for writeSync of the same bytes, optionally fsynced.
function timeBaseline(lines, fsync) {
  const fd = openSync(join(root, `base_${fileNo++}.jsonl`), constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o600);
  const start = process.hrtime.bigint();
  for (const line of lines) {
    writeSync(fd, line);
    if (fsync) fsyncSync(fd);
  }
  const us = Number(process.hrtime.bigint() - start) / 1000 / lines.length;
  closeSync(fd);
  return us;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Rounds alternate the log and its baselines, and ratios are taken per round,
// so a machine that gets busier halfway skews both sides alike.
function measure(count, fsync, key) {
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const run = timeLog(count, fsync, key);
    recordBytes = run.lines.reduce((sum, line) => sum + line.length, 0) / run.lines.length;
    rounds.push({ log: run.us, plain: timeBaseline(run.lines, false), synced: fsync ? timeBaseline(run.lines, true) : NaN });
  }
  const m = (f) => median(rounds.map(f));
  return {
    log: m((r) => r.log),
    plain: m((r) => r.plain),
    synced: m((r) => r.synced),
    logVsPlain: m((r) => r.log / r.plain),
    syncedVsPlain: m((r) => r.synced / r.plain),
    logVsSynced: m((r) => r.log / r.synced),
  };
}

try {
  timeLog(2000, false); // warm up the JIT
  const plain = measure(N, false);
  const hmac = measure(N, false, KEY);
  const synced = measure(N_FSYNC, true);
  const rows = [
    ['writeSync (baseline)', N, plain.plain, 1, ''],
    ['append sha256', N, plain.log, plain.logVsPlain, ''],
    ['append hmac-sha256', N, hmac.log, hmac.logVsPlain, ''],
    ['writeSync + fsync', N_FSYNC, synced.synced, synced.syncedVsPlain, '1.00'],
    ['append sha256 --fsync', N_FSYNC, synced.log, synced.logVsPlain, synced.logVsSynced.toFixed(2)],
  ];
  const header = ['case', 'records', 'us/record', 'x writeSync', 'x writeSync+fsync'];
  const cells = [header, ...rows.map(([name, n, us, ratio, vsSync]) => [name, String(n), us.toFixed(2), ratio.toFixed(2), vsSync])];
  const widths = header.map((_, i) => Math.max(...cells.map((row) => row[i].length)));
  for (const row of cells) console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
  console.log(`(medians of ${ROUNDS} interleaved rounds, ratios taken per round; ${Math.round(recordBytes)} bytes per record)`);
} finally {
  rmSync(root, { recursive: true, force: true });
}
