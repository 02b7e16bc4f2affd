// What install does with config files that are not simple: a symlink, a
// read-only file, one that does not parse, one the agent rewrites while
// install edits it, a 2 MB ~/.claude.json with 300 projects, entries in the
// compact forms agents write themselves, and mcpguard already there by hand.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  chownSync,
  closeSync,
  lstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { BIN, ROOT, killStarted, tempDir } from '../helpers/run.js';
import { SERVER, guard, layOut, serversOf, startAsAgent } from '../helpers/install.js';

after(killStarted);

const desktop = (dir) => join(dir, '.config', 'Claude', 'claude_desktop_config.json');
const write = (path, text) => {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return Buffer.from(text);
};

describe('install on files that are not simple', () => {
  test('a symlinked config stays a symlink; its target is edited and backed up', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const [f] = layOut(dir);
      const target = join(dir, 'dotfiles', 'claude.json');
      mkdirSync(join(dir, 'dotfiles'));
      writeFileSync(target, f.bytes);
      if (process.getuid() === 0) chownSync(target, 4321, 4321);
      // A config kept in a dotfiles directory, linked into place.
      unlinkSync(f.path);
      symlinkSync(target, f.path);
      const r = await guard(dir, ['install', 'claude-desktop']);
      assert.equal(r.code, 0, r.stdout.toString());
      assert.match(
        r.stdout.toString(),
        /written \(through its symlink to .*dotfiles\/claude\.json\); the original is kept in .*dotfiles\/claude\.json\.mcpguard\.bak/,
      );
      assert.ok(lstatSync(f.path).isSymbolicLink());
      if (process.getuid() === 0) assert.deepEqual([statSync(target).uid, statSync(target).gid], [4321, 4321], "still the owner's file");
      assert.equal(readlinkSync(f.path), target);
      assert.equal(serversOf(f)[0].command, process.execPath);
      const run = await startAsAgent(serversOf(f)[0], dir);
      assert.deepEqual(run.answers.find((a) => a.id === 3)?.result?.content, [{ type: 'text', text: '{"a": 2, "b": 3}' }], run.stderr);
      assert.deepEqual(readFileSync(`${target}.mcpguard.bak`), f.bytes);
      assert.equal((await guard(dir, ['uninstall', 'claude-desktop'])).code, 0);
      assert.deepEqual(readFileSync(target), f.bytes);
    } finally {
      cleanup();
    }
  });

  test('a read-only file and one that does not parse are refused and left byte for byte; the others are still done', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const files = layOut(dir);
      chmodSync(files[0].path, 0o444);
      const broken = write(files[3].path, '{\n  "mcpServers": {\n    "adder": { "command": "python3" \n  }\n');
      const latin1 = Buffer.from('{"mcpServers": {"a": {"command": "caf\xe9"}}}', 'latin1');
      writeFileSync(files[4].path, latin1);
      const r = await guard(dir, ['install']);
      assert.equal(r.code, 1);
      const said = r.stdout.toString();
      assert.match(said, /claude_desktop_config\.json: refused: it is read-only \(mode 444\); nothing written/);
      assert.match(said, /\.cursor\/mcp\.json\n {2}refused: cannot parse it: .* at line \d+, column \d+/);
      assert.deepEqual(readFileSync(files[0].path), files[0].bytes);
      assert.deepEqual(readFileSync(files[3].path), broken);
      assert.match(said, /mcp_config\.json\n {2}refused: cannot parse it: it is not UTF-8 text/);
      assert.deepEqual(readFileSync(files[4].path), latin1);
      assert.equal(serversOf(files[7])[0].command, process.execPath, 'codex was still done');
    } finally {
      cleanup();
    }
  });

  test('a file the agent rewrites while install edits it is not overwritten, and the run says so', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    const saved = { HOME: process.env.HOME, XDG_CONFIG_HOME: process.env.XDG_CONFIG_HOME };
    try {
      const [f] = layOut(dir);
      const agents = Buffer.from(f.bytes.toString().replace('"mcpServers"', '"globalShortcut": "",\n  "mcpServers"'));
      const { runInstallCommand } = await import('../../dist/install/command.js');
      process.env.HOME = dir;
      process.env.XDG_CONFIG_HOME = join(dir, '.config');
      let said = '';
      const code = await runInstallCommand(
        'install',
        ['claude-desktop'],
        {
          bin: join(ROOT, 'bin', 'mcpguard.js'),
          checkRelayOptions: () => {},
          beforeRename: () => writeFileSync(f.path, agents),
        },
        (s) => {
          said += s;
        },
      );
      assert.equal(code, 1);
      assert.match(said, /refused: it changed while mcpguard was editing it \(is the agent running and writing it\?\); nothing written, run again/);
      assert.deepEqual(readFileSync(f.path), agents, "the agent's write stands");
    } finally {
      Object.assign(process.env, saved);
      cleanup();
    }
  });

  test('a 2 MB ~/.claude.json with 300 projects: only the servers change, and uninstall restores it', { timeout: 120000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const projects = {};
      for (let i = 0; i < 300; i++) {
        projects[`/home/user/src/project-${i}`] = {
          allowedTools: [],
          history: Array.from({ length: 20 }, (_, j) => ({ display: `prompt ${j} `.repeat(30), pastedContents: {} })),
          mcpServers: i % 50 === 0 ? { [`p${i}`]: { type: 'stdio', command: 'python3', args: [], env: {} } } : {},
          hasTrustDialogAccepted: true,
          lastCost: 0.1234,
        };
      }
      const text = JSON.stringify(
        { numStartups: 40, mcpServers: { adder: { type: 'stdio', command: 'python3', args: [SERVER], env: {} } }, projects },
        null,
        2,
      );
      assert.ok(text.length > 2_000_000, `${text.length} bytes`);
      const original = write(join(dir, '.claude.json'), text);
      const file = { path: join(dir, '.claude.json'), projects: true };
      mkdirSync(join(dir, 'project'));
      const r = await guard(dir, ['install', 'claude-code']);
      assert.equal(r.code, 0, r.stdout.toString());
      const servers = serversOf(file);
      assert.equal(servers.length, 7);
      assert.ok(servers.every((s) => s.command === process.execPath && s.args.at(-1) === (s.name === 'adder' ? SERVER : 'python3')));
      const run = await startAsAgent(servers[0], dir);
      assert.deepEqual(run.answers.find((a) => a.id === 3)?.result?.content, [{ type: 'text', text: '{"a": 2, "b": 3}' }], run.stderr);
      assert.equal((await guard(dir, ['uninstall', 'claude-code'])).code, 0);
      assert.deepEqual(readFileSync(file.path), original);
    } finally {
      cleanup();
    }
  });

  test('the new text is renamed over the file: its mode stays (600), and a reader that had it open still reads the whole original', {
    timeout: 60000,
  }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      const f = layOut(dir)[1];
      chmodSync(f.path, 0o600);
      // An agent in the middle of reading ~/.claude.json: its open file is never truncated under it.
      const fd = openSync(f.path, 'r');
      try {
        assert.equal((await guard(dir, ['install', 'claude-code'])).code, 0);
        assert.deepEqual(readFileSync(fd), f.bytes, 'the open file still holds every original byte');
      } finally {
        closeSync(fd);
      }
      assert.equal(statSync(f.path).mode & 0o777, 0o600, 'not made readable by others');
      assert.equal(serversOf(f)[0].command, process.execPath);
      assert.deepEqual(
        readdirSync(dir).filter((n) => n.endsWith('.mcpguard.tmp')),
        [],
        'no temporary file left',
      );
    } finally {
      cleanup();
    }
  });

  test('Codex: servers as inline tables, with CRLF, comments and number forms: installed, started as the agent starts them, and back byte for byte', {
    timeout: 60000,
  }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      mkdirSync(join(dir, 'project'));
      const path = join(dir, '.codex', 'config.toml');
      const text = [
        '# mine',
        'model = "o3" # the model',
        '',
        '[mcp_servers] # every server',
        `inline = { command = "python3", args = [${JSON.stringify(SERVER)}], env = { RECORD_LINES = ${JSON.stringify(join(dir, 'inline.lines'))} }, tool_timeout_sec = 1e3 } # kept`,
        "bare = { command = 'python3', startup_timeout_sec = 1_000 }",
        '',
      ].join('\r\n');
      const original = write(path, text);
      const r = await guard(dir, ['install', 'codex']);
      assert.equal(r.code, 0, r.stdout.toString());
      const installed = readFileSync(path, 'utf8');
      assert.doesNotMatch(installed, /[^\r]\n/, 'no bare LF');
      assert.ok(
        installed.includes('} # kept\r\n') && installed.includes('tool_timeout_sec = 1e3') && installed.includes('startup_timeout_sec = 1_000'),
        installed,
      );
      const [inline, bare] = serversOf({ path, toml: true });
      assert.deepEqual(bare.args, [realpathSync(BIN), '--name=bare', '--', 'python3']);
      assert.equal(inline.command, process.execPath);
      const run = await startAsAgent(inline, dir);
      assert.deepEqual(run.answers.find((a) => a.id === 3)?.result?.content, [{ type: 'text', text: '{"a": 2, "b": 3}' }], run.stderr);
      assert.match(readFileSync(join(dir, 'inline.lines'), 'utf8'), /"method":"tools\/call"/);
      assert.equal((await guard(dir, ['uninstall', 'codex'])).code, 0);
      assert.deepEqual(readFileSync(path), original);
    } finally {
      cleanup();
    }
  });

  test('a key given twice (agents read the last, a tree lookup finds the first) refuses the file: never "guarded" while the agent runs the other', {
    timeout: 60000,
  }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      mkdirSync(join(dir, 'project'));
      const files = [
        // A cloned repository's project file: install would edit the first command, the agent runs the last.
        [join(dir, 'project', '.cursor', 'mcp.json'), '{"mcpServers": {"a": {"command": "python3", "args": ["s.py"], "command": "evil"}}}', '"command"'],
        [
          desktop(dir),
          '{"mcpServers": {"a": {"command": "/opt/mcpguard", "args": ["--", "python3"]}},\n "mcpServers": {"a": {"command": "evil"}}}',
          '"mcpServers"',
        ],
        [join(dir, '.gemini', 'settings.json'), '{"mcpServers": {"a": {"command": "python3"}, "a": {"command": "evil"}}}', '"a"'],
        [join(dir, '.codex', 'config.toml'), '[mcp_servers.a]\ncommand = "python3"\nargs = []\ncommand = "evil"\n', '"mcp_servers.a.command"'],
      ].map(([path, text, key]) => ({ path, key, bytes: write(path, text) }));
      const r = await guard(dir, ['install']);
      assert.equal(r.code, 1, r.stdout.toString());
      for (const f of files) {
        assert.match(
          r.stdout.toString(),
          new RegExp(`${f.path.replace(/[.]/g, '\\.')}\\n {2}refused: cannot parse it: the key ${f.key} is (given|defined) twice`),
          f.path,
        );
        assert.deepEqual(readFileSync(f.path), f.bytes, `${f.path}: not written`);
      }
      const c = await guard(dir, ['clients']);
      assert.doesNotMatch(c.stdout.toString(), /guarded/, c.stdout.toString());
      assert.equal((c.stdout.toString().match(/refused: cannot parse it/g) ?? []).length, files.length);
    } finally {
      cleanup();
    }
  });

  test('a file nested deeper than the parsers go is refused as unparsable, and nothing is written', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      mkdirSync(join(dir, 'project'));
      const deep = `${'['.repeat(200000)}${']'.repeat(200000)}`;
      const files = [join(dir, 'project', '.cursor', 'mcp.json'), join(dir, 'project', '.mcp.json'), join(dir, '.codex', 'config.toml')].map((path) => ({
        path,
        bytes: write(
          path,
          path.endsWith('.toml') ? `[mcp_servers.a]\ncommand = "python3"\nargs = ${deep}\n` : `{"mcpServers": {"a": {"command": "python3", "env": ${deep}}}}`,
        ),
      }));
      const r = await guard(dir, ['install']);
      assert.equal(r.code, 1, r.stdout.toString());
      for (const f of files) {
        assert.match(r.stdout.toString(), new RegExp(`${f.path.replace(/[.]/g, '\\.')}\\n {2}refused: cannot parse it: nested too deeply`), f.path);
        assert.deepEqual(readFileSync(f.path), f.bytes, `${f.path}: not written`);
      }
    } finally {
      cleanup();
    }
  });

  test('the compact forms agents write (no args; args: [] next to command; minified) come back byte for byte', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      mkdirSync(join(dir, 'project'));
      const text = '{"mcpServers":{"a":{"type":"stdio","command":"python3","args":[],"env":{}},"b":{"command":"uvx"},"c":{"args":[ ],"command":"x"}}}';
      const original = write(join(dir, '.claude.json'), text);
      assert.equal((await guard(dir, ['install', 'claude-code'])).code, 0);
      const servers = serversOf({ path: join(dir, '.claude.json') });
      assert.deepEqual(
        servers.map((s) => s.args.slice(1)),
        [
          ['--name', 'a', '--', 'python3'],
          ['--name=b', '--', 'uvx'],
          ['--name', 'c', '--', 'x'],
        ],
      );
      assert.equal((await guard(dir, ['uninstall', 'claude-code'])).code, 0);
      assert.equal(readFileSync(join(dir, '.claude.json'), 'utf8'), original.toString());
    } finally {
      cleanup();
    }
  });

  test('a byte-order mark (as Windows editors write) is kept, and the file still comes back byte for byte', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      mkdirSync(join(dir, 'project'));
      const path = join(dir, '.cursor', 'mcp.json');
      const original = write(path, '\uFEFF{\r\n  "mcpServers": { "a": { "command": "x" } }\r\n}\r\n');
      const r = await guard(dir, ['install', 'cursor']);
      assert.equal(r.code, 0, r.stdout.toString());
      const text = readFileSync(path, 'utf8');
      assert.ok(text.startsWith(`\uFEFF{\r\n  "mcpServers": { "a": { "args": [`), text);
      assert.equal((await guard(dir, ['uninstall', 'cursor'])).code, 0);
      assert.deepEqual(readFileSync(path), original);
    } finally {
      cleanup();
    }
  });

  test('hostile server names: "--" still round-trips and runs; control and bidi characters are written out, never sent to the terminal', {
    timeout: 60000,
  }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      mkdirSync(join(dir, 'project'));
      const path = desktop(dir);
      const text = `{"mcpServers": {"--": {"command": "python3", "args": [${JSON.stringify(SERVER)}]}, "evil\\u001b[2J\u202e": {"command": "python3", "args": []}}}`;
      const original = write(path, text);
      const r = await guard(dir, ['install']);
      assert.equal(r.code, 0, r.stdout.toString());
      const said = r.stdout.toString();
      assert.doesNotMatch(said, /[\u001b\u202e]/);
      assert.match(said, /evil\\x1b\[2J\\u202e: guarded/);
      const [dashes] = serversOf({ path });
      assert.deepEqual(dashes.args.slice(1, 5), ['--name', '--', '--', 'python3']);
      const run = await startAsAgent(dashes, dir);
      assert.equal(run.end?.name, '--', run.stderr);
      assert.equal((await guard(dir, ['uninstall'])).code, 0);
      assert.deepEqual(readFileSync(path), original);
    } finally {
      cleanup();
    }
  });

  test('mcpguard under another path is recognised: install leaves it, uninstall restores the command after --', { timeout: 60000 }, async () => {
    const { dir, cleanup } = tempDir('mcpguard-install-');
    try {
      mkdirSync(join(dir, 'project'));
      const path = desktop(dir);
      const text =
        '{\n  "mcpServers": {\n    "a": { "command": "/opt/tools/bin/mcpguard", "args": ["--grace", "100", "--", "python3", "s.py"] },\n    "b": { "command": "node", "args": ["C:\\\\npm\\\\mcpguard.js", "--", "uvx"] }\n  }\n}\n';
      write(path, text);
      const r = await guard(dir, ['install']);
      assert.match(r.stdout.toString(), /a: already guarded, left as it is\n {2}b: already guarded, left as it is/);
      assert.equal(readFileSync(path, 'utf8'), text);
      // Anything can be called mcpguard: clients says which program it is.
      assert.match((await guard(dir, ['clients'])).stdout.toString(), /^ {2}a {2}guarded \(by \/opt\/tools\/bin\/mcpguard\) {2}/m);
      assert.equal((await guard(dir, ['uninstall'])).code, 0);
      assert.equal(
        readFileSync(path, 'utf8'),
        '{\n  "mcpServers": {\n    "a": { "command": "python3", "args": ["s.py"] },\n    "b": { "command": "uvx", "args": [] }\n  }\n}\n',
      );
    } finally {
      cleanup();
    }
  });
});
