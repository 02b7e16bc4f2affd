// Per-call record cost (issue 5). Measured only when `mcpguard --help` offers
// --record-dir: sequential round trips through mcpguard with records into a
// scratch directory, with and without --fsync, against mcpguard with records
// off (when the help names an off switch) or else against the byte-copy relay.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { roundTrips } from './latency.js';
import { interleave, roundName } from './interleave.js';
import { benchHome } from './proc.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { COPY_RELAY, ECHO_SERVER, NODE, guarded, mcpguardHelp } from './variants.js';

export const PENDING = 'records: pending (issue 5)';

/** The option words that turn records off, if the help text names any. */
function offSwitch(help) {
  if (/--records\s+(?:on\|off|off\|on)/.test(help)) return ['--records', 'off'];
  if (/--no-records\b/.test(help)) return ['--no-records'];
  return null;
}

export async function recordsRows({ rounds, requests, warmup, warmupRounds = 1 }, progress) {
  const help = mcpguardHelp();
  if (!help.includes('--record-dir')) {
    return { lines: [line(PENDING, '`mcpguard --record-dir` not in --help yet', 'n/a', '', '')], notes: [] };
  }
  const server = [NODE, ECHO_SERVER];
  const off = offSwitch(help);
  const dir = mkdtempSync(join(benchHome, 'records-'));
  const withFsync = help.includes('--fsync');
  const variants = [
    off === null
      ? { name: 'base', label: 'byte-copy relay (no records switch-off in --help)', argv: [NODE, COPY_RELAY, ...server] }
      : { name: 'base', label: `mcpguard ${off.join(' ')}`, argv: guarded(server, off) },
    { name: 'records', label: 'mcpguard --record-dir', argv: guarded(server, ['--record-dir', dir]) },
    ...(withFsync ? [{ name: 'fsync', label: 'mcpguard --record-dir --fsync', argv: guarded(server, ['--record-dir', dir, '--fsync']) }] : []),
  ];
  try {
    const samples = await interleave(
      variants,
      rounds,
      async (v, r) => {
        progress(`records ${v.name} ${roundName(r, rounds)}`);
        const { micros } = await roundTrips(v.argv, requests, warmup);
        return micros.reduce((a, b) => a + b, 0) / micros.length;
      },
      { warmup: warmupRounds },
    );
    const row = `records: mean round trip (µs), ${requests} calls × ${rounds} rounds`;
    const lines = [line(row, variants[0].label, num(median(samples.base)), 'baseline')];
    for (const v of variants.slice(1)) {
      const extra = median(samples[v.name].map((m, i) => m - samples.base[i]));
      lines.push(
        line(row, v.label, num(median(samples[v.name])), `${ratioText(pairedRatio(samples[v.name], samples.base), 'baseline')}; +${num(extra)} µs/call`),
      );
    }
    return { lines, notes: [] };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
