// Helpers for the real-peer tests (test/eras): the wire tap's logs, the
// record directory's verdict, and cleanup of server copies the SDK started.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, runGuard } from './run.js';

export const TEE = fixture('tee.mjs');
export const V2_SERVER = fixture('v2-server.mjs');

/**
 * What each process behind the tap saw, in the order the processes started:
 * [{ file, c2s: Buffer, s2c: Buffer }] (every chunk of a direction, concatenated).
 */
export function wireOf(wireDir) {
  if (!existsSync(wireDir)) return [];
  return readdirSync(wireDir)
    .filter((name) => name.endsWith('.jsonl'))
    .sort()
    .map((name) => {
      const chunks = { c2s: [], s2c: [] };
      for (const line of readFileSync(join(wireDir, name), 'utf8').split('\n')) {
        if (line === '') continue;
        const { dir, b64 } = JSON.parse(line);
        chunks[dir].push(Buffer.from(b64, 'base64'));
      }
      return { file: name, c2s: Buffer.concat(chunks.c2s), s2c: Buffer.concat(chunks.s2c) };
    });
}

/** The JSON messages of one direction of a tapped process. */
export function messagesOf(bytes) {
  return bytes
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
}

/**
 * Assert two taps saw the same bytes, process by process and direction by
 * direction; on a difference, name the process, the direction and the first
 * line that differs.
 */
export function assertSameWire(guarded, direct) {
  assert.equal(guarded.length, direct.length, `processes behind the tap: ${guarded.length} through mcpguard, ${direct.length} direct`);
  direct.forEach((want, i) => {
    for (const dir of ['c2s', 's2c']) {
      if (guarded[i][dir].equals(want[dir])) continue;
      const a = guarded[i][dir].toString('utf8').split('\n');
      const b = want[dir].toString('utf8').split('\n');
      const at = a.findIndex((line, n) => line !== b[n]);
      assert.fail(
        `process ${i + 1}, ${dir === 'c2s' ? 'client → server' : 'server → client'}, line ${at + 1} differs:\n  through mcpguard: ${a[at]}\n  direct:           ${b[at]}`,
      );
    }
  });
}

/** `mcpguard verify --json` over `dir`, and every record of every session log there (logs in the order their sessions began). */
export async function recordsOf(dir) {
  const { code, stdout, stderr } = await runGuard(['verify', '--record-dir', dir, '--json']).done;
  const rows = stdout
    .toString('utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
  // Session logs only: the side chains verify shows too (pins/decisions.log, written whenever a session pins) count in `code`.
  const results = rows.filter((r) => r.file.endsWith('.jsonl'));
  const logs = results.map((r) => ({
    file: r.file,
    status: r.status,
    records: readFileSync(r.file, 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line)),
  }));
  // File names order sessions by the second they began only; the header has milliseconds.
  logs.sort((a, b) => (a.records[0]?.created_at < b.records[0]?.created_at ? -1 : 1));
  return { code, stderr, results, logs };
}

/** Assert every log in `dir` verifies (and that there are `count` of them); returns the logs. */
export async function assertAllVerify(dir, count) {
  const verdict = await recordsOf(dir);
  const shown = JSON.stringify(verdict.results, null, 1);
  assert.equal(verdict.results.length, count, `session logs in ${dir}: ${shown}`);
  assert.deepEqual(
    verdict.results.map((r) => r.status),
    verdict.results.map(() => 'ok'),
    shown,
  );
  assert.equal(verdict.code, 0, `mcpguard verify exits 0: ${shown} ${verdict.stderr}`);
  return verdict.logs;
}

/**
 * SIGKILL every copy of the v2 fixture server that wrote its pid into
 * `pidDir` and still runs (checked by its command line, so a reused pid is
 * left alone); returns the pids that were still running.
 */
export function killServers(pidDir) {
  const alive = [];
  if (!existsSync(pidDir)) return alive;
  for (const name of readdirSync(pidDir)) {
    const pid = Number(name);
    if (!isFixtureServer(pid)) continue;
    alive.push(pid);
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
  return alive;
}

/** True while `pid` is a running (not zombie) v2 fixture server (without /proc: while `pid` runs at all). */
export function isFixtureServer(pid) {
  if (!existsSync('/proc/self/stat')) {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
  try {
    if (/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))) return false;
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('v2-server.mjs');
  } catch {
    return false;
  }
}
