// Path rules: a path argument judged as the server will use it (`~`, relative
// to the server's directory, `..`, repeated slashes, file:// URIs, symlinks
// followed where they exist), on a real tree of files and links in a temp dir.
// The judgement is compared with what the OS decides (realpath of the path,
// created when it did not exist), and run through the real binary against a
// server that records every byte it reads: a denied call leaves none there.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, realpathSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fixture, killStarted, tempDir } from '../helpers/run.js';
import { conversation, endOf } from '../helpers/conversation.js';
import { resolvePath } from '../../dist/gate/paths.js';
import { buildPolicy, decide } from '../../dist/gate/policy.js';

after(killStarted);

const TIMEOUT = 30000;

/** home/project (with sub/, a.txt, links in and out, a loop) and home/outside/secret. */
function tree() {
  const t = tempDir();
  const home = realpathSync(t.dir);
  const project = join(home, 'project');
  mkdirSync(join(project, 'sub', 'deep'), { recursive: true });
  mkdirSync(join(home, 'outside'));
  writeFileSync(join(project, 'a.txt'), 'a');
  writeFileSync(join(home, 'outside', 'secret'), 's');
  symlinkSync(join(home, 'outside'), join(project, 'link-out'));
  symlinkSync('sub/deep', join(project, 'link-in'));
  symlinkSync('../../outside', join(project, 'sub', 'rel-out'));
  symlinkSync('loop2', join(project, 'loop1'));
  symlinkSync('loop1', join(project, 'loop2'));
  return { ...t, home, project };
}

const argsOf = (value) => ({ value: () => value });
const noEngine = () => {
  throw new Error('no engine');
};

describe('resolvePath against the OS', () => {
  test('random paths over links, .., . and repeated slashes: the judgement is what realpath of the (created) path says, or unknown', () => {
    const t = tree();
    try {
      const parts = ['project', 'sub', 'deep', 'link-in', 'link-out', 'rel-out', '..', '.', '', 'a.txt', 'new', 'secret', 'outside'];
      let seed = 31;
      const next = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed;
      };
      let compared = 0;
      let unknown = 0;
      for (let i = 0; i < 3000; i++) {
        const n = 1 + (next() % 7);
        let relative = Array.from({ length: n }, () => parts[next() % parts.length]).join('/');
        if (relative.startsWith('/')) relative = `.${relative}`;
        const path = `${t.home}/${relative}`; // the raw form: `..` after a link is the kernel's to resolve
        const judged = resolvePath(relative, { cwd: t.home, home: '/nonexistent' });
        let os = null;
        if (existsSync(path)) os = realpathSync(path);
        else {
          try {
            writeFileSync(path, '', { flag: 'wx' });
            os = realpathSync(path);
            unlinkSync(os);
          } catch {
            continue; // the kernel would not open it either (a missing directory on the way, a loop)
          }
        }
        if ('unknown' in judged) {
          unknown++;
          continue;
        }
        assert.equal(judged.path, os, relative);
        compared++;
      }
      assert.ok(compared > 300, `compared ${compared}`);
      assert.ok(unknown < compared, `unknown ${unknown} of ${compared + unknown}`);
    } finally {
      t.cleanup();
    }
  });

  test('what cannot be judged: control characters, a symlink loop, a name too long, ~user, a URI with %2F or a host', () => {
    const t = tree();
    const place = { cwd: t.project, home: t.home };
    try {
      assert.match(resolvePath(`${t.project}/a\u0000b`, place).unknown, /control character/);
      assert.match(resolvePath('file:///x/a%00b', place).unknown, /control character/);
      assert.match(resolvePath('loop1/x', place).unknown, /symlink loop/);
      assert.match(resolvePath('x'.repeat(300), place).unknown, /ENAMETOOLONG/);
      assert.match(resolvePath('~root/x', place).unknown, /~user/);
      assert.match(resolvePath('file:///tmp/a%2Fb', place).unknown, /not a local file URI/);
      assert.match(resolvePath('file://evil.example/etc/passwd', place).unknown, /not a local file URI/);
      assert.match(resolvePath('link-out/../a.txt', place).unknown, /'\.\.' after a symlink/, 'kernel: outside/../a.txt; lexical: project/a.txt');
      assert.deepEqual(resolvePath('~/project//sub/./deep/../../a.txt', place), { path: join(t.project, 'a.txt') });
      assert.deepEqual(resolvePath(pathToFileURL(join(t.project, 'sub', '%2e%2e', 'link-out', 'secret')).href.replace('%252e%252e', '%2e%2e'), place), {
        path: join(t.home, 'outside', 'secret'),
      });
      assert.deepEqual(
        resolvePath(`${'a/'.repeat(3000)}b`, place),
        { path: join(t.project, `${'a/'.repeat(3000)}b`) },
        'a long path that does not exist is lexical',
      );
    } finally {
      t.cleanup();
    }
  });
});

