// The command lines under test. Every relay runs the same server; only what
// sits between the measuring client and that server changes.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const NODE = process.execPath;
/** The mcpguard entry under test (a live binding: `snapshotGuard` repoints it). */
export let MCPGUARD = `${ROOT}bin/mcpguard.js`;
export const ECHO_SERVER = `${ROOT}bench/fixtures/echo-server.js`;
export const COPY_RELAY = `${ROOT}bench/fixtures/copy-relay.js`;
/** The copy relay that forwards only whole lines (the floor for any relay that checks whole frames). */
export const STORE_FORWARD_RELAY = `${ROOT}bench/fixtures/store-forward-relay.js`;
export const SDK_RELAY = `${ROOT}bench/fixtures/sdk-relay.js`;
/** The copy relay plus mcpguard's validator (a live binding: `snapshotGuard` repoints it to the snapshot's copy). */
export let VALIDATE_RELAY = `${ROOT}bench/fixtures/validate-relay.js`;
/** The validator relay plus the schema check, the secrets scan and the records of a quick call: the floor of mcpguard's promises (live binding, as above). */
export let PLAIN_RELAY = `${ROOT}bench/fixtures/plain-relay.js`;
/** The copy relay after loading every module an mcpguard session loads (live binding, as above). */
export let CODE_RELAY = `${ROOT}bench/fixtures/code-relay.js`;
export const STDERR_FLOOD = `${ROOT}bench/fixtures/stderr-flood.js`;
/** A policy of 20 rules that all let the bench's echo call through, most after looking at it. */
export const POLICY_20 = `${ROOT}bench/fixtures/policy-20.json`;
export const STDERR_READER = `${ROOT}bench/fixtures/stderr-reader.js`;

/** The 20 rules of that policy: 10 fence `/path` to `project`, 10 fence `/url` to two hosts; the 10th of each is the echo tool's. */
export function fencedRules(project) {
  return [
    ...Array.from({ length: 10 }, (_, i) => ({ tool: i === 9 ? 'echo' : `other_${i}`, paths: { args: ['/path'], outside: [project] }, decision: 'deny' })),
    ...Array.from({ length: 10 }, (_, i) => ({
      tool: i === 9 ? 'echo' : `other_${i}`,
      hosts: { args: ['/url'], outside: ['docs.python.org', '*.mozilla.org'] },
      decision: 'deny',
    })),
  ];
}

/**
 * A policy of 20 rules, 10 fencing a path and 10 a URL host, one of each on
 * the echo tool (bench/policy-rules.js has the same rules, for decide() alone),
 * written under a fresh directory in `under` whose project/src exists; and the echo call
 * that names a new file there and a documentation URL, so both rules judge it
 * and let it through. null when the build under test has no path rules.
 */
export function fencedPolicy(under) {
  if (!existsSync(join(dirname(MCPGUARD), '..', 'dist', 'gate', 'paths.js'))) return null;
  const dir = mkdtempSync(join(under, 'paths-'));
  mkdirSync(join(dir, 'project', 'src'), { recursive: true });
  const rules = fencedRules(join(dir, 'project'));
  const file = join(dir, 'policy-paths-20.json');
  writeFileSync(file, JSON.stringify({ default: 'allow', rules }));
  return { file, call: { name: 'echo', arguments: { size: 64, path: join(dir, 'project', 'src', 'main.py'), url: 'https://docs.python.org/3/' } } };
}

/** mcpguard with its defaults (what a user runs), in front of `server`. */
export function guarded(server, options = []) {
  return [NODE, MCPGUARD, ...options, '--', ...server];
}

/** The four ways to reach `server` that every relay row compares. */
export function relayVariants(server = [NODE, ECHO_SERVER]) {
  return [
    { name: 'direct', label: 'direct (no relay)', argv: server },
    { name: 'copy', label: 'byte-copy relay', argv: [NODE, COPY_RELAY, ...server] },
    { name: 'mcpguard', label: 'mcpguard', argv: guarded(server) },
    { name: 'sdk', label: 'SDK stdio relay', argv: [NODE, SDK_RELAY, ...server] },
  ];
}

/**
 * Copy bin/, dist/, package.json (and the validator relay, which imports
 * dist/) into `dir` and benchmark that copy: a
 * rebuild of dist/ during a long run (npm test builds) must not change the
 * code under test halfway, or break an import mid-write.
 */
export function snapshotGuard(dir) {
  mkdirSync(dir, { recursive: true });
  for (const part of ['bin', 'dist', 'package.json', 'bench/fixtures/validate-relay.js', 'bench/fixtures/plain-relay.js', 'bench/fixtures/code-relay.js'])
    cpSync(join(ROOT, part), join(dir, part), { recursive: true });
  // Runtime dependencies (the gate's JSON Schema engine) resolve from the snapshot as from the repository.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  MCPGUARD = join(dir, 'bin', 'mcpguard.js');
  VALIDATE_RELAY = join(dir, 'bench', 'fixtures', 'validate-relay.js');
  PLAIN_RELAY = join(dir, 'bench', 'fixtures', 'plain-relay.js');
  CODE_RELAY = join(dir, 'bench', 'fixtures', 'code-relay.js');
  help = null;
  return MCPGUARD;
}

let help = null;
/** `mcpguard --help` of the build under test: which options (records, ...) exist. */
export function mcpguardHelp() {
  help ??= execFileSync(NODE, [MCPGUARD, '--help'], { encoding: 'utf8' });
  return help;
}
