// `mcpguard policy test`: the decision, the rule and why for one call, from
// the same load and decide() as the relay, through the real binary.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { killStarted, runGuard, tempDir } from '../helpers/run.js';

after(killStarted);

const TIMEOUT = 20000;

async function policyTest(args, cwd) {
  const r = await runGuard(['policy', 'test', ...args], { timeout: TIMEOUT, cwd }).done;
  return { code: r.code, out: r.stdout.toString(), err: r.stderr };
}

describe('mcpguard policy test', () => {
  test('--json: decision, the rule (0-based) and why, for paths, hosts, when and the default; relative paths from the current directory', {
    timeout: TIMEOUT * 4,
  }, async () => {
    const t = tempDir();
    try {
      const home = realpathSync(t.dir);
      mkdirSync(join(home, 'project'));
      symlinkSync('/etc', join(home, 'project', 'etc'));
      const file = join(home, 'policy.json');
      writeFileSync(
        file,
        JSON.stringify({
          default: 'ask',
          rules: [
            { tool: '*', paths: { args: ['/path'], outside: [join(home, 'project')] }, decision: 'deny', reason: 'outside the project' },
            { tool: 'fetch', hosts: { args: ['/url'], within: ['docs.python.org'] }, decision: 'allow' },
            { tool: 'exec', when: { properties: { command: { pattern: '^rm ' } }, required: ['command'] }, decision: 'deny' },
            { tool: 'read_file', decision: 'allow' },
          ],
        }),
      );
      const cwd = join(home, 'project');
      const one = async (tool, args) => {
        const r = await policyTest([file, '--tool', tool, '--args', JSON.stringify(args), '--json'], cwd);
        assert.equal(r.code, 0, r.err);
        return JSON.parse(r.out);
      };
      const viaLink = await one('read_file', { path: 'etc/passwd' });
      assert.deepEqual([viaLink.decision, viaLink.rule], ['deny', 0], 'a link inside the project that points out of it');
      assert.equal(viaLink.reason, 'outside the project; /path is "/etc/passwd", outside ' + JSON.stringify(join(home, 'project')));
      assert.equal(viaLink.why, `policy rule 1 (${viaLink.reason})`);
      assert.deepEqual([(await one('read_file', { path: 'src/main.py' })).decision], ['allow']);
      assert.deepEqual(await one('fetch', { url: 'https://docs.python.org/3/' }), {
        decision: 'allow',
        rule: 1,
        reason: '/url is host "docs.python.org", within "docs.python.org"',
        why: 'policy rule 2 (/url is host "docs.python.org", within "docs.python.org")',
      });
      assert.deepEqual([(await one('fetch', { url: 'https://docs.python.org@evil.com/' })).rule], [null], 'not within: on to the default');
      assert.deepEqual([(await one('exec', { command: 'rm -rf /' })).decision, (await one('exec', { command: 'ls' })).decision], ['deny', 'ask']);
      const text = await policyTest([file, '--tool', 'exec', '--args', '{"command":"ls"}'], cwd);
      assert.equal(text.out, "ask: the policy's default is ask\n");
    } finally {
      t.cleanup();
    }
  });

  test('bad usage is exit 125 naming the option: no action, no --tool, --args not an object or with a key twice, a policy not understood', {
    timeout: TIMEOUT * 4,
  }, async () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'policy.json');
      writeFileSync(file, JSON.stringify({ rules: [{ paths: { args: ['/p'], within: ['relative'] }, decision: 'allow' }] }));
      const good = join(t.dir, 'good.json');
      writeFileSync(good, '{}');
      const cases = [
        [[], /policy: expected 'test'/],
        [['test', good], /--tool expects/],
        [['test', good, '--tool', 'x', '--args', '[1]'], /--args expects a JSON object/],
        [['test', good, '--tool', 'x', '--args', '{"a":1,"a":2}'], /--args expects a JSON object.*duplicate key/],
        [['test', file, '--tool', 'x'], /rule 1: "paths" root "relative" is not absolute/],
      ];
      for (const [args, message] of cases) {
        const r = await runGuard(['policy', ...args], { timeout: TIMEOUT }).done;
        assert.equal(r.code, 125, args.join(' '));
        assert.match(r.stderr, message);
        assert.equal(r.stdout.length, 0);
      }
    } finally {
      t.cleanup();
    }
  });
});
