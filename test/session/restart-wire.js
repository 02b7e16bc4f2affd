// A raw-wire client for the --restart tests: mcpguard in front of the crashy
// fixture, with every line it writes kept in order.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fixture, readLines, runGuardUngated, tempDir } from '../helpers/run.js';

export const CRASHY = fixture('crashy.py');

/** Start `mcpguard [guardArgs] -- python3 crashy.py` with the fixture's state in a fresh directory. */
export function openWire(guardArgs, env = {}, { timeout = 60000 } = {}) {
  const tmp = tempDir('mcpguard-restart-');
  const state = join(tmp.dir, 'state');
  const records = join(tmp.dir, 'records');
  const run = runGuardUngated(['--record-dir', records, ...guardArgs, '--', 'python3', CRASHY], { keepOpen: true, timeout, env: { STATE_DIR: state, ...env } });
  const messages = [];
  const waiters = new Map();
  let buffered = '';
  run.child.stdout.on('data', (chunk) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf('\n')) !== -1) {
      const message = JSON.parse(buffered.slice(0, nl));
      buffered = buffered.slice(nl + 1);
      messages.push(message);
      if (message.id !== undefined && !('method' in message)) waiters.get(message.id)?.(message);
    }
  });
  let next = 1;
  const wire = {
    run,
    state,
    records,
    messages,
    tmp,
    send(value) {
      run.child.stdin.write(`${JSON.stringify(value)}\n`);
    },
    /** Send a request; resolves with its answer (the first one: the tests count the rest themselves). */
    call(method, params, id = next++) {
      const answered = new Promise((resolve) => waiters.set(id, resolve));
      wire.send({ jsonrpc: '2.0', id, method, params });
      return answered;
    },
    async initialize(version = '2025-06-18') {
      const answer = await wire.call('initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'restart-test', version: '1' } });
      wire.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      return answer;
    },
    tool(name, args = {}) {
      return wire.call('tools/call', { name, arguments: args });
    },
    /** Close stdin and wait for mcpguard's exit. */
    async close() {
      run.child.stdin.end();
      return run.done;
    },
    /** Every line each generation of the fixture read, parsed: [{gen, pid, line: object|string}]. */
    lines() {
      return readLines(join(state, 'lines')).map((l) => {
        const entry = JSON.parse(l);
        try {
          entry.message = JSON.parse(entry.line);
        } catch {
          entry.message = null;
        }
        return entry;
      });
    },
    starts() {
      return readLines(join(state, 'starts')).map(Number);
    },
    /** The fixture's pids and orphans still alive (not zombies). */
    alive() {
      const pids = [...(existsSync(join(state, 'pids')) ? readdirSync(join(state, 'pids')).map(Number) : []), ...readLines(join(state, 'orphans')).map(Number)];
      return pids.filter(isAlive);
    },
    /** Kill whatever the fixture left (after hook). */
    cleanup() {
      for (const pid of wire.alive())
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      try {
        process.kill(run.child.pid, 'SIGKILL');
      } catch {}
      tmp.cleanup();
    },
  };
  return wire;
}

export function isAlive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) [ZX]/.test(stat);
  } catch {
    try {
      process.kill(pid, 0);
      return !existsSync('/proc/self/stat');
    } catch {
      return false;
    }
  }
}

/** Poll `check` until it is true or `ms` pass. */
export async function until(check, ms = 20000, what = 'condition') {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Client requests (not mcpguard's own) each generation read, as [gen, id, method]. */
export function clientRequests(lines) {
  return lines
    .filter((e) => e.message?.id !== undefined && e.message.method && !String(e.message.id).startsWith('mcpguard-'))
    .map((e) => [e.gen, e.message.id, e.message.method]);
}

/** Live processes whose parent is `ppid` and whose command line holds `match` (Linux). */
export function childrenOf(ppid, match) {
  const found = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (parent === ppid && readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(match) && isAlive(Number(name))) found.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return found;
}
