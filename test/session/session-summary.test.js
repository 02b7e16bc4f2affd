// The session summary at exit (--session-summary auto|human|json|off) on a
// real terminal and on a pipe, and the stderr mirror's notice when it first
// reaches its cap. A terminal is a real pseudo-terminal from util-linux `script`.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { BIN, PLANTED_ENV, fixture, frame, killStarted, runCommand, runGuard, sessionEnd, tempDir } from '../helpers/run.js';

after(killStarted);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const init = frame({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
});
const quote = (word) => `'${word.replace(/'/g, `'\\''`)}'`;

let hasScript = true;
try {
  execFileSync('script', ['-qec', 'true', '/dev/null'], { stdio: 'ignore', timeout: 5000 });
} catch {
  hasScript = false;
}

/**
 * mcpguard with its stderr on a pseudo-terminal (stdin from /dev/null, stdout
 * discarded): what the terminal showed, as text without carriage returns.
 * The server gets a planted secret as an argument: the summary quotes the command.
 */
async function onTerminal(args) {
  const server = ['python3', fixture('stdlib_server.py'), '--token', PLANTED_ENV.MCPGUARD_TEST_API_TOKEN];
  const command = [process.execPath, BIN, ...args, '--', ...server].map(quote).join(' ');
  const r = await runCommand('script', ['-qec', `${command} </dev/null >/dev/null`, '/dev/null'], { timeout: 20000 }).done;
  return { ...r, screen: r.stdout.toString('utf8').replace(/\r/g, '') };
}

describe('session summary', { skip: hasScript ? false : 'no util-linux script(1) for a pseudo-terminal' }, () => {
  test('on a terminal the default is a few readable lines, masked, that name the log and the show command', { timeout: 30000 }, async () => {
    const { dir, cleanup } = tempDir();
    try {
      const { code, screen } = await onTerminal(['--record-dir', dir]);
      assert.equal(code, 0, screen);
      const lines = screen.split('\n').filter((l) => l.startsWith('mcpguard: '));
      assert.ok(!screen.includes('{"mcpguard":"session_end"'), `a terminal got the JSON line:\n${screen}`);
      const first = /^mcpguard: session (s_\S+) ended after \S+$/.exec(lines[0] ?? '');
      assert.ok(first, `first line: ${screen}`);
      const id = first[1];
      // Masked before it is clipped in the middle: the secret's place shows, the secret does not (runCommand checks the screen).
      assert.match(lines[1], /^mcpguard: {3}command python3 \S*…?\S* --token \[REDACTED:MCPGUARD_TEST_API_TOKEN\]$/);
      assert.ok(
        lines.some((l) => /^mcpguard: {3}ended by client_eof; server exit code 0$/.test(l)),
        screen,
      );
      assert.ok(
        lines.some((l) => /^mcpguard: {3}calls 0; rejected 0$/.test(l)),
        screen,
      );
      assert.ok(
        lines.some((l) =>
          /^mcpguard: {3}stderr (\d+) B seen: 0 B during calls \(kept with each call\), \1 B outside calls, \d+ B of it kept as the session's tail/.test(l),
        ),
        screen,
      );
      assert.ok(
        lines.some((l) => /^mcpguard: {3}resources cpu \d+\.\d\ds user \+ \d+\.\d\ds sys, peak rss [\d.]+ (B|KiB|MiB)/.test(l)),
        screen,
      );
      assert.ok(lines.includes(`mcpguard:   log ${dir}/${id}.jsonl  (mcpguard show ${id})`), screen);
      assert.ok(lines.length <= 8 && lines.every((l) => l.length <= 160), `short lines:\n${screen}`);
    } finally {
      cleanup();
    }
  });

  test('on a terminal, --session-summary json (and its old spelling on) still prints the JSON line', { timeout: 30000 }, async () => {
    for (const mode of ['json', 'on']) {
      const { screen } = await onTerminal([`--session-summary=${mode}`]);
      const line = screen.split('\n').find((l) => l.startsWith('{"mcpguard":"session_end"'));
      assert.ok(line, `${mode}: ${screen}`);
      assert.equal(JSON.parse(line).end_reason, 'client_eof');
      assert.ok(!/mcpguard: session \S+ ended after/.test(screen), screen);
    }
  });

  test('--session-summary off prints no summary on a terminal', { timeout: 30000 }, async () => {
    const { screen } = await onTerminal(['--session-summary=off']);
    assert.ok(!screen.includes('session_end') && !/ended after/.test(screen), screen);
  });
});

test('on a pipe the default is the one JSON line; human gives the lines there too', { timeout: 30000 }, async () => {
  const auto = await runGuard(['--', 'python3', fixture('stdlib_server.py')], { input: init }).done;
  // Only the server's own lines (mirrored) and the one JSON line.
  const ours = auto.stderr.split('\n').filter((l) => !l.startsWith('server| ') && l !== '');
  assert.equal(ours.length, 1, auto.stderr);
  assert.ok(ours[0].startsWith('{"mcpguard":"session_end"'), auto.stderr);
  assert.equal(sessionEnd(auto.stderr).end_reason, 'client_eof');
  assert.ok(!/ended after/.test(auto.stderr));
  const human = await runGuard(['--session-summary=human', '--', 'python3', fixture('stdlib_server.py')], { input: init }).done;
  assert.equal(sessionEnd(human.stderr), null, human.stderr);
  assert.match(human.stderr, /^mcpguard: session s_\S+ ended after \S+\nmcpguard: {3}command python3 .*stdlib_server\.py$/m);
  assert.match(human.stderr, /^mcpguard: {3}calls 1 \(completed 1\); rejected 0$/m);
});

test('the stderr mirror says when it reaches its cap, at that moment, once', { timeout: 30000 }, async () => {
  // 1.1 MiB of stderr, then the server waits for its stdin: the session is still running.
  const run = runGuard(['--', 'python3', fixture('stderr-flood-wait.py')], { keepOpen: true });
  let err = '';
  run.child.stderr.on('data', (c) => {
    err += c;
  });
  const capLine =
    /^mcpguard: the mirror of the server's stderr reached its cap of 1048576 bytes \(--stderr-passthrough-bytes raises it\): from here on it is counted, not shown; the records still keep each call's and the session's stderr within their own budgets$/m;
  const end = Date.now() + 15000;
  while (!capLine.test(err) && Date.now() < end && run.child.exitCode === null) await sleep(50);
  assert.match(err, capLine, `no cap line while running: ${err.slice(-300)}`);
  assert.equal(run.child.exitCode, null, 'mcpguard is still running when the line appears');
  assert.ok(!err.includes('suppressed'), 'the end-of-session note comes only at the end');
  run.child.stdin.end();
  const r = await run.done;
  assert.equal(r.stderr.match(new RegExp(capLine.source, 'gm')).length, 1, 'said once');
  const suppressed = /^mcpguard: suppressed (\d+) bytes of child stderr \(passthrough budget 1048576 bytes\)$/m.exec(r.stderr);
  assert.ok(suppressed, 'the end-of-session note is kept');
  assert.ok(r.stderr.search(capLine) < suppressed.index);
  assert.equal(sessionEnd(r.stderr).stderr.suppressed_bytes, Number(suppressed[1]));
});

test('no cap line when the mirror stays under its cap', { timeout: 30000 }, async () => {
  const r = await runGuard(['--', 'python3', fixture('stderr-flood-wait.py')], { env: { FLOOD_BYTES: String(512 * 1024) } }).done;
  assert.ok(!r.stderr.includes('reached its cap') && !r.stderr.includes('mcpguard: suppressed'), r.stderr.slice(-300));
  assert.equal(sessionEnd(r.stderr).stderr.mirrored_bytes, 512 * 1024);
});