describe('the realpath(3) fast path agrees with the component walk', () => {
  test('a last name that is a symlink (dangling too: a write follows it out of the root), a missing directory, a file as a directory', () => {
    const t = tree();
    const place = { cwd: t.project, home: t.home };
    try {
      symlinkSync(join(t.home, 'outside', 'not-yet'), join(t.project, 'dangle-out'));
      symlinkSync('a.txt', join(t.project, 'sub', 'file-link'));
      assert.deepEqual(resolvePath('dangle-out', place), { path: join(t.home, 'outside', 'not-yet') }, 'a dangling link is where a write lands');
      assert.deepEqual(resolvePath('sub/deep/../rel-out/secret', place), { path: join(t.home, 'outside', 'secret') });
      assert.deepEqual(resolvePath('link-out', place), { path: join(t.home, 'outside') });
      assert.deepEqual(resolvePath('new/dir/file', place), { path: join(t.project, 'new', 'dir', 'file') });
      assert.deepEqual(resolvePath('a.txt/x', place), { path: join(t.project, 'a.txt', 'x') }, 'ENOTDIR: the rest is lexical, as before');
      assert.match(resolvePath('loop1', place).unknown, /symlink loop/, 'a loop as the last name');
      assert.match(resolvePath('loop1/x', place).unknown, /symlink loop/);
      assert.deepEqual(resolvePath('/', place), { path: '/' });
      assert.deepEqual(resolvePath('/tmp', place), { path: realpathSync('/tmp') });
    } finally {
      t.cleanup();
    }
  });
});

describe('decide with paths', () => {
  test('roots are resolved at load; a root that is not absolute is a policy error naming the rule', () => {
    const t = tree();
    try {
      const place = { cwd: t.project, home: t.home };
      const p = buildPolicy({ rules: [{ paths: { args: ['/p'], within: ['~/project/link-in'] }, decision: 'allow' }] }, 'x', noEngine, place);
      assert.deepEqual(p.rules[0].paths.roots, [join(t.project, 'sub', 'deep')]);
      assert.throws(
        () =>
          buildPolicy(
            {
              rules: [
                { tool: 'a', decision: 'deny' },
                { paths: { args: ['/p'], outside: ['project'] }, decision: 'deny' },
              ],
            },
            'x',
            noEngine,
            place,
          ),
        /rule 2: "paths" root "project" is not absolute/,
      );
      assert.throws(() => buildPolicy({ rules: [{ paths: { args: ['p'], outside: ['/'] }, decision: 'deny' }] }, 'x', noEngine, place), /not a JSON Pointer/);
    } finally {
      t.cleanup();
    }
  });

  test('absent arguments name no path (within needs one); non-string and unjudgeable ones take the stricter outcome', () => {
    const t = tree();
    try {
      const place = { cwd: t.project, home: t.home };
      const allowIn = buildPolicy(
        { default: 'deny', rules: [{ paths: { args: ['/p', '/q'], within: [t.project] }, decision: 'allow' }] },
        'x',
        noEngine,
        place,
      );
      assert.equal(decide(allowIn, 't', argsOf({ p: 'a.txt', q: ['sub', 'link-in'] }), {}).decision, 'allow');
      assert.equal(decide(allowIn, 't', argsOf({ p: 'a.txt' }), {}).decision, 'allow', 'an absent /q names no path');
      const none = decide(allowIn, 't', argsOf({}), {});
      assert.equal(none.decision, 'deny', 'within, with no named path given: the stricter outcome');
      assert.equal(none.rule, null, 'the default (deny) is stricter than the rule (allow)');
      const noneDenied = decide(
        buildPolicy({ rules: [{ paths: { args: ['/p', '/q'], within: [t.project] }, decision: 'deny' }] }, 'x', noEngine, place),
        't',
        argsOf({}),
        {},
      );
      assert.equal(noneDenied.decision, 'deny', 'within deny: the rule is stricter than the default');
      assert.match(noneDenied.reason, /^none of \/p, \/q is given; taken as the stricter outcome$/);
      assert.equal(decide(allowIn, 't', argsOf({ p: 'a.txt', q: null }), {}).decision, 'deny', 'null');
      assert.equal(decide(allowIn, 't', argsOf({ p: 'a.txt', q: 5 }), {}).decision, 'deny', 'non-string');
      assert.equal(decide(allowIn, 't', argsOf({ p: 'a.txt', q: ['sub', 'link-out/secret'] }), {}).decision, 'deny', 'one element out');
      const denyOut = buildPolicy({ rules: [{ paths: { args: ['/p'], outside: [t.project] }, decision: 'deny', reason: 'fenced' }] }, 'x', noEngine, place);
      assert.equal(decide(denyOut, 't', argsOf({}), {}).decision, 'allow', 'outside, with no path given: nothing leads outside');
      const notString = decide(denyOut, 't', argsOf({ p: { path: '/etc' } }), {});
      assert.equal(notString.decision, 'deny');
      assert.match(notString.reason, /^fenced; \/p is not a string; taken as the stricter outcome$/);
      const out = decide(denyOut, 't', argsOf({ p: 'sub/rel-out/secret' }), {});
      assert.equal(out.decision, 'deny');
      assert.equal(out.reason, `fenced; /p is ${JSON.stringify(join(t.home, 'outside', 'secret'))}, outside ${JSON.stringify(t.project)}`);
      assert.equal(decide(denyOut, 't', argsOf({ p: 'sub/../a.txt' }), {}).decision, 'allow');
    } finally {
      t.cleanup();
    }
  });
});

