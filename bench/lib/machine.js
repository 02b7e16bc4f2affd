// What the numbers were measured on.
import { execFileSync } from 'node:child_process';
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
  return `${list.length} cpus (${model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${type()} ${release()}, node ${process.version}, npm ${npm}`;
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
