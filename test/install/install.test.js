// `mcpguard install` / `uninstall` / `clients` on every client's config file as
// its documentation shows it: each stdio server then starts mcpguard exactly as
// the agent would start it (argv from the file, no PATH) and answers a real
// handshake and tool call through it; uninstall gives back the original bytes.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, killStarted, tempDir } from '../helpers/run.js';
import { SERVER, guard, layOut, serversOf, startAsAgent } from '../helpers/install.js';

after(killStarted);

const REMOTE = ['linear', 'server-name', 'figma', 'remote', 'github'];
const bak = (f) => `${f.path}.mcpguard.bak`;

describe('install on every client', () => {
  test('guards each stdio server, leaves the remote ones, and each starts as its agent starts it', { timeout: 240000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir);
      const r = await guard(dir, ['install']);
      assert.equal(r.code, 0, r.stdout.toString() + r.stderr);
      const said = r.stdout.toString();
      for (const f of files) {
        assert.match(said, new RegExp(`: ${f.path.replace(/[.]/g, '\\.')}: written; the original is kept in`), f.src);
        assert.deepEqual(readFileSync(bak(f)), f.bytes, `${f.src}: the backup is the original`);
        for (const s of serversOf(f)) {
          if (REMOTE.includes(s.name)) {
            assert.equal(s.command, undefined, `${f.src}: ${s.name} untouched`);
            continue;
          }
          // Absolute paths: node and the mcpguard.js that ran install.
          assert.equal(s.command, process.execPath, `${f.src}: ${s.name}`);
          assert.deepEqual(s.args.slice(0, 4), [realpathSync(BIN), '--name', s.name, '--'], `${f.src}: ${s.name}`);
          assert.deepEqual(s.args.slice(4).at(-1), SERVER);
          const run = await startAsAgent(s, dir);
          assert.equal(run.code, 0, `${f.src}: ${s.name}: ${run.stderr}`);
          assert.deepEqual(
            run.answers.find((a) => a.id === 3)?.result?.content,
            [{ type: 'text', text: '{"a": 2, "b": 3}' }],
            `${f.src}: ${s.name}: ${run.stderr}`,
          );
          assert.equal(run.end?.name, s.name, `${f.src}: the session is named after the server`);
          assert.equal(run.end?.calls?.completed, 3);
        }
      }
      // An args array written one element per line gets mcpguard's elements one per line too.
      assert.ok(
        readFileSync(files[4].path, 'utf8').includes(`"args": [\n        ${JSON.stringify(realpathSync(BIN))},\n        "--name",\n        "adder",\n`),
        'windsurf: one per line',
      );
      // Bytes reached the fixture through mcpguard: the entry's env (RECORD_LINES) went with it.
      for (const lines of ['adder', 'local', 'windsurf', 'gemini', 'vscode', 'codex', 'codex2', 'zed']) {
        assert.match(readFileSync(join(dir, `${lines}.lines`), 'utf8'), /"method":"tools\/call"/, lines);
      }
    } finally {
      cleanup();
    }
  });

  test('install again changes nothing; uninstall gives back every original byte; the backup stays the first original', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir);
      assert.equal((await guard(dir, ['install'])).code, 0);
      const installed = files.map((f) => readFileSync(f.path));
      const again = await guard(dir, ['install']);
      assert.equal(again.code, 0);
      assert.match(again.stdout.toString(), /already guarded, left as it is/);
      for (const [i, f] of files.entries()) assert.deepEqual(readFileSync(f.path), installed[i], `${f.src}: install is idempotent`);
      const u = await guard(dir, ['uninstall']);
      assert.equal(u.code, 0, u.stdout.toString());
      for (const f of files) assert.equal(readFileSync(f.path, 'utf8'), f.bytes.toString('utf8'), `${f.src}: original bytes`);
      for (const f of files) assert.deepEqual(readFileSync(bak(f)), f.bytes, `${f.src}: uninstall's write left the backup the first original`);
      assert.equal((await guard(dir, ['install'])).code, 0);
      for (const f of files) assert.deepEqual(readFileSync(bak(f)), f.bytes, `${f.src}: the backup is still the first original`);
    } finally {
      cleanup();
    }
  });

  test('CRLF files stay CRLF, and come back byte for byte', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir, (t) => t.replace(/\n/g, '\r\n'));
      assert.equal((await guard(dir, ['install'])).code, 0);
      for (const f of files) {
        const text = readFileSync(f.path, 'utf8');
        assert.doesNotMatch(text, /[^\r]\n/, `${f.src}: no bare LF`);
        const guarded = serversOf(f).filter((s) => s.command === process.execPath);
        assert.equal(guarded.length > 0, true, f.src);
        for (const s of guarded) {
          const run = await startAsAgent(s, dir);
          assert.deepEqual(
            run.answers.find((a) => a.id === 3)?.result?.content,
            [{ type: 'text', text: '{"a": 2, "b": 3}' }],
            `${f.src}: ${s.name}: ${run.stderr}`,
          );
        }
      }
      assert.equal((await guard(dir, ['uninstall'])).code, 0);
      for (const f of files) assert.deepEqual(readFileSync(f.path), f.bytes, `${f.src}: original bytes`);
    } finally {
      cleanup();
    }
  });

  test('--dry-run prints a unified diff per file and writes nothing', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir);
      const r = await guard(dir, ['install', '--dry-run', 'codex']);
      assert.equal(r.code, 0);
      const text = r.stdout.toString();
      assert.match(text, /would change \(dry run, nothing written\)/);
      assert.ok(text.includes('\n-command = "python3"          # the interpreter\n'), text);
      assert.ok(text.includes(`\n+command = ${JSON.stringify(process.execPath)}          # the interpreter\n`), text);
      assert.ok(text.includes(`+args = [${JSON.stringify(realpathSync(BIN))}, "--name", "adder", "--", "python3", `), text);
      assert.doesNotMatch(text, /Claude/, 'only the named client');
      for (const f of files) assert.deepEqual(readFileSync(f.path), f.bytes, `${f.src}: not written`);
    } finally {
      cleanup();
    }
  });

  test('--server limits the run to the servers named; a name found in no file is reported, exit 1', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir);
      const r = await guard(dir, ['install', 'claude-code', '--server', 'local-adder']);
      assert.equal(r.code, 0, r.stdout.toString());
      const named = Object.fromEntries(serversOf(files[1]).map((s) => [s.name, s]));
      assert.equal(named.adder.command, 'python3', 'a server not named stays as it was');
      assert.equal(named['local-adder'].command, process.execPath);
      assert.match(r.stdout.toString(), /\.mcp\.json: nothing to change\n/);
      const none = await guard(dir, ['install', '--server', 'nosuch']);
      assert.equal(none.code, 1);
      assert.match(none.stdout.toString(), /^no server named 'nosuch' in the files above$/m);
      for (const f of files.filter((f) => f !== files[1])) assert.deepEqual(readFileSync(f.path), f.bytes, `${f.src}: not written`);
    } finally {
      cleanup();
    }
  });

  test('uninstall --dry-run prints the diff back to the original and writes nothing', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir);
      assert.equal((await guard(dir, ['install', 'codex'])).code, 0);
      const installed = readFileSync(files[7].path);
      const r = await guard(dir, ['uninstall', '--dry-run']);
      assert.equal(r.code, 0, r.stdout.toString());
      const text = r.stdout.toString();
      assert.match(text, /config\.toml: would change \(dry run, nothing written\)\n {2}adder: unguarded \(dry run\)/);
      assert.ok(text.includes(`\n-command = ${JSON.stringify(process.execPath)}          # the interpreter\n`), text);
      assert.ok(text.includes('\n+command = "python3"          # the interpreter\n'), text);
      assert.deepEqual(readFileSync(files[7].path), installed, 'not written');
    } finally {
      cleanup();
    }
  });

  test('secrets in a config (an entry env value repeated in args, a credential shape) are masked in the dry-run diff and in clients', {
    timeout: 60000,
  }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const [f] = layOut(dir, (t) =>
        t
          .replace(
            `"args": ["${SERVER}"]`,
            `"args": [${JSON.stringify(SERVER)}, "--key", "s3cr3t-value-123456", "--gh", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"]`,
          )
          .replace('"RECORD_LINES"', '"API_KEY": "s3cr3t-value-123456",\n        "RECORD_LINES"'),
      );
      assert.match(readFileSync(f.path, 'utf8'), /s3cr3t-value-123456[\s\S]*"API_KEY"/, 'the secret is in the file');
      const dry = await guard(dir, ['install', '--dry-run', 'claude-desktop']);
      const listed = await guard(dir, ['clients', 'claude-desktop']);
      for (const [what, r] of [
        ['dry run', dry],
        ['clients', listed],
      ]) {
        assert.equal(r.code, 0, r.stdout.toString());
        const text = r.stdout.toString();
        assert.doesNotMatch(text, /s3cr3t-value-123456|ghp_abcdef/, what);
        assert.match(text, /--key \S*\[REDACTED:API_KEY\]\S* --gh \S*ghp_\[REDACTED\]|"--key", "\[REDACTED:API_KEY\]", "--gh", "ghp_\[REDACTED\]"/, what);
      }
      assert.deepEqual(readFileSync(f.path), f.bytes, 'the dry run wrote nothing');
    } finally {
      cleanup();
    }
  });

  test('clients lists each file, its servers, and which are guarded', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      layOut(dir);
      assert.equal((await guard(dir, ['install', 'cursor', '--server', 'adder'])).code, 0);
      const r = await guard(dir, ['clients']);
      assert.equal(r.code, 0);
      const text = r.stdout.toString();
      assert.match(text, /^Cursor: .*\.cursor\/mcp\.json\n {2}adder {2}guarded {2}/m);
      assert.match(text, /^ {2}server-name {2}not guardable: a remote server \(url\)$/m);
      assert.match(text, /^Claude Code: .*\.claude\.json\n {2}adder {2}not guarded {2}python3 /m);
      assert.match(text, /^ {2}local-adder \(project .*\/project\) {2}not guarded/m);
      assert.match(text, /^Zed: .*\n {2}adder {2}not guarded {2}python3 .*\n {2}older-adder {2}not guarded {2}python3 /m);
    } finally {
      cleanup();
    }
  });

  test('a Unicode server name is kept, and passed as --name', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const [f] = layOut(dir, (t) => t.replace('"adder"', '"données-🚀"'));
      const r = await guard(dir, ['install', 'claude-desktop', '--server', 'données-🚀']);
      assert.equal(r.code, 0, r.stdout.toString());
      const [s] = serversOf(f);
      assert.deepEqual(s.args.slice(1, 3), ['--name', 'données-🚀']);
      const run = await startAsAgent(s, dir);
      assert.equal(run.end?.name, 'données-🚀');
      assert.equal((await guard(dir, ['uninstall', '--server', 'données-🚀'])).code, 0);
      assert.deepEqual(readFileSync(f.path), f.bytes);
    } finally {
      cleanup();
    }
  });

  test('relay options after -- are checked first (a bad one names the option and writes nothing) and relative paths made absolute', {
    timeout: 60000,
  }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir);
      const bad = await guard(dir, ['install', '--', '--grace', 'soon']);
      assert.equal(bad.code, 125);
      assert.match(bad.stderr, /--grace.*'soon'/);
      for (const f of files) assert.deepEqual(readFileSync(f.path), f.bytes);
      writeFileSync(join(dir, 'project', 'policy.json'), '{}');
      const ok = await guard(dir, ['install', 'cursor', '--', '--record-dir', 'recs', '--approve-cmd', 'true --yes']);
      assert.equal(ok.code, 0, ok.stderr);
      const [s] = serversOf(files[3]);
      // The approver is looked up on PATH now: the agent's PATH may not find it.
      assert.equal(s.args[2], join(realpathSync(dir), 'project', 'recs'));
      assert.match(s.args[4], /^\/.*true --yes$/);
      assert.deepEqual(s.args.slice(5, 7), ['--name', 'adder']);
    } finally {
      cleanup();
    }
  });
});
