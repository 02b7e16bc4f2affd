// Helpers for tests that run the real mcpguard binary against real children.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin', 'mcpguard.js');
export const FIXTURES = join(ROOT, 'test', 'fixtures');
export const fixture = (name) => join(FIXTURES, name);

// Every mcpguard a test starts keeps its records in this process's own temporary
// home, never in the user's ~/.local/state (tests that inspect records pass --record-dir).
if (!process.env.MCPGUARD_HOME) {
  process.env.MCPGUARD_HOME = mkdtempSync(join(tmpdir(), 'mcpguard-home-'));
  const home = process.env.MCPGUARD_HOME;
  process.on('exit', () => rmSync(home, { recursive: true, force: true }));
}

const started = new Set();

/** Kill every process a test started and is still running (call from after/afterEach). */
export function killStarted() {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) {
      try { process.kill(child.pid, 'SIGKILL'); } catch {}
    }
  }
  started.clear();
}

/**
 * Run `command args` with `input` written to stdin (then closed unless keepOpen),
 * collect stdout/stderr as raw Buffers. Rejects after `timeout` ms (and kills it);
 * killStarted() kills it too if the test ends first.
 */
export function runCommand(command, args, { input = '', env = {}, timeout = 20000, keepOpen = false, cwd } = {}) {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'], cwd });
  started.add(child);
  const out = [];
  const err = [];
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.on('data', (c) => err.push(c));
  child.stdin.on('error', () => {});
  if (input) child.stdin.write(input);
  if (!keepOpen) child.stdin.end();
  const done = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try { process.kill(child.pid, 'SIGKILL'); } catch {}
      reject(new Error(`${[command, ...args].join(' ')} did not finish within ${timeout} ms; stderr: ${Buffer.concat(err).toString()}`));
    }, timeout);
    child.on('error', (error) => {
      clearTimeout(timer);
      started.delete(child);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      started.delete(child);
      resolve({ code, signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
  return { child, done };
}

/** Run the repository's `mcpguard [...args]` (see runCommand). */
export function runGuard(args, options = {}) {
  return runCommand(process.execPath, [BIN, ...args], options);
}

/** A temporary directory removed by the returned cleanup. */
export function tempDir(prefix = 'mcpguard-test-') {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function readLines(path) {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter((l) => l.length > 0);
}

/** Frames as JSON lines. */
export const frame = (value) => `${JSON.stringify(value)}\n`;

/** The session_end JSON line mcpguard prints on stderr. */
export function sessionEnd(stderr) {
  const line = stderr.split('\n').find((l) => l.startsWith('{"mcpguard":"session_end"'));
  return line ? JSON.parse(line) : null;
}