describe('through the relay', () => {
  test('a filesystem tool fenced to ~/project: escapes are denied with the resolved path and leave zero bytes at the server', {
    timeout: TIMEOUT,
  }, async () => {
    const t = tree();
    const policyFile = join(t.home, 'policy.json');
    const policy = { rules: [{ tool: 'delete_file', paths: { args: ['/path'], outside: ['~/project'] }, decision: 'deny', reason: 'outside the project' }] };
    writeFileSync(policyFile, JSON.stringify(policy));
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', `--policy=${policyFile}`], { HOME: t.home });
    const call = (id, path) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'delete_file', arguments: { path } } });
    try {
      await c.initialize();
      const calls = {
        1: '~/project/a.txt',
        2: '~/project/../outside/secret',
        3: '~/project/link-out/secret',
        4: `${t.project}//sub///deep/./x`,
        5: pathToFileURL(join(t.project, 'sub', 'rel-out', 'secret')).href,
        6: 'file:///x/..%2F..%2Fetc/passwd',
        7: `${t.project}/a\u0000.txt`,
        8: '~/project/loop1',
        9: 'relative-to-the-servers-directory',
        10: `file://${t.project}/sub/%64eep`,
      };
      for (const [id, path] of Object.entries(calls)) c.send(call(Number(id), path));
      const answers = {};
      for (const id of Object.keys(calls)) answers[id] = (await c.waitFor((m) => m.id === Number(id), `answer to ${id}`)).result;
      const r = await c.finish();
      const reached = c.callsAtServer();
      assert.deepEqual(reached, [1, 4, 10], 'only the paths inside the project reached the server');
      for (const id of [2, 3, 5, 6, 7, 8, 9]) assert.equal(answers[id].isError, true, `call ${id}`);
      assert.match(answers[3].content[0].text, /denied by policy rule 1 \(outside the project; \/path is ".*\/outside\/secret", outside ".*\/project"\)/);
      assert.match(answers[7].content[0].text, /\/path ".*\\u0000\.txt" cannot be judged: it holds a control character; taken as the stricter outcome/);
      assert.match(answers[8].content[0].text, /symlink loop/);
      assert.equal(endOf(r.records, 2).state, 'denied');
      assert.match(endOf(r.records, 2).decision.reason, /\/path is ".*\/outside\/secret"/);
    } finally {
      c.cleanup();
    }
  });
});
