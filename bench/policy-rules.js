// What deciding one call costs with 20 policy rules, by rule kind: name-only
// rules (the cost every call pays), and 20 rules of which 10 fence a path and
// 10 a URL host on the called tool (each call then resolves its path on this
// machine: the directory by realpath(3), the last name by lstat); the same
// 20 name rules with the secrets check of --secrets-in-args deny-env
// (arguments without a secret: what every call pays by default), and with a
// rate limit on the tool (a fresh session: below the limit). decide() alone,
// no relay; µs per call, p50 of rounds, each round of each build in turn
// (A B A B ...). `--before=DIR`: the dist/ of another build, measured in the
// same rounds. Run from the repo after a build:
//   taskset -c 0 node bench/policy-rules.js [--before=/path/to/other/dist]
import { lstatSync, mkdtempSync, mkdirSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fencedRules } from './lib/variants.js';

const before = process.argv.find((a) => a.startsWith('--before='))?.slice(9);
const builds = [['this build', await import('../dist/gate/policy.js')]];
if (before !== undefined) builds.push(['before', await import(pathToFileURL(join(resolve(before), 'gate', 'policy.js')).href)]);

const dir = mkdtempSync(join(tmpdir(), 'mcpguard-bench-'));
mkdirSync(join(dir, 'project', 'src'), { recursive: true });
const noEngine = () => {
  throw new Error('no engine');
};
const names = Array.from({ length: 20 }, (_, i) => ({ tool: `other_tool_${i}_*`, decision: i % 2 ? 'deny' : 'ask' }));
const fenced = fencedRules(join(dir, 'project'));
// A file to be written in the project (its directory exists, the file not yet), and an allowed URL: both rules judge, neither matches.
const args = { value: () => ({ path: join(dir, 'project', 'src', 'main.py'), url: 'https://docs.python.org/3/' }) };
const limited = [...names.slice(1), { tool: 'echo', limit: { calls: 1000, per: '1m' }, decision: 'deny' }];
const rows = [
  ['no policy rules match (20 name rules)', { rules: names }, {}],
  ['20 rules: 10 paths + 10 hosts (one of each on the tool)', { rules: fenced }, {}],
  ['20 name rules, --secrets-in-args deny-env (no secret)', { rules: names }, { secrets: 'deny-env' }],
  ['19 name rules + a limit on the tool (below it)', { rules: limited }, {}],
];
const N = 20000;
const ROUNDS = 7;
for (const [label, raw, context] of rows) {
  const policies = builds.map(([, mod]) => mod.buildPolicy(raw, 'bench', noEngine));
  const rounds = builds.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    builds.forEach(([, mod], b) => {
      const start = process.hrtime.bigint();
      for (let i = 0; i < N; i++) mod.decide(policies[b], 'echo', args, {}, context);
      rounds[b].push(Number(process.hrtime.bigint() - start) / 1000 / N);
    });
  }
  const p50 = rounds.map((r) => r.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)].toFixed(2));
  process.stdout.write(`${label}: ${builds.map(([name], b) => `${p50[b]} µs (${name})`).join(', ')} per call, p50 of ${ROUNDS} rounds × ${N}\n`);
}
// The floor of a path rule without a cache: the two system calls it makes for this call (realpath(3) of the
// directory, lstat of the new name), nothing else. Against a call's p50 on the relay, this is what no code change removes.
{
  const path = args.value().path;
  const parent = dirname(path);
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      realpathSync.native(parent);
      lstatSync(path, { throwIfNoEntry: false });
    }
    rounds.push(Number(process.hrtime.bigint() - start) / 1000 / N);
  }
  const p50 = rounds.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)].toFixed(2);
  process.stdout.write(`the floor of one path rule: realpath(3) of the directory + lstat of the name: ${p50} µs per call, p50 of ${ROUNDS} rounds × ${N}\n`);
}
rmSync(dir, { recursive: true, force: true });
