// Hostile or odd options, through the real binary: every refusal names the
// option and the value, exits with mcpguard's own status, and starts nothing
// (the "server" in these tests would leave a marker file if it ran).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, frame, killStarted, readLines, runCommand, runGuard, sessionEnd, tempDir } from '../helpers/run.js';
import { messages } from '../helpers/stdout-check.js';

after(killStarted);

const { dir, cleanup } = tempDir('mcpguard-faults-options-');
after(cleanup);

let markers = 0;
/** A command that creates a fresh marker file if it ever runs. */
function markerCommand() {
  const marker = join(dir, `started-${++markers}`);
  return { marker, command: ['sh', '-c', `touch '${marker}'`] };
}

function file(name, content, mode) {
  const path = join(dir, name);
  writeFileSync(path, content);
  if (mode !== undefined) chmodSync(path, mode);
  return path;
}

/** Exactly one line on stderr: no stack trace, no second message. */
function oneLine(stderr) {
  assert.equal(stderr.split('\n').filter(Boolean).length, 1, `one line expected, got: ${stderr}`);
  assert.doesNotMatch(stderr, /\n\s+at |TypeError|node:/);
  return stderr.trimEnd();
}

describe('files that decide what is allowed', () => {
  test('a policy file with a duplicate key ("deny" then "allow") is refused at start, naming the file, the key and where; nothing starts', {
    timeout: 20000,
  }, async () => {
    const policy = file('dup-policy.json', '{"default": "allow", "rules": [\n  {"tool": "exec", "decision": "deny", "decision": "allow"}\n]}');
    const { marker, command } = markerCommand();
    const r = await runGuard([`--policy=${policy}`, '--', ...command], { timeout: 15000 }).done;
    assert.equal(r.code, 125);
    assert.equal(oneLine(r.stderr), `mcpguard: --policy '${policy}': duplicate key "decision" at line 2, column 40; a key may appear only once`);
    assert.equal(existsSync(marker), false);
  });

  test('a --config file with a duplicate key (a "deny" rule made "allow" inside its policy) is refused at start; nothing starts', {
    timeout: 20000,
  }, async () => {
    const config = file('dup-config.json', '{"policy": {"rules": [\n  {"tool": "exec", "decision": "deny", "decision": "allow"}]}}');
    const { marker, command } = markerCommand();
    const r = await runGuard(['--config', config, '--', ...command], { timeout: 15000 }).done;
    assert.equal(r.code, 125);
    assert.equal(oneLine(r.stderr), `mcpguard: --config '${config}': duplicate key "decision" at line 2, column 40; a key may appear only once`);
    assert.equal(existsSync(marker), false);
  });
});

describe('prototype names are no options', () => {
  test('--toString python3 -c pass: an unknown option, not one that eats "python3"', { timeout: 20000 }, async () => {
    const r = await runGuard(['--toString', 'python3', '-c', 'pass']).done;
    assert.equal(r.code, 125);
    assert.match(oneLine(r.stderr), /^mcpguard: unknown option --toString \(see mcpguard --help\)$/);
  });

  for (const option of ['--toString=x', '--constructor=1', '--__proto__=1', '--hasOwnProperty']) {
    test(`${option}: refused, the server never starts`, { timeout: 20000 }, async () => {
      const { marker, command } = markerCommand();
      const r = await runGuard([option, ...command]).done;
      assert.equal(r.code, 125, r.stderr);
      assert.equal(oneLine(r.stderr), `mcpguard: unknown option ${option.replace(/=.*/, '')} (see mcpguard --help)`);
      assert.equal(existsSync(marker), false, 'the server was started');
    });
  }

  test('check --constructor=1: refused the same way', { timeout: 20000 }, async () => {
    const { marker, command } = markerCommand();
    const r = await runGuard(['check', '--constructor=1', '--', ...command]).done;
    assert.equal(r.code, 2);
    assert.equal(oneLine(r.stderr), 'mcpguard check: unknown option --constructor (see mcpguard check --help)');
    assert.equal(existsSync(marker), false);
  });

  for (const [name, text, key] of [
    ['constructor.json', '{"constructor": 1}', 'constructor'],
    ['proto.json', '{"__proto__": {"grace": 1}}', '__proto__'],
  ]) {
    test(`config ${text}: an unknown key, the server never starts`, { timeout: 20000 }, async () => {
      const config = file(name, text);
      const { marker, command } = markerCommand();
      const r = await runGuard([`--config=${config}`, '--', ...command]).done;
      assert.equal(r.code, 125, r.stderr);
      assert.equal(oneLine(r.stderr), `mcpguard: --config '${config}': unknown key "${key}"`);
      assert.equal(existsSync(marker), false);
    });
  }
});

