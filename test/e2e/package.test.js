// The package as users get it: `npm pack`, install the tarball into an empty
// folder, run the installed `mcpguard` from there. Its stdout must carry the
// protocol frames and nothing else (no banner, no npm or Node warning).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ROOT, fixture, frame, killStarted, runCommand, tempDir } from '../helpers/run.js';

const run = promisify(execFile);
const TIMEOUT = 120000;
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
// No update check, no funding or audit requests: nothing here needs the network.
const NPM_ENV = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };

describe('the packed and installed package', { timeout: TIMEOUT }, () => {
  const packDir = tempDir('mcpguard-pack-');
  const installDir = tempDir('mcpguard-install-');
  let tarball;
  let packed;
  let bin;

  before(async () => {
    // --ignore-scripts: `prepare` would rebuild dist/ while other test files import it;
    // `npm test` has built it already.
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir.dir], {
      cwd: ROOT,
      env: NPM_ENV,
      timeout: TIMEOUT,
    });
    [packed] = JSON.parse(stdout);
    tarball = join(packDir.dir, packed.filename);
    await run('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefer-offline', tarball], { cwd: installDir.dir, env: NPM_ENV, timeout: TIMEOUT });
    bin = join(installDir.dir, 'node_modules', '.bin', 'mcpguard');
  });

  after(() => {
    killStarted();
    packDir.cleanup();
    installDir.cleanup();
  });

  test('the tarball holds the compiled code and the bin, not the sources or tests', () => {
    const files = packed.files.map((f) => f.path);
    for (const needed of ['package.json', 'bin/mcpguard.js', 'dist/cli/main.js', 'dist/wire/jsonrpc.js', 'dist/wire/framing.js'])
      assert.ok(files.includes(needed), `${needed} in ${files}`);
    assert.deepEqual(
      files.filter((f) => /^(src|test|node_modules)\//.test(f)),
      [],
    );
  });

  test("three runtime dependencies, pinned exactly, with none of their own: the JSON Schema engine of the gate, its linear-time patterns, and install's JSONC editor", () => {
    const manifest = JSON.parse(readFileSync(join(installDir.dir, 'node_modules', 'mcpguard', 'package.json'), 'utf8'));
    assert.deepEqual(Object.keys(manifest.dependencies ?? {}), ['@cfworker/json-schema', 'jsonc-parser', 're2js']);
    for (const version of Object.values(manifest.dependencies)) assert.match(version, /^\d+\.\d+\.\d+$/, 'an exact version');
    assert.deepEqual(
      readdirSync(join(installDir.dir, 'node_modules'))
        .filter((n) => !n.startsWith('.'))
        .sort(),
      ['@cfworker', 'jsonc-parser', 'mcpguard', 're2js'],
    );
    assert.deepEqual(readdirSync(join(installDir.dir, 'node_modules', '@cfworker')), ['json-schema']);
  });

  test('initialize + ping: stdout is exactly the two response frames, exit 0', async () => {
    const input =
      frame({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pkg', version: '1' } },
      }) + frame({ jsonrpc: '2.0', id: 2, method: 'ping' });
    const r = await runCommand(bin, ['--', 'python3', fixture('recorder.py')], { input, cwd: installDir.dir, timeout: 30000 }).done;
    const expected =
      '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"recorder","version":"1"}}}\n' +
      '{"jsonrpc":"2.0","id":2,"result":{}}\n';
    assert.equal(r.stdout.toString('latin1'), expected, `stderr: ${r.stderr}`);
    assert.ok(r.stdout.equals(Buffer.from(expected)));
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /warning|deprecat|ExperimentalWarning/i);
  });

  test('the installed mcpguard install finds jsonc-parser and edits a config (dry run)', async () => {
    const home = join(installDir.dir, 'home');
    mkdirSync(join(home, '.cursor'), { recursive: true });
    writeFileSync(join(home, '.cursor', 'mcp.json'), '{\n  // mine\n  "mcpServers": { "a": { "command": "uvx", "args": ["x"], }, },\n}\n');
    const r = await runCommand(bin, ['install', '--dry-run', 'cursor'], { cwd: installDir.dir, env: { HOME: home }, timeout: 30000 }).done;
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.toString(), /\+ {2}"mcpServers": \{ "a": \{ "command": ".*", "args": \[".*mcpguard\.js", "--name", "a", "--", "uvx", "x"\], \}, \},/);
  });

  test('mcpguard --version prints the package version', async () => {
    const r = await runCommand(bin, ['--version'], { cwd: installDir.dir, timeout: 30000 }).done;
    assert.equal(r.stdout.toString('utf8'), `mcpguard ${VERSION}\n`);
    assert.equal(r.code, 0);
  });
});
