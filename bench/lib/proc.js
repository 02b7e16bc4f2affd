// Spawning and ending the processes under test. Every process a benchmark
// starts is ended by the benchmark: stdin closed, then SIGKILL after a bound.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const started = new Set();
/** Records (once the records issue lands) go here, never to the user's home. */
const benchHome = mkdtempSync(join(tmpdir(), 'mcpguard-bench-'));
export const BENCH_ENV = { ...process.env, MCPGUARD_HOME: benchHome, XDG_STATE_HOME: benchHome };
export { benchHome };

/** spawn() that remembers the child so `killAll` can clean up after a failure. */
export function launch(argv, { stdio = ['pipe', 'pipe', 'ignore'], env = BENCH_ENV } = {}) {
  const [command, ...args] = argv;
  const child = spawn(command, args, { stdio, env });
  started.add(child);
  child.once('exit', () => started.delete(child));
  child.stdin?.on('error', () => {}); // EPIPE from a child that already left
  return child;
}

/** Resolves with {code, signal, at} when the child exits (at: hrtime ns when the event arrived). */
export function exited(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode, at: process.hrtime.bigint() });
  }
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal, at: process.hrtime.bigint() }));
  });
}

/** Close stdin and wait up to `ms` for the exit; SIGKILL after that. */
export async function stop(child, ms = 5000) {
  child.stdin?.end();
  let timer;
  const bounded = new Promise((resolve) => {
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(null);
    }, ms);
  });
  const result = await Promise.race([exited(child), bounded]);
  clearTimeout(timer);
  return result ?? exited(child);
}

/** Kill everything still running (error paths, process exit). */
export function killAll() {
  for (const child of started) child.kill('SIGKILL');
}
