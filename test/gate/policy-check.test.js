// `mcpguard policy check` (the lint of gate/policy-check.ts) and `policy test
// --tools`: glob containment against brute-force matching with the policy's
// own RegExps, the lint's claims against a brute-force first-match walk, and
// the real binary for exit codes, escaped output, --json and the tools file.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, killStarted, runGuard, tempDir } from '../helpers/run.js';
import { conversation } from '../helpers/conversation.js';
import { buildPolicy } from '../../dist/gate/policy.js';
import { globCovers, lintPolicy } from '../../dist/gate/policy-check.js';

after(killStarted);

const TIMEOUT = 20000;
const noEngine = () => () => true; // a `when` that could match anything: the lint never runs it

function random(seed) {
  return (n) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
}

const regexOf = (pattern) => buildPolicy({ rules: [{ tool: pattern, decision: 'deny' }] }, 'p', noEngine).rules[0].tool;

/** Every string over {a, b, c} of length 0-2, a run of c longer than `wide`, and surrogate halves and a whole pair. */
function fillers(wide) {
  const out = [''];
  for (const x of 'abc') {
    out.push(x);
    for (const y of 'abc') out.push(x + y);
  }
  return [...out, 'c'.repeat(wide.length + 1), '\ud83d', '\ude00', '😀'];
}

/** Every name `narrow` matches with each `*` replaced by a filler. */
function instances(narrow, fill) {
  let names = [''];
  for (const ch of narrow) names = ch === '*' ? names.flatMap((n) => fill.map((f) => n + f)) : names.map((n) => n + ch);
  return names;
}

describe('glob containment', () => {
  test('globCovers agrees with brute-force matching by the rule RegExp on 4000 random pairs (never claims a cover that a name breaks)', () => {
    const next = random(7);
    const alphabet = ['a', 'b', '*', '*', '😀'];
    const pattern = (max) => Array.from({ length: 1 + next(max) }, () => alphabet[next(alphabet.length)]).join('');
    let covers = 0;
    for (let i = 0; i < 4000; i++) {
      const wide = pattern(5);
      let narrow = pattern(5);
      while ((narrow.match(/\*+/g) ?? []).length > 2) narrow = narrow.replace('*', 'a');
      const re = regexOf(wide);
      const names = instances(narrow, fillers(wide));
      const brute = names.every((n) => re.test(n));
      assert.equal(globCovers(wide, narrow), brute, `${JSON.stringify(wide)} covers ${JSON.stringify(narrow)}?`);
      if (brute) covers++;
    }
    assert.ok(covers > 200 && covers < 3800, `covers ${covers}`);
  });

  test('the cases people write', () => {
    assert.equal(globCovers('*', 'anything_*'), true);
    assert.equal(globCovers('read_*', 'read_file'), true);
    assert.equal(globCovers('read_*', 'read_*_file'), true);
    assert.equal(globCovers('*_file', 'read_*'), false, 'read_dir');
    assert.equal(globCovers('read_file', 'read_*'), false);
    assert.equal(globCovers('a*a', 'a'), false, 'one a is not two');
    assert.equal(globCovers('**x', '*x'), true);
    assert.equal(globCovers('x'.repeat(2000), '*'.repeat(1) + 'x'.repeat(2000)), null, 'too large: no claim');
  });
});