describe('durations Node cannot wait for', () => {
  for (const option of ['--call-timeout', '--grace', '--drain-ms']) {
    test(`${option} 2147483648: refused naming the value and the limit (Node would fire it after 1 ms)`, { timeout: 20000 }, async () => {
      const { marker, command } = markerCommand();
      const r = await runGuard([option, '2147483648', '--', ...command]).done;
      assert.equal(r.code, 125, r.stderr);
      assert.equal(
        oneLine(r.stderr),
        `mcpguard: ${option} expects at most 2147483647 ms (about 24.8 days, the longest a Node timer can wait), got '2147483648'`,
      );
      assert.equal(existsSync(marker), false);
    });
  }

  test('the largest accepted --call-timeout does not time a request out', { timeout: 20000 }, async () => {
    const r = await runGuard(['--call-timeout', '2147483647', '--', 'python3', fixture('stdlib_server.py')], {
      input: frame({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    }).done;
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(messages(r.stdout), [{ jsonrpc: '2.0', id: 1, result: {} }]);
  });

  test('check --timeout 2147483648: refused the same way', { timeout: 20000 }, async () => {
    const r = await runGuard(['check', '--timeout', '2147483648', '--', 'true']).done;
    assert.equal(r.code, 2);
    assert.match(oneLine(r.stderr), /^mcpguard check: --timeout expects at most 2147483647 ms .*got '2147483648'$/);
  });
});

describe('commands that cannot start', () => {
  test("-- '': exit 127 with one line, no stack", { timeout: 20000 }, async () => {
    const r = await runGuard(['--session-summary=off', '--', '']).done;
    assert.equal(r.code, 127);
    assert.equal(oneLine(r.stderr), 'mcpguard: cannot start "": the command is empty');
  });

  test("-- '': the session record says spawn_failed", { timeout: 20000 }, async () => {
    const r = await runGuard(['--', '']).done;
    assert.equal(r.code, 127);
    const end = sessionEnd(r.stderr);
    assert.equal(end.end_reason, 'spawn_failed');
    assert.equal(end.status, 127);
    assert.equal(end.spawn_error, 'the command is empty');
  });

  test("check -- '': could not run (exit 2), one line, no stack", { timeout: 20000 }, async () => {
    const r = await runGuard(['check', '--', '']).done;
    assert.equal(r.code, 2);
    assert.equal(oneLine(r.stderr), 'mcpguard check: cannot start "": the command is empty');
  });

  test('a path through a regular file (Node throws ENOTDIR at once): exit 126, no stack', { timeout: 20000 }, async () => {
    const plain = file('plain', 'x');
    const r = await runGuard(['--session-summary=off', '--', join(plain, 'server')]).done;
    assert.equal(r.code, 126);
    assert.equal(oneLine(r.stderr), `mcpguard: cannot start "${join(plain, 'server')}": a component of its path is not a directory (ENOTDIR)`);
  });

  test('a script whose #! interpreter is missing: exit 126 naming the interpreter', { timeout: 20000 }, async () => {
    const script = file('no-interp.sh', '#!/nonexistent/interp\nexit 0\n', 0o755);
    const r = await runGuard(['--session-summary=off', '--', script]).done;
    assert.equal(r.code, 126);
    assert.equal(oneLine(r.stderr), `mcpguard: cannot start "${script}": its interpreter "/nonexistent/interp" (from its #! line) was not found`);
  });

  test('… also when found through PATH, and in check', { timeout: 20000 }, async () => {
    const bin = join(dir, 'bin');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'my-server'), '#!/nonexistent/python9 -u\n');
    chmodSync(join(bin, 'my-server'), 0o755);
    const env = { PATH: `${bin}:${process.env.PATH}` };
    const r = await runGuard(['--session-summary=off', '--', 'my-server'], { env }).done;
    assert.equal(r.code, 126);
    assert.equal(oneLine(r.stderr), 'mcpguard: cannot start "my-server": its interpreter "/nonexistent/python9" (from its #! line) was not found');
    const c = await runGuard(['check', '--', 'my-server'], { env }).done;
    assert.equal(c.code, 2);
    assert.equal(oneLine(c.stderr), 'mcpguard check: cannot start "my-server": its interpreter "/nonexistent/python9" (from its #! line) was not found');
  });

  test('a #! line with Windows line endings: the carriage return is named', { timeout: 20000 }, async () => {
    const script = file('crlf.sh', '#!/bin/sh\r\nexit 0\r\n', 0o755);
    const r = await runGuard(['--session-summary=off', '--', script]).done;
    assert.equal(r.code, 126);
    assert.match(oneLine(r.stderr), /its interpreter "\/bin\/sh\\r" \(from its #! line\) was not found; the line ends in a carriage return/);
  });

  test('a script that is not executable: exit 126, permission denied', { timeout: 20000 }, async () => {
    const script = file('not-executable.sh', '#!/bin/sh\nexit 0\n', 0o644);
    const r = await runGuard(['--session-summary=off', '--', script]).done;
    assert.equal(r.code, 126);
    assert.equal(oneLine(r.stderr), `mcpguard: cannot start "${script}": permission denied ("${script}" is not executable)`);
  });

  test('a missing command is still 127, command not found', { timeout: 20000 }, async () => {
    const r = await runGuard(['--session-summary=off', '--', join(dir, 'no-such-server')]).done;
    assert.equal(r.code, 127);
    assert.equal(oneLine(r.stderr), `mcpguard: cannot start "${join(dir, 'no-such-server')}": command not found`);
  });
});

describe('files that never end', () => {
  // A small heap: reading /dev/zero whole would die of it rather than run for long.
  const env = { NODE_OPTIONS: '--max-old-space-size=64' };

  test('--config /dev/zero fails at once, naming the file and the cap', { timeout: 15000 }, async () => {
    const { marker, command } = markerCommand();
    const r = await runGuard(['--config', '/dev/zero', '--', ...command], { env, timeout: 10000 }).done;
    assert.equal(r.code, 125);
    assert.equal(oneLine(r.stderr), "mcpguard: --config '/dev/zero' holds more than 1048576 bytes, the most a config file may hold");
    assert.equal(existsSync(marker), false);
  });

  test('--audit-key-file /dev/zero fails at once, naming the file and the cap', { timeout: 15000 }, async () => {
    const { marker, command } = markerCommand();
    const r = await runGuard(['--audit-key-file', '/dev/zero', '--', ...command], { env, timeout: 10000 }).done;
    assert.equal(r.code, 125);
    assert.match(oneLine(r.stderr), /^mcpguard: --audit-key-file '\/dev\/zero' holds more than 4096 bytes, the most a key file may hold; /);
    assert.equal(existsSync(marker), false);
  });

  test('verify --audit-key-file /dev/zero fails at once too', { timeout: 15000 }, async () => {
    const records = join(dir, 'verify-records');
    mkdirSync(records, { recursive: true });
    const r = await runGuard(['verify', `--record-dir=${records}`, '--audit-key-file', '/dev/zero'], { env, timeout: 10000 }).done;
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--audit-key-file '\/dev\/zero' holds more than 4096 bytes/);
  });

  test('a FIFO nobody writes to: --config and --audit-key-file fail at once instead of hanging', { timeout: 15000 }, async () => {
    const fifo = join(dir, 'fifo');
    if (!existsSync(fifo)) assert.equal((await runCommand('mkfifo', [fifo]).done).code, 0);
    const { marker, command } = markerCommand();
    const c = await runGuard(['--config', fifo, '--', ...command], { timeout: 10000 }).done;
    assert.equal(c.code, 125);
    assert.equal(oneLine(c.stderr), `mcpguard: --config '${fifo}' is empty (a FIFO with no writer reads as empty)`);
    const k = await runGuard(['--audit-key-file', fifo, '--', ...command], { timeout: 10000 }).done;
    assert.equal(k.code, 125);
    assert.match(oneLine(k.stderr), /--audit-key-file '.*fifo' holds 0 bytes/);
    assert.equal(existsSync(marker), false);
  });

  test('a --config or --policy FIFO whose writer trickles a byte now and then: refused at the overall deadline, naming the option and the file', {
    timeout: 70000,
  }, async () => {
    const fifo = join(dir, 'trickle-fifo');
    if (!existsSync(fifo)) assert.equal((await runCommand('mkfifo', [fifo]).done).code, 0);
    // Opened read-write, the FIFO has a writer before mcpguard opens it; a byte a second keeps the silence timer from firing.
    const trickle =
      'import os, sys, time\nfd = os.open(sys.argv[1], os.O_RDWR)\nos.write(fd, b"{")\nprint("ready", flush=True)\nfor _ in range(60):\n    time.sleep(1)\n    os.write(fd, b" ")\n';
    const writer = runCommand('python3', ['-c', trickle, fifo], { timeout: 69000 });
    writer.done.catch(() => {});
    try {
      await new Promise((resolve) => writer.child.stdout.once('data', resolve));
      // The same reader serves both files that decide what is allowed (and --audit-key-file).
      for (const option of ['--config', '--policy']) {
        const { marker, command } = markerCommand();
        const c = await runGuard([option, fifo, '--', ...command], { timeout: 30000 }).done;
        assert.equal(c.code, 125, option);
        assert.match(
          oneLine(c.stderr),
          new RegExp(
            `^mcpguard: ${option} cannot read '${fifo}': not read to its end within 10000 ms \\(\\d+ bytes so far: a FIFO or terminal whose writer trickles\\)$`,
          ),
        );
        assert.equal(existsSync(marker), false, `${option}: nothing started`);
      }
    } finally {
      writer.child.kill('SIGKILL');
    }
  });

  test('a config and a key from process substitution (a FIFO with a slow writer) still work', { timeout: 20000 }, async () => {
    const records = join(dir, 'substitution-records');
    const script = `exec "$0" "$1" --record-dir="$2" --config <(sleep 0.3; printf '{"grace": "2s"}') --audit-key-file <(head -c 32 /dev/urandom) -- python3 "$3"`;
    const r = await runCommand(
      'bash',
      ['-c', script, process.execPath, join(fixture('..'), '..', 'bin', 'mcpguard.js'), records, fixture('stdlib_server.py')],
      {
        input: frame({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      },
    ).done;
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(messages(r.stdout), [{ jsonrpc: '2.0', id: 1, result: {} }]);
    assert.equal(sessionEnd(r.stderr).status, 0);
    const [log] = readdirSync(records).filter((f) => f.endsWith('.jsonl'));
    const start = readLines(join(records, log))
      .map((l) => JSON.parse(l))
      .find((x) => x.type === 'session_start');
    assert.equal(start.options.grace, 2000, 'the config was read');
    assert.equal(start.options['audit-key'], true, 'the key was read');
  });
});
