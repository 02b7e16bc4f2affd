// Restart latency: from the crash of the server (seen as the crashed call's
// answer) to the first call answered by the new generation. Runs mcpguard
// --restart on-failure in front of test/fixtures/crashy.py over a raw wire,
// crashes it N times, and prints each figure in order, the median and the spread.
// With --restart-delay > 0 the figures grow (the backoff doubles within the window).
//   node bench/restart-latency.mjs [--rounds N] [--restart-delay MS]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i === -1 ? fallback : argv[i + 1];
};
const rounds = Number(opt('rounds', 10));
const delay = opt('restart-delay', '0');

const dir = mkdtempSync(join(tmpdir(), 'mcpguard-restart-bench-'));
const guard = spawn(
  process.execPath,
  [
    join(ROOT, 'bin', 'mcpguard.js'),
    '--records',
    'off',
    '--validate-args',
    'off',
    '--session-summary',
    'off',
    '--restart',
    'on-failure',
    '--max-restarts',
    String(rounds + 1),
    '--restart-delay',
    delay,
    '--',
    'python3',
    join(ROOT, 'test', 'fixtures', 'crashy.py'),
  ],
  { env: { ...process.env, STATE_DIR: dir }, stdio: ['pipe', 'pipe', 'ignore'] },
);
const killer = setTimeout(() => guard.kill('SIGKILL'), 120000);

const waiting = new Map();
let buffered = '';
guard.stdout.on('data', (chunk) => {
  buffered += chunk;
  let nl;
  while ((nl = buffered.indexOf('\n')) !== -1) {
    const message = JSON.parse(buffered.slice(0, nl));
    buffered = buffered.slice(nl + 1);
    if (message.id !== undefined) waiting.get(message.id)?.(message);
  }
});
let next = 1;
function call(method, params) {
  const id = next++;
  return new Promise((resolve) => {
    waiting.set(id, (m) => resolve({ m, at: performance.now() }));
    guard.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
  });
}

await call('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
guard.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
await call('tools/list', {});
const figures = [];
for (let i = 0; i < rounds; i++) {
  const crashed = await call('tools/call', { name: 'crash', arguments: { code: 3 } });
  if (crashed.m.error?.data?.state !== 'unknown_after_dispatch') throw new Error(`round ${i}: ${JSON.stringify(crashed.m)}`);
  const answered = await call('tools/call', { name: 'echo', arguments: { text: 'after' } });
  if (answered.m.result === undefined) throw new Error(`round ${i}: ${JSON.stringify(answered.m)}`);
  figures.push(answered.at - crashed.at);
}
guard.stdin.end();
await new Promise((resolve) => guard.once('exit', resolve));
clearTimeout(killer);
rmSync(dir, { recursive: true, force: true });
const ms = (x) => `${x.toFixed(0)} ms`;
// In order: within --restart-window each restart waits about twice as long as the one before.
console.log(`per crash, in order: ${figures.map(ms).join(', ')}`);
figures.sort((a, b) => a - b);
console.log(
  `restart latency (--restart-delay ${delay}, ${rounds} crashes): median ${ms(figures[Math.floor(figures.length / 2)])}, min ${ms(figures[0])}, max ${ms(figures.at(-1))}`,
);