describe('lintPolicy', () => {
  test('its unreachable and shadowed rules are never reached by any name, whatever the conditions say (brute force over 600 random policies)', () => {
    const next = random(11);
    const alphabet = ['a', 'b', '*'];
    const glob = () => Array.from({ length: 1 + next(3) }, () => alphabet[next(3)]).join('');
    const conditions = [{}, {}, { when: {} }, { paths: { args: ['/p'], within: ['/tmp'] } }, { hosts: { args: ['/u'], within: ['x.org'] } }];
    const names = instances('*', fillers('xxxx')).concat(instances('**', ['', 'a', 'b', 'ab', 'ba', 'c']));
    let claims = 0;
    for (let p = 0; p < 600; p++) {
      const raw = {
        rules: Array.from({ length: 2 + next(5) }, () => {
          const rule = { ...conditions[next(conditions.length)], decision: 'deny' };
          if (next(6) !== 0) rule.tool = glob();
          return rule;
        }),
      };
      const policy = buildPolicy(raw, 'p', noEngine);
      for (const f of lintPolicy(policy, raw, null)) {
        claims++;
        // Reached by a name: it matches the rule, and no earlier rule without a condition matches it.
        const reached = names.some(
          (n) =>
            (policy.rules[f.rule].tool?.test(n) ?? true) &&
            !policy.rules
              .slice(0, f.rule)
              .some((r, i) => Object.keys(raw.rules[i]).every((k) => ['tool', 'decision'].includes(k)) && (r.tool?.test(n) ?? true)),
        );
        assert.equal(reached, false, `${JSON.stringify(raw)}: ${f.message}`);
      }
    }
    assert.ok(claims > 300, `claims ${claims}`);
  });

  test('a condition never makes a rule unreachable: when, paths, hosts, annotations, and keys it does not know', () => {
    const raw = {
      rules: [
        { tool: '*', when: { required: ['x'] }, decision: 'deny' },
        { tool: '*', paths: { args: ['/p'], outside: ['/tmp'] }, decision: 'deny' },
        { tool: '*', hosts: { args: ['/u'], outside: ['x.org'] }, decision: 'deny' },
        { annotations: { destructiveHint: true }, decision: 'ask' },
        { tool: 'exec', decision: 'ask' },
      ],
    };
    assert.deepEqual(lintPolicy(buildPolicy(raw, 'p', noEngine), raw, null), []);
    // A key of a later version (a rate limit) is a condition too: the raw rule has it, the built one does not know it.
    const later = {
      rules: [
        { tool: '*', decision: 'deny' },
        { tool: 'exec', decision: 'ask' },
      ],
    };
    const built = buildPolicy(later, 'p', noEngine);
    assert.deepEqual(lintPolicy(built, { rules: [{ tool: '*', limit: { calls: 3, per: '1m' }, decision: 'deny' }, later.rules[1]] }, null), []);
    assert.deepEqual(
      lintPolicy(built, { rules: [later.rules[0], { tool: 'exec', timeout: '30s', decision: 'ask' }] }, null),
      [],
      'a rule with a key it does not know is not reported either',
    );
  });
});

async function policy(args, cwd) {
  const r = await runGuard(['policy', ...args], { timeout: TIMEOUT, cwd }).done;
  return { code: r.code, out: r.stdout.toString(), err: r.stderr };
}

const TOOLS = [
  {
    name: 'read_file',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    annotations: { readOnlyHint: true },
  },
  { name: 'delete_file', inputSchema: { type: 'object' }, annotations: { destructiveHint: true } },
  { name: 'fetch\u001b[2J', inputSchema: { type: 'object' } },
];

