// Large frames both ways through the real binary, many in flight, sizes that
// straddle the pooled-buffer threshold, written in odd slices, with a client
// that stops reading at times so answers queue behind a full pipe: every byte
// must arrive as sent. A joined frame's buffer is reused for a later frame
// once its write has completed; reusing it any earlier overwrites a frame
// still waiting to go out, which this test sees as a wrong sha or text.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { fixture, killStarted, runGuardUngated, tempDir } from '../helpers/run.js';
import { blobText } from '../fixtures/blob-echo.mjs';

after(killStarted);

const home = tempDir();
after(home.cleanup);

test('large frames in flight both ways arrive byte for byte while join buffers are reused', { timeout: 120_000 }, async () => {
  const { child, done } = runGuardUngated(['--', process.execPath, fixture('blob-echo.mjs')], {
    keepOpen: true,
    timeout: 110_000,
    env: { MCPGUARD_HOME: home.dir },
  });
  const waiting = new Map();
  let pending = [];
  let lines = 0;
  child.stdout.on('data', (chunk) => {
    let start = 0;
    for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
      pending.push(chunk.subarray(start, nl));
      const message = JSON.parse(Buffer.concat(pending).toString('utf8'));
      pending = [];
      start = nl + 1;
      lines++;
      waiting.get(message.id)?.(message);
      // Stop reading now and then, so mcpguard's writes to us queue.
      if (lines % 5 === 0) {
        child.stdout.pause();
        setTimeout(() => child.stdout.resume(), 30);
      }
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  const send = (id, method, params) =>
    new Promise((resolve) => {
      waiting.set(id, resolve);
      const line = Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
      // Odd slices: the frame is joined from many reads.
      for (let at = 0; at < line.length; at += 7919 + (id % 5) * 40000) child.stdin.write(line.subarray(at, at + 7919 + (id % 5) * 40000));
    });
  await send(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } });
  child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');

  const SIZES = [1000, 60_000, 70_000, 300_000, 1_100_000, 2_000_000, 65_536, 900_000];
  let next = 2;
  const one = async () => {
    const id = next++;
    const blob = blobText(SIZES[id % SIZES.length], id * 7);
    const size = SIZES[(id * 3) % SIZES.length];
    const answer = await send(id, 'tools/call', { name: 'echo', arguments: { blob, size, seed: id } });
    assert.equal(answer.error, undefined, JSON.stringify(answer.error));
    const text = answer.result.content[0].text;
    assert.equal(text.slice(0, 64), createHash('sha256').update(blob).digest('hex'), `request ${id} reached the server altered`);
    assert.ok(text.slice(65) === blobText(size, id), `answer ${id} reached the client altered`);
  };
  const worker = async () => {
    for (let i = 0; i < 6; i++) await one();
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  child.stdin.end();
  const { code } = await done;
  assert.equal(code, 0);
});
