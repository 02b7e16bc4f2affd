// The relay keeps V8's young generation at its first size (process/reclaim.ts):
// what it allocates per message dies young, and a young generation grown to
// 16 MiB semi-spaces would only hold resident memory while the session idles.
// Seen from outside through a probe preloaded into mcpguard (heap-probe.mjs).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, fixture, frame, killStarted, runCommand, tempDir } from '../helpers/run.js';

after(killStarted);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("a relay's young generation stays at its first size over 3,000 calls", { timeout: 60000 }, async () => {
  const { dir, cleanup } = tempDir();
  const out = join(dir, 'heap.json');
  const g = runCommand(
    process.execPath,
    ['--import', fixture('heap-probe.mjs'), BIN, '--validate-args=off', `--record-dir=${dir}`, '--', 'python3', fixture('recorder.py')],
    { keepOpen: true, env: { HEAP_PROBE_OUT: out }, timeout: 60000 },
  );
  try {
    let answers = 0;
    let waiting = null;
    g.child.stdout.on('data', (c) => {
      answers += c.toString().split('\n').length - 1;
      if (waiting !== null && answers >= waiting.n) waiting.resolve();
    });
    const call = (id) =>
      new Promise((resolve) => {
        waiting = { n: id, resolve };
        g.child.stdin.write(frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'record', arguments: { v: 'x'.repeat(200) } } }));
      });
    const newSpace = async () => {
      rmSync(out, { force: true });
      g.child.kill('SIGUSR2');
      while (!existsSync(out)) await sleep(10);
      await sleep(20); // the probe's one write
      return JSON.parse(readFileSync(out, 'utf8')).new_space.size;
    };
    await call(1);
    const first = await newSpace();
    for (let id = 2; id <= 3000; id++) await call(id);
    const later = await newSpace();
    // V8 doubles the young generation as collections find survivors: without the setting it reads 8 MiB here.
    assert.equal(later, first, `the young generation grew from ${first} to ${later} bytes`);
    assert.ok(later <= 4 * 2 ** 20, `young generation of ${later} bytes`);
    g.child.stdin.end();
    await g.done;
  } finally {
    cleanup();
  }
});
