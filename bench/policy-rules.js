// What deciding one call costs with 20 policy rules, by rule kind: name-only
// rules (the cost every call pays), and 20 rules of which 10 fence a path and
// 10 a URL host on the called tool (each call then resolves its path on this
// machine: lstat per component); the same 20 name rules with the secrets check
// of --secrets-in-args deny-env (arguments without a secret: what every call
// pays by default), and with a rate limit on the tool (a fresh session: below
// the limit). decide() alone, no relay; µs per call, p50 of rounds. Run from
// the repo after a build:
//   taskset -c 0 node bench/policy-rules.js
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildPolicy, decide } from '../dist/gate/policy.js';

const dir = mkdtempSync(join(tmpdir(), 'mcpguard-bench-'));
mkdirSync(join(dir, 'project', 'src'), { recursive: true });
const noEngine = () => {
  throw new Error('no engine');
};
const names = Array.from({ length: 20 }, (_, i) => ({ tool: `other_tool_${i}_*`, decision: i % 2 ? 'deny' : 'ask' }));
const fenced = [
  ...Array.from({ length: 10 }, (_, i) => ({
    tool: i === 9 ? 'echo' : `other_${i}`,
    paths: { args: ['/path'], outside: [join(dir, 'project')] },
    decision: 'deny',
  })),
  ...Array.from({ length: 10 }, (_, i) => ({
    tool: i === 9 ? 'echo' : `other_${i}`,
    hosts: { args: ['/url'], outside: ['docs.python.org', '*.mozilla.org'] },
    decision: 'deny',
  })),
];
const args = { value: () => ({ path: join(dir, 'project', 'src', 'main.py'), url: 'https://docs.python.org/3/' }) };
const limited = [...names.slice(1), { tool: 'echo', limit: { calls: 1000, per: '1m' }, decision: 'deny' }];
const rows = [
  ['no policy rules match (20 name rules)', buildPolicy({ rules: names }, 'bench', noEngine), {}],
  ['20 rules: 10 paths + 10 hosts (one of each on the tool)', buildPolicy({ rules: fenced }, 'bench', noEngine), {}],
  ['20 name rules, --secrets-in-args deny-env (no secret)', buildPolicy({ rules: names }, 'bench', noEngine), { secrets: 'deny-env' }],
  ['19 name rules + a limit on the tool (below it)', buildPolicy({ rules: limited }, 'bench', noEngine), {}],
];
const N = 20000;
for (const [label, policy, context] of rows) {
  const rounds = [];
  for (let r = 0; r < 7; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < N; i++) decide(policy, 'echo', args, {}, context);
    rounds.push(Number(process.hrtime.bigint() - start) / 1000 / N);
  }
  rounds.sort((a, b) => a - b);
  process.stdout.write(`${label}: ${rounds[3].toFixed(2)} µs per call (p50 of 7 rounds × ${N})\n`);
}
rmSync(dir, { recursive: true, force: true });
