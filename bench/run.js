#!/usr/bin/env node
// mcpguard benchmarks: the cost of the guard, side by side, in one run (issue 7).
// Every row is measured interleaved with its baseline (A B A B ...), and
// reported as medians and per-round paired ratios, in one table on stdout.
// Progress goes to stderr.
//
//   npm run bench                      full run (a few minutes)
//   node bench/run.js --quick          smoke run (~30-60 s)
//   node bench/run.js --rows=latency,throughput
//   node bench/run.js --rows=single   one 1 MiB result / argument at a time, against the copy relay
//   node bench/run.js --flood-bytes=512MiB
//   node bench/run.js --rows=micro      only bench/records.js, bench/stderr.js (if present)
//   node bench/run.js --rows=warmup     p50 by call index as the JIT warms up (run only when named)
//   node bench/run.js --rows=consent    time to the approval card, server quiet vs flooding its stderr
//   node bench/run.js --rows=idle       idle RSS of a session against a bare node (and the copy relay, the floor)
//   taskset -c 0 node bench/run.js --rows=otel   small calls with the OTLP export off / on (collector up, on the relays' CPU and on another) / on (collector down) (run only when named)
//   node bench/run.js --rows=sdkclient  small calls from the official SDK v1 client: direct, mcpguard --records off, mcpguard (run only when named)
//   node bench/run.js --profile=throughput|latency|flood|shutdown|startup [--keep-profile] [--top=N] [--guard-opts='--records off']
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { consentRows } from './lib/consent.js';
import { floodRows } from './lib/flood.js';
import { idleRows } from './lib/idle.js';
import { latencyRows } from './lib/latency.js';
import { microSections } from './lib/micro.js';
import { otelRows } from './lib/otel-row.js';
import { sdkClientRows } from './lib/sdk-client.js';
import { warmupRows } from './lib/warmup.js';
import { describeBuild, describeMachine, load } from './lib/machine.js';
import { benchHome, killAll } from './lib/proc.js';
import { profileGuard, WORKLOADS } from './lib/profile.js';
import { recordsRows } from './lib/records-row.js';
import { shutdownRows } from './lib/shutdown.js';
import { singleFlightRows } from './lib/single-flight.js';
import { stallRows } from './lib/stall.js';
import { startupRows } from './lib/startup.js';
import { render } from './lib/table.js';
import { tailRows } from './lib/tail.js';
import { throughputRows } from './lib/throughput.js';
import { ROOT, mcpguardHelp, snapshotGuard } from './lib/variants.js';

const ROWS = ['latency', 'throughput', 'single', 'startup', 'idle', 'flood', 'stall', 'shutdown', 'records', 'consent', 'warmup', 'tail', 'otel', 'sdkclient'];
/** Rows run only when --rows names them. */
const ON_REQUEST = ['warmup', 'tail', 'otel', 'sdkclient'];
/** Not table rows: other helpers' micro-benchmarks, appended when present (full runs of all rows, or --rows=micro). */
const EXTRA = ['micro'];
const MODES = {
  quick: {
    latency: { rounds: 3, requests: 300, warmup: 500, cold: 100 },
    throughput: { rounds: 3, frames: 16, window: 4 },
    single: { rounds: 3, calls: 10 },
    startup: { rounds: 5 },
    idle: { rounds: 2 },
    flood: { rounds: 2, bytes: 64 * 2 ** 20 },
    stall: { rounds: 1, lines: 100000 },
    shutdown: { rounds: 5 },
    records: { rounds: 3, requests: 300, warmup: 500 },
    consent: { rounds: 2, requests: 50, warmup: 20 },
    warmup: { rounds: 2 },
    tail: { rounds: 3, requests: 2000, warmup: 2000 },
    otel: { rounds: 3, requests: 2000, warmup: 2000 },
    sdkclient: { rounds: 3, requests: 1000, warmup: 500 },
  },
  full: {
    latency: { rounds: 11, requests: 2000, warmup: 5000, cold: 200 },
    throughput: { rounds: 7, frames: 64, window: 4 },
    single: { rounds: 7, calls: 40 },
    startup: { rounds: 21 },
    idle: { rounds: 5 },
    flood: { rounds: 3, bytes: 2 * 2 ** 30 },
    stall: { rounds: 3, lines: 400000 },
    shutdown: { rounds: 15 },
    records: { rounds: 9, requests: 1000, warmup: 5000 },
    consent: { rounds: 7, requests: 200, warmup: 300 },
    warmup: { rounds: 5 },
    tail: { rounds: 9, requests: 10000, warmup: 5000 },
    otel: { rounds: 9, requests: 10000, warmup: 5000 },
    sdkclient: { rounds: 5, requests: 3000, warmup: 2000 },
  },
};

function usage(message) {
  process.stderr.write(
    `bench: ${message}\nusage: node bench/run.js [--quick] [--rows=${[...ROWS, ...EXTRA].join(',')}] [--rounds=N] [--flood-bytes=SIZE] [--profile=${WORKLOADS.join('|')} [--keep-profile] [--top=N] [--guard-opts='OPTIONS']]\n`,
  );
  process.exit(2);
}

