// Stderr end to end, through the real binary and real children: drained,
// budgeted, attributed, marked, masked, and never able to stall the protocol.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, fixture, frame, killStarted, runGuard, runGuardUngated, sessionEnd, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const RECORDER = ['python3', fixture('recorder.py')];
const stderrCall = (id, args) => frame({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'stderr', arguments: args } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const vmHWM = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

describe('budgets and markers', () => {
  const budget = 1000;
  for (const [n, truncated] of [
    [budget - 1, false],
    [budget, false],
    [budget + 1, true],
  ]) {
    test(`a call writing ${n} bytes with a ${budget}-byte call budget`, { timeout: 30000 }, async () => {
      const r = await runGuardUngated([`--stderr-call-bytes=${budget}`, '--stderr-excerpt-bytes=4096', '--stderr-excerpt-on-error', '--', ...RECORDER], {
        input: stderrCall(1, { bytes: n, text: 'abcdefghij', is_error: true }),
      }).done;
      const [answer] = messages(r.stdout);
      const excerpt = answer.result._meta['io.mcpguard/stderr'];
      const lines = excerpt.split('\n');
      assert.equal(lines[0], '[captured stderr]');
      if (truncated) {
        assert.equal(lines[1], `[stderr truncated: kept last ${budget} of ${n} bytes]`);
        assert.equal(lines.slice(2).join('\n'), 'abcdefghij'.repeat(200).slice(0, n).slice(-budget));
      } else {
        assert.equal(lines.slice(1).join('\n'), 'abcdefghij'.repeat(200).slice(0, n));
      }
      // Nothing else in the answer changed.
      delete answer.result._meta;
      assert.deepEqual(answer.result, { content: [{ type: 'text', text: 'done' }], isError: true });
      assert.equal(sessionEnd(r.stderr).stderr.bytes_seen, n);
    });
  }

  test('one line longer than the budget, multibyte characters cut by the ring: the excerpt starts on a character', { timeout: 30000 }, async () => {
    const r = await runGuardUngated(['--stderr-call-bytes=1001', '--stderr-excerpt-on-error', '--', ...RECORDER], {
      input: stderrCall(1, { bytes: 5000, text: 'é€😀', writes: 7, rpc_error: true }),
    }).done;
    const [answer] = messages(r.stdout);
    assert.equal(answer.error.message, 'tool failed');
    const excerpt = answer.error.data._meta['io.mcpguard/stderr'];
    const body = excerpt.split('\n').slice(2).join('\n');
    // The ring kept 1001 bytes; the text starts at the first whole character, and the marker counts what is shown.
    const kept = Number(/^\[stderr truncated: kept last (\d+) of 5000 bytes\]$/.exec(excerpt.split('\n')[1])[1]);
    assert.ok(kept <= 1001 && kept >= 1001 - 3, `kept ${kept}`);
    assert.equal(Buffer.byteLength(body), kept);
    assert.ok(!body.includes('\ufffd') && body.length > 0, JSON.stringify(body.slice(0, 5)));
    assert.ok('é€😀'.repeat(2000).includes(body));
  });

  test('invalid UTF-8 is retained as bytes and decoded with replacement only when written out', { timeout: 30000 }, async () => {
    const r = await runGuard(['--', 'sh', '-c', "printf 'bad \\377\\376 bytes\\n' >&2"]).done;
    const s = sessionEnd(r.stderr);
    assert.equal(s.stderr.bytes_seen, 13);
    assert.equal(s.stderr.tail, '[captured stderr]\nbad \ufffd\ufffd bytes\n');
  });

  test('a successful call is forwarded byte for byte with --stderr-excerpt-on-error', { timeout: 30000 }, async () => {
    const r = await runGuardUngated(['--stderr-excerpt-on-error', '--', ...RECORDER], { input: stderrCall(1, { bytes: 100 }) }).done;
    assert.equal(r.stdout.toString(), '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}],"isError":false}}\n');
  });

  test('50 concurrent calls flooding stderr: the total retained never exceeds the process budget', { timeout: 60000 }, async () => {
    let input = '';
    for (let i = 1; i <= 50; i++) input += stderrCall(i, { bytes: 40000, writes: 4 });
    const r = await runGuardUngated(['--stderr-call-bytes=16384', '--stderr-process-bytes=65536', '--', ...RECORDER], { input }).done;
    const out = messages(r.stdout);
    assert.equal(out.length, 50);
    const s = sessionEnd(r.stderr);
    assert.equal(s.stderr.bytes_seen, 50 * 40000);
    assert.ok(s.stderr.bytes_retained <= 65536, `retained ${s.stderr.bytes_retained}`);
    assert.equal(s.stderr.truncated, true);
  });
});

describe('secrets', () => {
  test('a secret written across two separate writes is masked in everything kept or mirrored', { timeout: 30000 }, async () => {
    const secret = 'tok-9f8e7d6c5b4a3210';
    const r = await runGuardUngated(['--stderr-excerpt-on-error', '--', ...RECORDER], {
      env: { SERVICE_API_TOKEN: secret },
      input:
        stderrCall(1, { bytes: 60, text: `using ${secret} now `, writes: 4, pause_ms: 50, is_error: true }) +
        stderrCall(2, { bytes: 80, text: 'Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123\n', writes: 3, pause_ms: 50 }),
    }).done;
    const everything = r.stdout.toString() + r.stderr;
    assert.ok(!everything.includes(secret), everything);
    assert.ok(!everything.includes('abcdefghijklmnop'), everything);
    assert.match(everything, /\[REDACTED:SERVICE_API_TOKEN\]/);
    assert.ok(sessionEnd(r.stderr).stderr.redactions >= 2);
  });
});

describe('the drain never stops', () => {
  test('a 2 GiB stderr flood while the child keeps answering: flat memory, exact count', { timeout: 180000 }, async (t) => {
    const size = Number(process.env.MCPGUARD_FLOOD_BYTES ?? 2 ** 31);
    const { dir, cleanup } = tempDir();
    t.after(cleanup);
    const done = join(dir, 'flood-done');
    const flood = `(yes helper-diagnostic | head -c ${size} >&2; touch ${done}) & exec python3 ${fixture('recorder.py')}`;
    const g = runGuard(['--', 'sh', '-c', flood], { keepOpen: true, timeout: 170000 }); // 2 GiB at the masker's pace, on a loaded machine
    let answered = 0;
    g.child.stdout.on('data', (c) => {
      answered += c.toString().split('\n').length - 1;
    });
    let sent = 0;
    let hwm = 0;
    // Keep asking while the flood runs; every request must be answered.
    while (sent < 20) {
      g.child.stdin.write(frame({ jsonrpc: '2.0', id: ++sent, method: 'ping' }));
      await sleep(100);
      hwm = Math.max(hwm, vmHWM(g.child.pid));
    }
    // Keep the session open until the whole flood went through the pipe, still answering.
    while (!existsSync(done)) {
      g.child.stdin.write(frame({ jsonrpc: '2.0', id: ++sent, method: 'ping' }));
      await sleep(200);
      hwm = Math.max(hwm, vmHWM(g.child.pid));
    }
    g.child.stdin.end();
    const r = await g.done;
    const s = sessionEnd(r.stderr);
    assert.equal(answered, sent);
    assert.equal(s.stderr.bytes_seen, size, 'seen is exact');
    assert.ok(s.stderr.bytes_retained <= 262144);
    assert.ok(hwm < 200 * 1024 * 1024, `peak RSS ${hwm}`);
    t.diagnostic(`mcpguard peak RSS (VmHWM) during a ${size}-byte flood: ${(hwm / 1048576).toFixed(1)} MiB`);
  });

  for (const mode of ['never read', 'closed']) {
    test(`mcpguard's own stderr ${mode}: the child and the protocol go on`, { timeout: 60000 }, async () => {
      const flood = `head -c 20000000 /dev/zero >&2; exec python3 ${fixture('recorder.py')}`;
      const child = spawn(process.execPath, [BIN, '--', 'sh', '-c', flood], { stdio: ['pipe', 'pipe', 'pipe'] });
      if (mode === 'never read') child.stderr.pause();
      else child.stderr.destroy();
      let out = '';
      child.stdout.on('data', (c) => {
        out += c;
      });
      child.stdin.end(frame({ jsonrpc: '2.0', id: 1, method: 'ping' }) + frame({ jsonrpc: '2.0', id: 2, method: 'tools/list' }));
      const code = await new Promise((resolve) => child.on('close', resolve));
      assert.equal(code, 0);
      assert.deepEqual(
        messages(Buffer.from(out)).map((m) => m.id),
        [1, 2],
      );
    });
  }
});

describe('config file', () => {
  test('keys named after the options; the command line wins', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const config = join(dir, 'mcpguard.json');
      writeFileSync(config, JSON.stringify({ 'stderr-call-bytes': 100, 'stderr-excerpt-on-error': true, 'stderr-retain': 'head' }));
      const r = await runGuardUngated([`--config=${config}`, '--stderr-call-bytes=50', '--', ...RECORDER], {
        input: stderrCall(1, { bytes: 200, is_error: true }),
      }).done;
      const excerpt = messages(r.stdout)[0].result._meta['io.mcpguard/stderr'];
      assert.equal(excerpt.split('\n')[1], '[stderr truncated: kept first 50 of 200 bytes]');
    } finally {
      cleanup();
    }
  });

  for (const [content, message] of [
    [{ 'stderr-call-bytes': 'lots' }, /key "stderr-call-bytes" expects a byte count .*got 'lots'/],
    [{ 'no-such-option': 1 }, /unknown key "no-such-option"/],
    [{ 'stderr-retain': 'middle' }, /key "stderr-retain" expects one of tail, head, head\+tail, got 'middle'/],
    ['not json', /is not valid JSON/],
  ]) {
    test(`a bad config file is an error naming the key and value: ${JSON.stringify(content)}`, { timeout: 30000 }, async () => {
      const { dir, cleanup } = tempDir();
      try {
        const config = join(dir, 'c.json');
        writeFileSync(config, typeof content === 'string' ? content : JSON.stringify(content));
        const r = await runGuard([`--config=${config}`, '--', 'true']).done;
        assert.equal(r.code, 125);
        assert.match(r.stderr, message);
      } finally {
        cleanup();
      }
    });
  }

  test('a call budget above the process budget is refused', { timeout: 30000 }, async () => {
    const r = await runGuard(['--stderr-call-bytes=1MiB', '--stderr-process-bytes=64KiB', '--', 'true']).done;
    assert.equal(r.code, 125);
    assert.match(r.stderr, /--stderr-call-bytes \(1048576\) must not exceed --stderr-process-bytes \(65536\)/);
  });
});
