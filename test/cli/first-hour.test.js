// Small gaps a new user meets in the first hour: what --help calls option
// values, what completion offers after `pins`, what the man page's SYNOPSIS
// lists. The real binary, a real bash sourcing its completion script.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, ROOT, killStarted, runGuard } from '../helpers/run.js';

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
