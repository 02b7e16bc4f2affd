// stderr flood: a child writes BYTES of `helper-diagnostic\n` to stderr and
// exits. The drain rate is BYTES over the time the flooder took from its first
// write to its last write returning (blocking writes: the reader's pace),
// which leaves process start-up out. The baseline is `cat > /dev/null` reading the
// same flood through a shell pipe; a bare Node reader (`on('data')`, counting
// only, on the same socketpair mcpguard gets) is the floor for any Node
// supervisor, for both rate and memory. mcpguard runs twice: with its own stderr
// on /dev/null, and with its stderr on a pipe this process drains (it mirrors
// the child's stderr there). Its peak RSS is the largest VmHWM sampled from
// /proc/<pid>/status every 20 ms. While the flood runs, the client pings the
// child through mcpguard every 50 ms: requests must keep being answered.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { benchHome, exited, launch } from './proc.js';
import { interleave, roundName } from './interleave.js';
import { Peer } from './rpc.js';
import { sampleMemory } from './rss.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { NODE, STDERR_FLOOD, STDERR_READER, guarded } from './variants.js';

const MiB = 2 ** 20;
let reports = 0;

/** A fresh report path for the flooder, and a reader for it (MiB/s). */
function drainReport() {
  const path = join(benchHome, `flood-${reports++}.json`);
  return {
    path,
    mibps() {
      const { bytes, seconds } = JSON.parse(readFileSync(path, 'utf8'));
      rmSync(path, { force: true });
      return bytes / MiB / seconds;
    },
  };
}

async function catBaseline(bytes) {
  const report = drainReport();
  const child = launch(['/bin/sh', '-c', '"$0" "$1" "$2" "$3" 2>&1 >/dev/null | cat >/dev/null', NODE, STDERR_FLOOD, String(bytes), report.path], {
    stdio: 'ignore',
  });
  const { code } = await exited(child);
  if (code !== 0) throw new Error(`flood | cat exited with ${code}`);
  return { mibps: report.mibps() };
}

async function nodeReader(bytes) {
  const report = drainReport();
  const child = launch([NODE, STDERR_READER, NODE, STDERR_FLOOD, String(bytes), report.path], { stdio: 'ignore' });
  const memory = sampleMemory(child.pid, 20);
  const { code } = await exited(child);
  const { peakHwmKiB } = memory.stop();
  if (code !== 0) throw new Error(`stderr-reader exited with ${code}`);
  return { mibps: report.mibps(), peakMiB: peakHwmKiB / 1024 };
}

async function throughGuard(bytes, sink, bin = null) {
  const report = drainReport();
  const server = [NODE, STDERR_FLOOD, String(bytes), report.path];
  const child = launch(bin === null ? guarded(server) : [NODE, bin, '--', ...server], { stdio: ['pipe', 'pipe', sink === 'pipe' ? 'pipe' : 'ignore'] });
  const memory = sampleMemory(child.pid, 20);
  let mirrored = 0;
  child.stderr?.on('data', (chunk) => (mirrored += chunk.length));
  const peer = new Peer(child);
  const pings = { sent: 0, answered: 0, micros: [] };
  const pinger = setInterval(() => {
    pings.sent++;
    const start = process.hrtime.bigint();
    peer.call('ping', {}).then(
      ({ at }) => {
        pings.answered++;
        pings.micros.push(Number(at - start) / 1000);
      },
      () => {}, // still in flight when the child exited: mcpguard answers it with an error
    );
  }, 50);
  const { code } = await exited(child);
  clearInterval(pinger);
  const { peakHwmKiB } = memory.stop();
  if (code !== 0) throw new Error(`mcpguard (flood) exited with ${code}`);
  return { mibps: report.mibps(), peakMiB: peakHwmKiB / 1024, mirrored, pings };
}

export async function floodRows({ rounds, bytes }, progress) {
  const variants = [
    { name: 'cat', label: '`cat > /dev/null`', run: () => catBaseline(bytes) },
    { name: 'node', label: "bare Node reader (on('data'), counts)", run: () => nodeReader(bytes) },
    { name: 'null', label: 'mcpguard, its stderr → /dev/null', run: () => throughGuard(bytes, 'null') },
    { name: 'pipe', label: 'mcpguard, its stderr → drained pipe', run: () => throughGuard(bytes, 'pipe') },
  ];
  // MCPGUARD_BENCH_BEFORE=path/to/bin/mcpguard.js: another build (the one before a change), its stderr → /dev/null, in the same rounds.
  const before = process.env.MCPGUARD_BENCH_BEFORE;
  if (before !== undefined) variants.push({ name: 'before', label: 'mcpguard before, its stderr → /dev/null', run: () => throughGuard(bytes, 'null', before) });
  const samples = await interleave(
    variants,
    rounds,
    (v, r) => {
      progress(`flood ${v.name} ${roundName(r, rounds)}`);
      return v.run();
    },
    { warmup: 0 },
  );
  const rate = (name) => samples[name].map((s) => s.mibps);
  const size = bytes >= 2 ** 30 ? `${num(bytes / 2 ** 30)} GiB` : `${num(bytes / MiB)} MiB`;
  const row = `stderr flood drain (MiB/s), ${size} × ${rounds} rounds`;
  const rssRow = `mcpguard peak RSS under the ${size} flood (MiB)`;
  const lines = [line(row, variants[0].label, num(median(rate('cat'))), 'baseline')];
  for (const v of variants.slice(1)) {
    const vsCat = ratioText(pairedRatio(rate(v.name), rate('cat')), 'cat');
    lines.push(
      line(row, v.label, num(median(rate(v.name))), v.name === 'node' ? vsCat : `${vsCat}; ${ratioText(pairedRatio(rate(v.name), rate('node')), 'node')}`),
    );
  }
  for (const v of variants.slice(1)) {
    const peaks = samples[v.name].map((s) => s.peakMiB);
    const worst = Math.max(...peaks);
    if (v.name === 'node') lines.push(line(rssRow.replace('mcpguard peak', 'peak'), v.label, num(median(peaks)), `max ${num(worst)}`, '(reference)'));
    else lines.push(line(rssRow, v.label, num(median(peaks)), `max ${num(worst)}`, '≤ 80 MiB (max of rounds)', worst <= 80));
  }
  const notes = [];
  for (const v of variants.slice(2)) {
    const all = samples[v.name];
    const sent = all.reduce((n, s) => n + s.pings.sent, 0);
    const answered = all.reduce((n, s) => n + s.pings.answered, 0);
    const micros = all.flatMap((s) => s.pings.micros);
    notes.push(`flood, ${v.label}: ${answered}/${sent} pings answered during the flood (median ${num(median(micros) / 1000)} ms round trip)`);
  }
  const mirrored = samples.pipe.map((s) => s.mirrored);
  notes.push(
    `flood, mcpguard → drained pipe: mirrored ${num(median(mirrored) / MiB)} of ${num(bytes / MiB)} MiB to its stderr (median of rounds; the rest was dropped, not queued)`,
  );
  return { lines, notes };
}
