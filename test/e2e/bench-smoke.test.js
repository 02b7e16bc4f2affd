// Smoke run of the benchmarks: `bench/run.js` runs end to end and prints its
// one table with the expected rows and numbers. It checks the shape of the
// output, never the targets: benchmarks are not tests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ARGS = ['bench/run.js', '--quick', '--rows=latency', '--rounds=2'];
const VARIANTS = ['direct (no relay)', 'byte-copy relay', 'mcpguard', 'SDK stdio relay'];

function runBench(ms, args = ARGS) {
  return new Promise((resolve, reject) => {
    // detached: the bench and everything it spawned form one group we can kill.
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      reject(new Error(`bench did not finish in ${ms} ms; stderr:\n${stderr}`));
    }, ms);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The table's data rows as objects. */
function tableRows(stdout) {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('| ') && !l.startsWith('| row '))
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim()),
    )
    .map(([row, variant, median, ratio, target]) => ({ row, variant, median, ratio, target }));
}

test('bench/run.js --quick --rows=latency prints the latency rows with numbers', { timeout: 120_000 }, async () => {
  const { code, stdout, stderr } = await runBench(110_000);
  assert.equal(code, 0, `bench exited ${code}; stderr:\n${stderr}`);
  assert.match(stdout, /^machine: \d+ cpus \(.*\).*node v\d+/m);
  assert.match(stdout, /^reproduce: node bench\/run\.js --quick --rows=latency --rounds=2/m);

  const rows = tableRows(stdout);
  const ROW_NAMES = {
    p50: 'latency p50 (µs), calls 501-800 × 2 rounds',
    p99: 'latency p99 (µs), calls 501-800 × 2 rounds',
    cold: 'latency p50 (µs) of calls 1-100 (JIT cold), × 2 rounds',
  };
  for (const [stat, name] of Object.entries(ROW_NAMES)) {
    const mine = rows.filter((r) => r.row === name);
    // The four variants of issue 7, in order; mcpguard variants with other options may sit between them.
    assert.deepEqual(
      mine.map((r) => r.variant).filter((v) => VARIANTS.includes(v)),
      VARIANTS,
      `${stat} rows:\n${stdout}`,
    );
    for (const r of mine) {
      const value = Number(r.median);
      assert.ok(Number.isFinite(value) && value > 0, `${stat} ${r.variant}: median '${r.median}' is not a positive number`);
      if (r.variant === 'byte-copy relay') assert.equal(r.ratio, 'baseline');
      else assert.match(r.ratio, /^\d+\.\d\d× copy/, `${stat} ${r.variant}: ratio '${r.ratio}'`);
    }
  }
  assert.equal(rows.length, rows.filter((r) => r.row.startsWith('latency ')).length, 'only latency rows were asked for');
  // mcpguard's p50 line carries both comparisons and its target.
  const guardP50 = rows.find((r) => r.row === ROW_NAMES.p50 && r.variant === 'mcpguard');
  assert.match(guardP50.ratio, /^\d+\.\d\d× copy; \d+\.\d\d× sdk$/);
  assert.match(guardP50.target, /^≤ 1\.25× copy and < 1× sdk [✓✗]$/);
});

test('bench/run.js --quick --rows=consent prints the approval-card rows, quiet and flooding', { timeout: 60_000 }, async () => {
  const { code, stdout, stderr } = await runBench(55_000, ['bench/run.js', '--quick', '--rows=consent', '--rounds=1']);
  assert.equal(code, 0, `bench exited ${code}; stderr:\n${stderr}`);
  const rows = tableRows(stdout);
  const card = (q) => `consent: tools/call written → approval card at the client, ${q} (µs), calls 21-70 × 1 rounds`;
  for (const name of [card('p50'), card('p99'), "consent: accept written → the call's result, p50 (µs), same calls"]) {
    const mine = rows.filter((r) => r.row === name);
    assert.deepEqual(
      mine.map((r) => r.variant),
      ['server quiet', 'server flooding its stderr'],
      `${name}:\n${stdout}`,
    );
    for (const r of mine) assert.ok(Number(r.median) > 0, `${name} ${r.variant}: median '${r.median}' is not a positive number`);
    assert.equal(mine[0].ratio, 'baseline');
    assert.match(mine[1].ratio, /^\d+\.\d\d× quiet$/);
  }
  assert.equal(rows.length, 6, 'only the consent rows were asked for');
  // The flood really ran: the flooding server reports what it wrote.
  const rate = /the flooding server wrote its stderr at ([\d.]+) MiB\/s/.exec(stdout);
  assert.ok(rate !== null && Number(rate[1]) > 0, `no flood rate in:\n${stdout}`);
});
