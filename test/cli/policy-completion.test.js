// Completion of `mcpguard policy test|check`: the action after `policy`, the
// policy FILE after it, and --tools LIST as a file (bash, as cli.test.js runs it).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { killStarted, runGuard, tempDir } from '../helpers/run.js';

after(killStarted);

const TIMEOUT = 20000;

test('bash completes policy test|check, the policy file, --tools LIST and the options', { timeout: TIMEOUT * 2 }, async () => {
  const script = (await runGuard(['completion', 'bash'], { timeout: TIMEOUT }).done).stdout.toString();
  const t = tempDir();
  try {
    writeFileSync(join(t.dir, 'policy.json'), '{}');
    writeFileSync(join(t.dir, 'tools.json'), '[]');
    const complete = (words) => {
      const quoted = words.map((w) => `'${w}'`).join(' ');
      const r = spawnSync(
        'bash',
        ['--norc', '-c', `${script}\nCOMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _mcpguard; printf '%s\\n' "\${COMPREPLY[@]}"`],
        {
          encoding: 'utf8',
          timeout: TIMEOUT,
          cwd: t.dir,
        },
      );
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.split('\n').filter(Boolean);
    };
    assert.deepEqual(complete(['mcpguard', 'pol']), ['policy']);
    assert.deepEqual(complete(['mcpguard', 'policy', '']), ['test', 'check']);
    assert.deepEqual(complete(['mcpguard', 'policy', 'check', 'po']), ['policy.json']);
    assert.deepEqual(complete(['mcpguard', 'policy', 'check', 'policy.json', '--tools', 'to']), ['tools.json']);
    assert.deepEqual(complete(['mcpguard', 'policy', 'test', 'policy.json', '--tool']).sort(), ['--tool', '--tools']);
  } finally {
    t.cleanup();
  }
});

test('zsh: the policy actions, and files after them', { timeout: TIMEOUT }, async () => {
  const text = (await runGuard(['completion', 'zsh'], { timeout: TIMEOUT }).done).stdout.toString();
  assert.match(text, /'policy'\) opts=\([^)]*--tools[^)]*\); extra=\(test check\)/);
  assert.ok(text.includes("'policy:--tools') _files"));
  assert.ok(text.includes('if [[ $sub == policy ]] && ((CURRENT > 3)); then _files; return; fi'));
});