describe('mcpguard policy check', () => {
  test('exit 0 clean, 1 with findings (text escaped, --json an array of {rule, kind, message}), 125 for a bad file or option', {
    timeout: TIMEOUT * 8,
  }, async () => {
    const t = tempDir();
    try {
      const clean = join(t.dir, 'clean.json');
      writeFileSync(clean, JSON.stringify({ default: 'ask', rules: [{ tool: 'read_*', decision: 'allow' }] }));
      const file = join(t.dir, 'policy.json');
      writeFileSync(
        file,
        JSON.stringify({
          rules: [
            { tool: 'read_*', decision: 'allow' },
            { tool: 'read_file', decision: 'deny' },
            { tool: 'delet_*', decision: 'deny' },
            { annotations: { destructiveHint: true }, decision: 'ask' },
            { tool: '*', decision: 'allow' },
            { tool: 'evil\u001b[2J', decision: 'deny' },
          ],
        }),
      );
      const r0 = await policy(['check', clean]);
      assert.equal(r0.code, 0, r0.err);
      assert.match(r0.out, /no findings \(1 rule\)/);

      const text = await policy(['check', file]);
      assert.equal(text.code, 1, text.err);
      assert.ok(!text.out.includes('\u001b'), 'no raw ESC reaches the terminal');
      assert.match(text.out, /^shadowed: rule 2 \("read_file", deny\) is never reached: rule 1 \("read_\*", allow\)/m);
      assert.match(text.out, /^unreachable: rule 6 is never reached: rule 5 \("\*", allow\)/m);

      const lists = join(t.dir, 'tools.json');
      writeFileSync(lists, JSON.stringify({ jsonrpc: '2.0', id: 1, result: { tools: TOOLS } }));
      const json = await policy(['check', file, '--tools', lists, '--json']);
      assert.equal(json.code, 1, json.err);
      const findings = JSON.parse(json.out);
      assert.deepEqual(
        findings.map((f) => [f.rule, f.kind]),
        [
          [1, 'shadowed'],
          [2, 'unmatched'],
          [5, 'unreachable'],
          [5, 'unmatched'],
        ],
      );
      for (const f of findings) assert.deepEqual(Object.keys(f), ['rule', 'kind', 'message']);
      assert.ok(!json.out.includes('\u001b'));

      // Tools no rule names, when the default allows: the result object and a bare array are read alike.
      const open = join(t.dir, 'open.json');
      writeFileSync(
        open,
        JSON.stringify({
          rules: [
            { tool: 'read_*', decision: 'allow' },
            { annotations: { destructiveHint: true }, decision: 'ask' },
          ],
        }),
      );
      for (const body of [{ tools: TOOLS }, TOOLS]) {
        writeFileSync(lists, JSON.stringify(body));
        const r = await policy(['check', open, '--tools', lists, '--json']);
        assert.equal(r.code, 1, r.err);
        assert.deepEqual(JSON.parse(r.out), [
          {
            rule: null,
            kind: 'default_only',
            tool: 'fetch\u001b[2J',
            message: 'tool "fetch\\u001b[2J" is decided by the default (allow) alone: no rule names it',
          },
        ]);
      }

      const bad = [
        [['check'], /policy check takes one policy FILE/],
        [['check', join(t.dir, 'missing.json')], /cannot read .*ENOENT/],
        [['check', file, '--tool', 'x'], /--tool is an option of policy test/],
        [['check', file, '--tools', join(t.dir, 'missing.json')], /--tools cannot read/],
        [['check', file, '--tools', clean], /--tools .*expected a tools\/list result/],
      ];
      writeFileSync(join(t.dir, 'dup.json'), '[{"name":"a"},{"name":"a"}]');
      bad.push([['check', file, '--tools', join(t.dir, 'dup.json')], /the tool "a" is listed twice/]);
      writeFileSync(join(t.dir, 'rule.json'), '{"rules":[{"tool":"x","decision":"maybe"}]}');
      bad.push([['check', join(t.dir, 'rule.json')], /rule 1: "decision" must be one of allow, ask, deny, got "maybe"/]);
      for (const [args, message] of bad) {
        const r = await policy(args);
        assert.equal(r.code, 125, args.join(' '));
        assert.match(r.err, message);
        assert.equal(r.out, '');
      }
    } finally {
      t.cleanup();
    }
  });
});

