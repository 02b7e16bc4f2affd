// Flat memory on a big session: every view of a 200,000-call session (and of
// a crashed copy of it, which `sessions` reads through) keeps the peak RSS of
// the mcpguard process under 100 MiB, whether its stdout is a file (Node
// writes a file synchronously), a pipe, or /dev/null. VmHWM is read from the
// process's own /proc entry at its exit (hwm-preload.js).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statfsSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copySession, writeSession } from './gen-log.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'mcpguard.js');
const PRELOAD = fileURLToPath(new URL('./hwm-preload.js', import.meta.url));
const BOUND_KB = 100 * 1024;
const CALLS = 200_000;
const ID = 's_20261130T020000Z_00000000';
const CRASHED = 's_20261130T030000Z_crashed0';

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
  : free < 2 * 2 ** 30
    ? `only ${(free / 2 ** 30).toFixed(1)} GiB free in ${tmpdir()}: the logs need 1`
    : false;

const root = skip ? null : mkdtempSync(join(tmpdir(), 'mcpguard-memory-'));
const children = new Set();
after(() => {
  for (const child of children) child.kill('SIGKILL');
  if (root !== null) rmSync(root, { recursive: true, force: true });
});

let dir;
let unsealed; // a directory of its own: the copy holds the same call ids
let callId; // a call in the middle of the big log
before(
  async () => {
    if (skip) return;
    dir = join(root, 'records');
    mkdirSync(dir);
    const path = await writeSession(dir, ID, CALLS, { open: 3 });
    // An unsealed copy, cut before its session record and seal: `sessions` reads it through (its writer, this process, is alive: it shows as running).
    unsealed = join(root, 'unsealed');
    mkdirSync(unsealed);
    const copy = copySession(path, unsealed, 1, () => CRASHED)[0];
    const text = readFileSync(copy);
    let cut = text.length - 1;
    for (let n = 0; n < 2; n++) cut = text.lastIndexOf(10, cut - 1);
    truncateSync(copy, cut + 1);
    const middle = text.indexOf('"type":"call_end"', Math.floor(text.length / 2));
    callId = /"call_id":"(c_[0-9a-f]+)"/.exec(text.subarray(middle - 400, middle + 400).toString())[1];
  },
  { timeout: 180_000 },
);

/**
 * Run mcpguard with stdout to a file, a pipe (read and counted) or /dev/null;
 * resolves to its exit code, the bytes it wrote, stderr, wall time and peak RSS in kB.
 */
function measured(args, sink, where = dir) {
  const hwm = join(root, `hwm-${Math.random().toString(16).slice(2)}`);
  const file = join(root, `out-${Math.random().toString(16).slice(2)}`);
  const fd = sink === 'file' ? openSync(file, 'w') : sink === 'null' ? openSync('/dev/null', 'w') : 'pipe';
  const started = Date.now();
  const child = spawn(process.execPath, ['--import', PRELOAD, BIN, ...args, '--record-dir', where], {
    env: { ...process.env, MCPGUARD_TEST_HWM_FILE: hwm, TZ: 'UTC' },
    stdio: ['ignore', fd, 'pipe'],
  });
  if (typeof fd === 'number') closeSync(fd);
  children.add(child);
  let bytes = 0;
  let head = '';
  let stderr = '';
  child.stdout?.on('data', (c) => {
    bytes += c.length;
    if (head.length < 65536) head += c;
  });
  child.stderr.on('data', (c) => {
    stderr += c;
  });
  return new Promise((resolve) =>
    child.on('close', (code) => {
      children.delete(child);
      if (sink === 'file') {
        bytes = statSync(file).size;
        head = readFileSync(file, { encoding: 'utf8' }).slice(0, 65536);
        rmSync(file);
      }
      resolve({ code, bytes, head, stderr, ms: Date.now() - started, kb: existsSync(hwm) ? Number(readFileSync(hwm, 'utf8')) : null });
    }),
  );
}

const runs = [
  // [name, args, stdout, check, directory]
  [
    'activity > file',
    ['activity', ID],
    'file',
    (r) => {
      assert.ok(r.bytes > 80 * CALLS, `${r.bytes} bytes`);
      assert.equal(
        r.head
          .split('\n')
          .slice(0, 10)
          .filter((l) => /no_final_record/.test(l)).length,
        3,
      ); // newest first: the calls left open at the end
    },
  ],
  ['activity --json > file', ['activity', '--json', ID], 'file', (r) => assert.ok(r.bytes > 200 * CALLS, `${r.bytes} bytes`)],
  ['activity --json | pipe', ['activity', '--json', ID], 'pipe', (r) => assert.ok(r.bytes > 200 * CALLS, `${r.bytes} bytes`)],
  ['activity > /dev/null', ['activity', ID], 'null'],
  ['activity --failed > file', ['activity', '--failed', ID], 'file', (r) => assert.match(r.head, /\berror\b/)],
  [
    'activity --state error --tool search -n 50 --json',
    ['activity', '--state', 'error', '--tool', 'search', '-n', '50', '--json', ID],
    'pipe',
    (r) => {
      const rows = r.head
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.equal(rows.length, 50);
      assert.ok(rows.every((row) => row.state === 'error' && row.tool === 'search'));
    },
  ],
  [
    'activity -n 20 --json (unsealed copy)',
    ['activity', '-n', '20', '--json', CRASHED],
    'pipe',
    (r) => assert.equal(r.head.trim().split('\n').length, 20),
    'unsealed',
  ],
  ['sessions', ['sessions'], 'pipe', (r) => assert.match(r.head, new RegExp(`^${ID} .* 199997 +200 +yes$`, 'm'))],
  [
    'sessions (reads the unsealed log through)',
    ['sessions'],
    'pipe',
    (r) => assert.match(r.head, new RegExp(`^${CRASHED} .* running .* 200000 +200 +no$`, 'm')),
    'unsealed',
  ],
  ['sessions --json (unsealed)', ['sessions', '--json'], 'file', (r) => assert.equal(JSON.parse(r.head).calls, CALLS), 'unsealed'],
  ['logs SESSION > file', ['logs', ID], 'file', (r) => assert.match(r.head, /^==> session|^==> call/)],
  ['logs CALL', () => ['logs', callId], 'pipe'],
  ['show SESSION', ['show', ID], 'pipe', (r) => assert.match(r.head, /calls +199997/)],
  ['show CALL', () => ['show', callId], 'pipe', (r) => assert.match(r.head, new RegExp(callId))],
];

test(`every view of a ${CALLS.toLocaleString('en')}-call session keeps its peak RSS under 100 MiB`, { skip, timeout: 900_000 }, async (t) => {
  assert.ok(statSync(join(dir, `${ID}.jsonl`)).size > 200e6);
  const over = [];
  for (const [name, args, sink, check, where] of runs) {
    const r = await measured(typeof args === 'function' ? args() : args, sink, where === 'unsealed' ? unsealed : dir);
    t.diagnostic(`${name}: ${r.ms} ms, ${r.bytes} bytes out, peak RSS ${r.kb} kB`);
    assert.equal(r.code, 0, `${name}: ${r.stderr}`);
    assert.ok(r.kb !== null, `${name}: no VmHWM was read`);
    check?.(r);
    if (r.kb >= BOUND_KB) over.push(`${name}: peak RSS ${r.kb} kB`);
  }
  assert.deepEqual(over, [], `bound ${BOUND_KB} kB`);
});
