// `mcpguard check ...args` as a test runs it: the planted secrets in its
// environment, both outputs scanned for them, killed by killChecks().
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { BIN, PLANTED_VARS, assertNoPlanted } from './run.js';

const started = new Set();

/** Kill every check still running (an `after` hook). */
export function killChecks() {
  for (const child of started) {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {}
  }
  started.clear();
}

/** Run `mcpguard check ...args`; resolves with the exit code and both outputs. */
export function check(args, { env = {}, timeout = 60000 } = {}) {
  // Without the runner's marker: neither mcpguard nor the servers are test files.
  const { NODE_TEST_CONTEXT, ...inherited } = process.env;
  const child = spawn(process.execPath, [BIN, 'check', ...args], { env: { ...inherited, ...PLANTED_VARS, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(child);
  const out = [];
  const err = [];
  child.stdout.on('data', (c) => out.push(c));
  child.stderr.on('data', (c) => err.push(c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {}
      reject(new Error(`check ${args.join(' ')} did not finish within ${timeout} ms; stderr: ${Buffer.concat(err)}`));
    }, timeout);
    child.on('close', (code) => {
      clearTimeout(timer);
      started.delete(child);
      try {
        assertNoPlanted(Buffer.concat(err), `the stderr of check ${args.join(' ')}`);
        assertNoPlanted(Buffer.concat(out), `the report of check ${args.join(' ')}`, { envOnly: true });
      } catch (error) {
        reject(error);
        return;
      }
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/** Run with --json; returns the parsed report, its last run, and that run's violation messages. */
export async function checkJson(args, options) {
  const r = await check(['--json', ...args], options);
  const lines = r.stdout.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, `one JSON line on stdout, got: ${r.stdout}`);
  const report = JSON.parse(lines[0]);
  assert.equal(report.exit_code, r.code);
  const run = report.runs.at(-1);
  return { ...r, report, run, messages: run ? run.violations.map((v) => v.message) : [] };
}