function parseSize(text) {
  const match = /^(\d+(?:\.\d+)?)\s*(b|k|kib|m|mib|g|gib)?$/i.exec(text);
  if (match === null) usage(`--flood-bytes expects a size such as 64MiB or 2GiB, got '${text}'`);
  const unit = (match[2] ?? 'b').toLowerCase()[0];
  return Math.round(Number(match[1]) * { b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 }[unit]);
}

let args;
try {
  ({ values: args } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      rows: { type: 'string' },
      rounds: { type: 'string' },
      'flood-bytes': { type: 'string' },
      profile: { type: 'string' },
      'keep-profile': { type: 'boolean', default: false },
      'guard-opts': { type: 'string', default: '' },
      top: { type: 'string', default: '15' },
    },
    strict: true,
  }));
} catch (error) {
  usage(error.message);
}

if (!existsSync(new URL('../dist/cli/main.js', import.meta.url))) usage('dist/ is missing: run `npm run build` first (npm run bench does)');
const config = structuredClone(args.quick ? MODES.quick : MODES.full);
const rows =
  args.rows === undefined ? [...ROWS.filter((r) => !ON_REQUEST.includes(r)), ...(args.quick ? [] : EXTRA)] : args.rows.split(',').map((r) => r.trim());
for (const r of rows) if (!ROWS.includes(r) && !EXTRA.includes(r)) usage(`--rows: unknown row '${r}' (rows: ${[...ROWS, ...EXTRA].join(', ')})`);
// Quick mode skips the unrecorded warm-up round (each connection still warms up with requests).
for (const c of Object.values(config)) c.warmupRounds = args.quick ? 0 : 1;
if (args.rounds !== undefined) {
  const n = Number(args.rounds);
  if (!Number.isInteger(n) || n < 1) usage(`--rounds expects a positive integer, got '${args.rounds}'`);
  for (const c of Object.values(config)) c.rounds = n;
}
if (args['flood-bytes'] !== undefined) config.flood.bytes = parseSize(args['flood-bytes']);

const progress = (text) => process.stderr.write(`bench: ${text}\n`);
const cleanUp = () => {
  killAll();
  rmSync(benchHome, { recursive: true, force: true });
};
process.on('exit', cleanUp);
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(130));

const build = describeBuild(ROOT);
const guard = snapshotGuard(join(benchHome, 'mcpguard'));
const recordsNote = /--records\s+on\|[^\n]*\n\s+.*\(default on\)/.test(mcpguardHelp()) ? ' (records on: the audit log goes to a scratch $MCPGUARD_HOME)' : '';
const loadBefore = load();
const command = `node bench/run.js ${process.argv.slice(2).join(' ')}`.trim();

if (args.profile !== undefined) {
  if (!WORKLOADS.includes(args.profile)) usage(`--profile expects one of ${WORKLOADS.join(', ')}, got '${args.profile}'`);
  const text = await profileGuard(args.profile, {
    frames: args.quick ? 64 : 512,
    requests: args.quick ? 2000 : 20000,
    floodBytes: args['flood-bytes'] === undefined ? 2 ** 30 : config.flood.bytes,
    keep: args['keep-profile'],
    top: Number(args.top),
    guardOptions: args['guard-opts'].split(' ').filter(Boolean),
  });
  process.stdout.write(`mcpguard profile\nmachine: ${describeMachine()}\nmcpguard: ${build}\nreproduce: ${command}\n\n${text}\n`);
  process.exit(0);
}

const RUNNERS = {
  warmup: warmupRows,
  latency: latencyRows,
  throughput: throughputRows,
  single: singleFlightRows,
  startup: startupRows,
  idle: idleRows,
  flood: floodRows,
  stall: stallRows,
  shutdown: shutdownRows,
  records: recordsRows,
  consent: consentRows,
  tail: tailRows,
  otel: otelRows,
  sdkclient: sdkClientRows,
};
const started = Date.now();
const lines = [];
const notes = [];
for (const row of rows.filter((r) => ROWS.includes(r))) {
  const result = await RUNNERS[row](config[row], progress);
  lines.push(...result.lines);
  notes.push(...result.notes);
}
const micro = rows.includes('micro') ? await microSections({ quick: args.quick }, progress) : [];
const seconds = ((Date.now() - started) / 1000).toFixed(0);

process.stdout.write(`# mcpguard benchmark (${args.quick ? 'quick' : 'full'} mode)

machine: ${describeMachine()}
load average (1 min): ${loadBefore} at start, ${load()} at end (2+ on 2 cpus means other work competed)
mcpguard: ${build}; default options${recordsNote}; a snapshot of bin/ + dist/ taken at start (${guard.replace(benchHome, '$TMP')}); server: bench/fixtures/echo-server.js
reproduce: ${command}   (npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''} rebuilds dist/ first)
method: variants interleaved per round (A B … B A), medians over rounds; ratios are medians of per-round paired ratios

${render(lines)}

${notes.map((n) => `- ${n}`).join('\n')}${notes.length ? '\n' : ''}- mcpguard's own stderr (it mirrors the child's) goes to /dev/null in every row except "stderr → drained pipe"
- elapsed: ${seconds} s
${micro.length ? `\n${micro.join('\n\n')}\n` : ''}`);