describe('mcpguard policy test --tools', () => {
  test("the listed tool's inputSchema first (rejected as the gate rejects), then its annotations; a tool not listed is refused", {
    timeout: TIMEOUT * 6,
  }, async () => {
    const t = tempDir();
    try {
      const file = join(t.dir, 'policy.json');
      writeFileSync(file, JSON.stringify({ rules: [{ annotations: { destructiveHint: true }, decision: 'deny', reason: 'destructive' }] }));
      const lists = join(t.dir, 'tools.json');
      writeFileSync(lists, JSON.stringify({ tools: TOOLS }));
      const one = async (...args) => {
        const r = await policy(['test', file, '--tools', lists, ...args, '--json']);
        assert.equal(r.code, 0, r.err);
        return JSON.parse(r.out);
      };
      assert.deepEqual(await one('--tool', 'delete_file'), {
        decision: 'deny',
        rule: 0,
        reason: 'destructive',
        why: 'policy rule 1 (destructive)',
      });
      assert.equal((await one('--tool', 'read_file', '--args', '{"path":"/x"}')).decision, 'allow', 'listed annotations are known: no stricter outcome');
      const rejected = await one('--tool', 'read_file', '--args', '{"path":3}');
      assert.equal(rejected.decision, 'rejected');
      assert.equal(rejected.rule, null);
      assert.match(rejected.reason, /\/path: type: must be string/);
      const text = await policy(['test', file, '--tools', lists, '--tool', 'read_file', '--args', '{}']);
      assert.equal(text.code, 0);
      assert.match(text.out, /^rejected: .*inputSchema.*\n- \/path: required: is required\n/s);

      const unlisted = await policy(['test', file, '--tools', lists, '--tool', 'nope']);
      assert.equal(unlisted.code, 125);
      assert.match(unlisted.err, /--tool "nope" is not in --tools '.*tools\.json' \(it lists 3: "read_file", "delete_file", "fetch\\u001b\[2J"\)/);
      const both = await policy(['test', file, '--tools', lists, '--tool', 'read_file', '--annotations', '{}']);
      assert.equal(both.code, 125);
      assert.match(both.err, /--annotations and --tools/);
    } finally {
      t.cleanup();
    }
  });
});

describe('policy test --tools against the relay', () => {
  test('each call gets the outcome the relay gives it behind the server that listed the tools: dispatched, rejected (the schema before the policy), denied', {
    timeout: TIMEOUT * 6,
  }, async () => {
    const t = tempDir();
    const file = join(t.dir, 'policy.json');
    writeFileSync(file, JSON.stringify({ rules: [{ annotations: { destructiveHint: true }, decision: 'deny', reason: 'destructive' }] }));
    const c = conversation(['python3', fixture('gate-server.py')], ['--validate-args=on', `--policy=${file}`]);
    try {
      await c.initialize({ jsonrpc: '2.0', id: 'list', method: 'tools/list' });
      // The whole response, saved as a person would save it.
      const lists = join(t.dir, 'tools.json');
      writeFileSync(lists, JSON.stringify(await c.waitFor((m) => m.id === 'list', 'tools/list answer')));
      const calls = [
        ['echo', { text: 'hi' }],
        ['echo', { text: 3 }],
        ['echo', {}],
        ['delete_file', { path: 'x' }],
        ['delete_file', {}],
        ['exec', { command: 'ls', cwd: ['not', 'a', 'string'] }],
        ['exec', { command: 'ls' }],
      ];
      for (const [i, [name, args]] of calls.entries()) c.send({ jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name, arguments: args } });
      const answers = [];
      for (let i = 0; i < calls.length; i++) answers.push((await c.waitFor((m) => m.id === i + 1, `answer to ${i + 1}`)).result);
      await c.finish();
      const reached = new Set(c.callsAtServer());
      const outcomes = [];
      for (const [i, [name, args]] of calls.entries()) {
        const r = await policy(['test', file, '--tools', lists, '--tool', name, '--args', JSON.stringify(args), '--json']);
        assert.equal(r.code, 0, r.err);
        const said = JSON.parse(r.out);
        const relay = reached.has(i + 1) ? 'dispatched' : answers[i]._meta['io.mcpguard/refused'].state;
        outcomes.push([said.decision, relay]);
        if (said.decision !== 'allow') assert.ok(answers[i].content[0].text.includes(said.reason), `${name}: the relay says ${answers[i].content[0].text}`);
      }
      assert.deepEqual(outcomes, [
        ['allow', 'dispatched'],
        ['rejected', 'rejected'],
        ['rejected', 'rejected'],
        ['deny', 'denied'],
        ['rejected', 'rejected'],
        ['rejected', 'rejected'],
        ['allow', 'dispatched'],
      ]);
    } finally {
      c.cleanup();
      t.cleanup();
    }
  });
});
