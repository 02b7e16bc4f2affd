// What the numbers were measured on.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type } from 'node:os';

export function describeMachine() {
  const list = cpus();
  const model = list[0]?.model?.replace(/\s+/g, ' ').trim() ?? 'unknown cpu';
  let npm = '';
  try {
    npm = execFileSync('npm', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
  } catch {
    npm = 'n/a';
  }
  const pinned = allowedCpus();
  return `${list.length} cpus (${model})${pinned === null ? '' : `, this run on cpus ${pinned} only (its client, relays and servers inherit that)`}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${type()} ${release()}, node ${process.version}, npm ${npm}`;
}

/**
 * The CPUs this process may run on, when that is fewer than the machine has
 * (`taskset -c 0 node bench/run.js`): null when it may use them all, or where
 * /proc does not say.
 */
export function allowedCpus() {
  try {
    const line = readFileSync('/proc/self/status', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Cpus_allowed_list:'));
    if (line === undefined) return null;
    const list = line.slice('Cpus_allowed_list:'.length).trim();
    let count = 0;
    for (const part of list.split(',')) {
      const [a, b] = part.split('-').map(Number);
      count += b === undefined ? 1 : b - a + 1;
    }
    return count < cpus().length ? list : null;
  } catch {
    return null;
  }
}

/** The 1-minute load average: other work on the machine shows up here. */
export function load() {
  return loadavg()[0].toFixed(2);
}

/** The commit under test, and whether src/ differs from it. */
export function describeBuild(root) {
  const git = (...args) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 5000 }).trim();
  try {
    const dirty = git('status', '--porcelain', '--', 'src').length > 0;
    return `git ${git('rev-parse', '--short', 'HEAD')}${dirty ? ' + uncommitted changes in src/' : ''}`;
  } catch {
    return 'not a git checkout';
  }
}
