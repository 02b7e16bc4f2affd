// Views that scale: on a generated record directory of about 1 GB, `sessions`
// reads each log's ends, `activity` and `show` stream, and the peak RSS of
// the mcpguard process (VmHWM from its /proc entry, read at its exit) stays
// under a generous bound.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statfsSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copySession, rechain, writeSession } from './gen-log.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'mcpguard.js');
const PRELOAD = fileURLToPath(new URL('./hwm-preload.js', import.meta.url));
const BOUND_KB = 100 * 1024;
const COPIES = 40; // of a ~25 MB log of 20,000 calls

const free = (() => {
  try {
    const s = statfsSync(tmpdir());
    return s.bavail * s.bsize;
  } catch {
    return 0;
  }
})();
const skip = !existsSync('/proc/self/status')
  ? 'no /proc: VmHWM cannot be read here'
  : free < 4 * 2 ** 30
    ? `only ${(free / 2 ** 30).toFixed(1)} GiB free in ${tmpdir()}: the 1 GB record directory needs 4`
    : false;

const root = skip ? null : mkdtempSync(join(tmpdir(), 'mcpguard-scale-'));
const children = new Set();
after(() => {
  for (const child of children) child.kill('SIGKILL');
  if (root !== null) rmSync(root, { recursive: true, force: true });
});

let dir;
let newest;
before(
  async () => {
    if (skip) return;
    dir = join(root, 'records');
    const path = await writeSession(dir, 's_20261130T010000Z_00000000', 20_000);
    const files = copySession(path, dir, COPIES, (i) => `s_20261130T02${String(i).padStart(2, '0')}00Z_${String(i).padStart(8, '0')}`);
    newest = files.at(-1);
    // One crashed session: a copy cut before its session record and seal, which `sessions` must read through.
    const crashed = copySession(path, dir, 1, () => 's_20261130T000000Z_crashed0')[0];
    const text = readFileSync(crashed);
    let cut = text.length - 1;
    for (let n = 0; n < 2; n++) cut = text.lastIndexOf(10, cut - 1);
    truncateSync(crashed, cut + 1);
  },
  { timeout: 120_000 },
);

/** Run mcpguard (stdout to /dev/null unless `keep`); resolves to its exit code, stdout, stderr, wall time and peak RSS in kB. */
function measured(args, keep = false) {
  const hwm = join(root, `hwm-${Math.random().toString(16).slice(2)}`);
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', PRELOAD, BIN, ...args], {
    env: { ...process.env, MCPGUARD_TEST_HWM_FILE: hwm },
    stdio: ['ignore', keep ? 'pipe' : openSync('/dev/null', 'w'), 'pipe'],
  });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c) => {
    stdout += c;
  });
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  return new Promise((resolve) =>
    child.on('close', (code) => {
      children.delete(child);
      resolve({ code, stdout, stderr, ms: Date.now() - started, kb: existsSync(hwm) ? Number(readFileSync(hwm, 'utf8')) : null });
    }),
  );
}

test('views of a ~1 GB record directory keep their peak RSS under 100 MiB', { skip, timeout: 600_000 }, async (t) => {
  let bytes = 0;
  for (const name of ['s_20261130T010000Z_00000000', 's_20261130T000000Z_crashed0']) bytes += statSync(join(dir, `${name}.jsonl`)).size;
  bytes += (COPIES - 1) * statSync(newest).size;
  assert.ok(bytes > 0.9e9, `the directory holds ${bytes} bytes`);
  const runs = [
    ['sessions', ['sessions', '--record-dir', dir], true],
    ['sessions --json', ['sessions', '--json', '--record-dir', dir], true],
    ['activity (newest)', ['activity', '--record-dir', dir]],
    ['activity --json (crashed)', ['activity', '--json', '--record-dir', dir, 's_20261130T000000Z_crashed0']],
    ['show SESSION', ['show', '--record-dir', dir, 's_20261130T0239'], true],
    ['show CALL (scans every log)', ['show', '--record-dir', dir, 'c_0']],
  ];
  for (const [name, args, keep] of runs) {
    const r = await measured(args, keep);
    t.diagnostic(`${name}: ${r.ms} ms, peak RSS ${r.kb} kB`);
    if (name.startsWith('show CALL'))
      assert.match(r.stderr, /'c_0' matches many calls/); // every copy holds the same call ids
    else assert.equal(r.code, 0, `${name}: ${r.stderr}`);
    assert.ok(r.kb !== null, `${name}: no VmHWM was read`);
    assert.ok(r.kb < BOUND_KB, `${name}: peak RSS ${r.kb} kB, bound ${BOUND_KB} kB`);
    if (name === 'sessions') {
      const rows = r.stdout.trimEnd().split('\n').slice(1);
      assert.equal(rows.length, COPIES + 2);
      // Newest first.
      assert.match(rows.at(-1), /^s_20261130T000000Z_crashed0 .* 20000 +20 +no$/); // counted by reading it through
      assert.match(rows[0], /^s_20261130T023900Z_00000039 .* stdin_eof +0 +- +20000 +20 +yes$/);
    }
    if (name === 'show SESSION') assert.match(r.stdout, /^ {2}calls +20000: completed \d+, error \d+$/m);
  }
});

test('prune of the ~1 GB record directory (dry run, then down to 500 MiB), then verify, keep their peak RSS under 100 MiB', {
  skip,
  timeout: 600_000,
}, async (t) => {
  const logs = () => readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
  const bytes = () => logs().reduce((n, f) => n + statSync(join(dir, f)).size, 0);
  const before = logs().length;
  const runs = [
    ['prune --dry-run --max-size 500M', ['prune', '--dry-run', '--max-size', '500M', '--record-dir', dir, '--json']],
    ['prune --max-size 500M', ['prune', '--max-size', '500M', '--record-dir', dir, '--json']],
    ['verify (after prune)', ['verify', '--json', '--record-dir', dir]],
  ];
  for (const [name, args] of runs) {
    // The copies' chains were broken by renaming them; mended, verify reads each log to its end.
    if (name.startsWith('verify')) for (const f of logs()) rechain(join(dir, f));
    const r = await measured(args, true);
    t.diagnostic(`${name}: ${r.ms} ms, peak RSS ${r.kb} kB`);
    assert.equal(r.code, 0, `${name}: ${r.stderr}`);
    assert.ok(r.kb !== null, `${name}: no VmHWM was read`);
    assert.ok(r.kb < BOUND_KB, `${name}: peak RSS ${r.kb} kB, bound ${BOUND_KB} kB`);
    const out = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    if (name.startsWith('prune --dry-run')) {
      assert.equal(logs().length, before, 'a dry run removes nothing');
      assert.ok(out.filter((o) => o.action === 'would_remove').length > 10);
    } else if (name.startsWith('prune')) {
      const removed = out.filter((o) => o.action === 'removed');
      assert.equal(logs().length, before - removed.length);
      assert.ok(bytes() <= 500 * 2 ** 20, `${bytes()} bytes left`);
      // Oldest first: the logs left are the newest ones.
      assert.ok(removed.every((o) => logs().every((f) => f > `${o.session_id}.jsonl` || f.includes('crashed0'))));
      assert.ok(logs().includes('s_20261130T000000Z_crashed0.jsonl'), 'the log of a session whose writer (this test) is alive stays');
    } else {
      assert.equal(out.filter((o) => o.status === 'pruned').length, before - logs().length);
      assert.ok(
        out.every((o) => ['ok', 'live', 'pruned'].includes(o.status)),
        r.stdout.slice(0, 2000),
      );
    }
  }
});
