// Idle memory: the resident set (VmRSS) of the process a client talks to,
// while its session is open and nothing happens, against a bare `node`
// process doing nothing on the same machine. Each relay gets a session
// (initialize, tools/list, 3 small calls), then SETTLE_MS of quiet, then its
// RSS is read; then 2,000 more calls (the JIT has compiled the hot path) and
// SETTLE_MS more, and it is read again. The byte-copy relay is the floor for
// any Node relay: it loads nothing but spawns a child and copies bytes.
// RSS counts the Node binary's pages a process has touched (shared with every
// other Node process, but resident), so code run once (V8's optimising
// compiler, OpenSSL, spawn) shows here as much as memory allocated.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { interleave, roundName } from './interleave.js';
import { benchHome, launch, stop } from './proc.js';
import { Peer } from './rpc.js';
import { readMemory } from './rss.js';
import { median, pairedRatio } from './stats.js';
import { line, num, ratioText } from './table.js';
import { CODE_RELAY, ECHO_SERVER, NODE, relayVariants } from './variants.js';

const SETTLE_MS = 2000;
const SMALL = { name: 'echo', arguments: { size: 64 } };
const MORE_CALLS = 2000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** RSS (MiB) of a relay's idle session: after 3 calls, then after 2,000 more. */
async function idleSession(argv) {
  const child = launch(argv);
  try {
    const peer = new Peer(child);
    await peer.initialize();
    await peer.call('tools/list', {});
    for (let i = 0; i < 3; i++) await peer.call('tools/call', SMALL);
    await sleep(SETTLE_MS);
    const first = readMemory(child.pid);
    for (let i = 0; i < MORE_CALLS; i++) await peer.call('tools/call', SMALL);
    await sleep(SETTLE_MS);
    const warm = readMemory(child.pid);
    return { short: first.rssKiB / 1024, warm: warm.rssKiB / 1024 };
  } finally {
    await stop(child);
  }
}

/** RSS (MiB) of a bare `node` that does nothing, read after the same quiet time. */
async function bareNode() {
  const child = launch([NODE, '-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  try {
    await sleep(SETTLE_MS);
    const rss = readMemory(child.pid).rssKiB / 1024;
    return { short: rss, warm: rss };
  } finally {
    child.kill('SIGKILL');
    await stop(child);
  }
}

/** As many ES modules as mcpguard has loaded by then (~125), each empty: what loading them costs a process that does nothing else. */
const ESM_MODULES = 125;
function esmProgram() {
  const dir = join(benchHome, 'esm-floor');
  mkdirSync(join(dir, 'dist', 'layer'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
  const imports = [];
  for (let i = 0; i < ESM_MODULES; i++) {
    writeFileSync(join(dir, 'dist', 'layer', `m${i}.js`), `export const m${i} = ${i};\n`);
    imports.push(`import './dist/layer/m${i}.js';`);
  }
  writeFileSync(join(dir, 'main.js'), `${imports.join('\n')}\nsetInterval(() => {}, 1 << 30);\n`);
  return join(dir, 'main.js');
}

/** RSS (MiB) of a `node` that loaded ESM_MODULES empty modules and does nothing. */
async function esmFloor(main) {
  const child = launch([NODE, main], { stdio: 'ignore' });
  try {
    await sleep(SETTLE_MS);
    const rss = readMemory(child.pid).rssKiB / 1024;
    return { short: rss, warm: rss };
  } finally {
    child.kill('SIGKILL');
    await stop(child);
  }
}

export async function idleRows({ rounds, warmupRounds = 0 }, progress) {
  const main = esmProgram();
  const variants = [
    { name: 'bare', label: 'bare `node` (nothing to do)', run: bareNode },
    { name: 'esm', label: `${ESM_MODULES} empty ES modules loaded, nothing to do`, run: () => esmFloor(main) },
    ...relayVariants()
      .filter((v) => v.name !== 'direct')
      .map((v) => ({ ...v, run: () => idleSession(v.argv) })),
  ];
  // The copy relay with mcpguard's modules loaded and unused: between it and the copy relay is mcpguard's code, above it its running state.
  if (existsSync(CODE_RELAY)) {
    const argv = [NODE, CODE_RELAY, NODE, ECHO_SERVER];
    variants.splice(3, 0, { name: 'code', label: "byte-copy relay + mcpguard's modules loaded, unused", argv, run: () => idleSession(argv) });
  }
  // MCPGUARD_BENCH_BEFORE=path/to/bin/mcpguard.js: another build (the one before a change) interleaved in the same rounds.
  const before = process.env.MCPGUARD_BENCH_BEFORE;
  if (before !== undefined) {
    const argv = [NODE, before, '--', NODE, ECHO_SERVER];
    variants.push({ name: 'before', label: 'mcpguard before (MCPGUARD_BENCH_BEFORE)', argv, run: () => idleSession(argv) });
  }
  const samples = await interleave(
    variants,
    rounds,
    (v, r) => {
      progress(`idle ${v.name} ${roundName(r, rounds)}`);
      return v.run();
    },
    { warmup: warmupRounds },
  );
  const lines = [];
  for (const key of ['short', 'warm']) {
    const row =
      key === 'short'
        ? `idle RSS (MiB), a session after 3 calls, × ${rounds} rounds`
        : `idle RSS (MiB), the same session after ${MORE_CALLS} more calls, × ${rounds} rounds`;
    const bare = samples.bare.map((s) => s[key]);
    for (const v of variants) {
      const values = samples[v.name].map((s) => s[key]);
      if (v.name === 'bare') lines.push(line(row, v.label, num(median(values)), 'reference'));
      else if (v.name === 'mcpguard' && key === 'short') {
        const ratio = pairedRatio(values, bare);
        lines.push(line(row, v.label, num(median(values)), ratioText(ratio, 'bare'), '≤ 1.15× bare', ratio <= 1.15));
      } else lines.push(line(row, v.label, num(median(values)), ratioText(pairedRatio(values, bare), 'bare')));
    }
  }
  return {
    lines,
    notes: [
      `idle rows: VmRSS read after ${SETTLE_MS} ms without traffic; the byte-copy relay is the floor for a Node relay, ${ESM_MODULES} empty ES modules the floor for a program of mcpguard's module count (Node's ES module loader, and V8's optimising compiler, which its path functions wake); "modules loaded, unused" is the copy relay after importing the 137 modules a session loads (bench/fixtures/code-relay.js): the floor for mcpguard's code`,
    ],
  };
}
