// Small gaps a new user meets in the first hour: what --help calls option
// values, what completion offers after `pins`, what the man page's SYNOPSIS
// lists, and the configuration the README gives for the MCP Inspector. The
// real binary, a real bash sourcing its completion script, a real SDK client.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { BIN, ROOT, fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';

const TIMEOUT = 30000;
after(killStarted);

test('--help names what --record-dir, --config, --audit-key-file and --approve-cmd take', { timeout: TIMEOUT }, async () => {
  const help = (await runGuard(['--help'], { timeout: TIMEOUT }).done).stdout.toString();
  assert.match(help, /\n {2}--record-dir DIR\n/);
  assert.match(help, /\n {2}--config FILE\n/);
  assert.match(help, /\n {2}--audit-key-file FILE\n/);
  assert.match(help, /\n {2}--approve-cmd CMD\n/);
  assert.doesNotMatch(help, / VALUE\n/, 'no option value is left unnamed');
});

/** What bash completes for `words` (the last one being completed), with the script `mcpguard completion bash` prints. */
function bashComplete(words) {
  const script = spawnSync(process.execPath, [BIN, 'completion', 'bash'], { encoding: 'utf8', timeout: TIMEOUT }).stdout;
  const array = words.map((w) => `'${w}'`).join(' ');
  const run = spawnSync(
    'bash',
    ['--norc', '-c', `${script}\nCOMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _mcpguard; printf '%s\\n' "\${COMPREPLY[@]}"`],
    { encoding: 'utf8', timeout: TIMEOUT },
  );
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.split('\n').filter(Boolean);
}

test('bash completion offers the pins actions after `pins`, log among them', { timeout: TIMEOUT }, () => {
  assert.deepEqual(bashComplete(['mcpguard', 'pins', '']).sort(), ['accept', 'diff', 'forget', 'list', 'log', 'show']);
  assert.deepEqual(bashComplete(['mcpguard', 'pins', 'l']).sort(), ['list', 'log']);
  assert.ok(bashComplete(['mcpguard', 'pins', '--']).includes('--record-dir'), 'options still complete');
  assert.deepEqual(bashComplete(['mcpguard', 'pins', 'show', '']), [], 'only the first word after pins is an action');
});

test('zsh completion offers the pins actions after `pins`', { timeout: TIMEOUT }, () => {
  const script = spawnSync(process.execPath, [BIN, 'completion', 'zsh'], { encoding: 'utf8', timeout: TIMEOUT }).stdout;
  assert.match(script, /case "\$sub" in\n(.|\n)*'pins'\) opts=\([^)]*\); extra=\(list show diff accept forget log\)/);
  assert.match(script, /\[\[ " help completion pins policy " == \*" \$sub "\* \]\] && \(\(CURRENT == 3\)\)/);
});

test("the man page's SYNOPSIS lists every subcommand", () => {
  const man = readFileSync(join(ROOT, 'man', 'mcpguard.1'), 'utf8');
  const synopsis = man.slice(man.indexOf('.SH SYNOPSIS'), man.indexOf('.SH DESCRIPTION')).replace(/\\f[BIR]/g, ''); // without roff's font changes
  for (const word of ['check', 'sessions', 'activity', 'show', 'logs', 'verify', 'prune', 'pins', 'completion']) {
    assert.match(synopsis, new RegExp(`\\b${word}\\b`), `SYNOPSIS names ${word}`);
  }
});

test("the README's MCP Inspector configuration (no --, so the Inspector's own --method stays its own): mcpguard takes the first word that is not an option as the server, with its defaults", {
  timeout: TIMEOUT,
}, async (t) => {
  const tmp = tempDir('mcpguard-inspector-');
  t.after(tmp.cleanup);
  const client = new Client({ name: 'inspector-form', version: '1.0.0' });
  // The README's "args" for the Inspector: options, then the server's command, no --.
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, '--record-dir', tmp.dir, 'python3', fixture('stdlib_server.py')],
    cwd: ROOT,
    stderr: 'pipe',
  });
  transport.stderr.on('data', () => {});
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name),
      ['add'],
    );
    const sum = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    assert.equal(sum.isError, undefined, JSON.stringify(sum));
    // The gate is on (the defaults): arguments the schema refuses never reach the server.
    const bad = await client.callTool({ name: 'add', arguments: { a: 'two', b: 3 } });
    assert.equal(bad.isError, true);
    assert.match(bad.content[0].text, /^mcpguard refused this call before it reached the server/);
  } finally {
    await client.close().catch(() => {});
  }
  const logs = readdirSync(tmp.dir).filter((f) => f.endsWith('.jsonl'));
  assert.equal(logs.length, 1, 'recorded where --record-dir said');
  const start = readFileSync(join(tmp.dir, logs[0]), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .find((r) => r.type === 'session_start');
  assert.deepEqual([start.command, ...start.args], ['python3', fixture('stdlib_server.py')], 'the server is the first word that is not an option');
});
