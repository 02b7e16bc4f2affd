// Micro-benchmark of the schema gate (src/gate): what checking a tool's
// arguments costs, and what loading the engine costs and when.
//
//   npm run build && node bench/gate-schema.js [--quick]
//   node bench/gate-schema.js --capture   # re-record bench/fixtures/everything-tools.json
//
// Rows (medians; fresh processes where a cost is paid once per process):
// - load: `import('@cfworker/json-schema')` in a fresh node, and the first
//   verdict of a fresh process (learn server-everything's tools, check one call:
//   import + compile + first check, all cold);
// - start-up: spawn to the first `initialize` answer through mcpguard, as it
//   is, with the gate module preloaded (what wiring it costs while no schema
//   is needed) and with the engine preloaded (what loading it eagerly would
//   cost), interleaved;
// - compile: per schema, warm (server-everything's 13 tools and 4 hand-written ones);
// - check: per call on a small call (echo) and a nested one, through
//   ToolSchemas.checkArgumentsNow, the path the relay takes once the engine is loaded.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadEngine, ToolSchemas } from '../dist/gate/schema/schema.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const FIXTURE = join(ROOT, 'bench', 'fixtures', 'everything-tools.json');
const QUICK = process.argv.includes('--quick');
const PROCESS_RUNS = QUICK ? 5 : 21;
const CALLS = QUICK ? 20_000 : 200_000;

if (process.argv.includes('--capture')) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
  const version = JSON.parse(readFileSync(join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/package.json'), 'utf8')).version;
  const transport = new StdioClientTransport({ command: join(ROOT, 'node_modules/.bin/mcp-server-everything'), args: ['stdio'], stderr: 'ignore' });
  const client = new Client({ name: 'mcpguard-bench-capture', version: '1' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  await client.close();
  const _captured = `tools/list of @modelcontextprotocol/server-everything ${version} (stdio), listed with the SDK v1 Client (client.listTools()); regenerate with: node bench/gate-schema.js --capture`;
  writeFileSync(FIXTURE, `${JSON.stringify({ _captured, tools }, null, 1)}\n`);
  console.log(`captured ${tools.length} tools into ${FIXTURE}`);
  process.exit(0);
}

const EVERYTHING = JSON.parse(readFileSync(FIXTURE, 'utf8')).tools;
// Typical hand-written schemas: nested objects, enums, patterns, $defs/$ref, if/then, recursion.
const HAND_WRITTEN = [
  {
    name: 'edit_file',
    inputSchema: {
      type: 'object',
      additionalProperties: false,
      required: ['path', 'edits'],
      properties: {
        path: { type: 'string', pattern: '^(/[^/\\0]+)+$', maxLength: 4096 },
        edits: { type: 'array', minItems: 1, items: { $ref: '#/$defs/edit' } },
        dryRun: { type: 'boolean', default: false },
        mode: { enum: ['replace', 'insert', 'delete'] },
      },
      $defs: {
        edit: {
          type: 'object',
          additionalProperties: false,
          required: ['oldText', 'newText'],
          properties: {
            oldText: { type: 'string' },
            newText: { type: 'string' },
            range: { type: 'object', required: ['start', 'end'], properties: { start: { type: 'integer', minimum: 0 }, end: { type: 'integer', minimum: 0 } } },
          },
        },
      },
    },
    sample: { path: '/tmp/a.txt', edits: [{ oldText: 'a', newText: 'b' }], mode: 'replace' },
  },
  {
    name: 'query_db',
    inputSchema: {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      required: ['sql'],
      properties: {
        sql: { type: 'string', minLength: 1, pattern: '^\\s*(SELECT|WITH)\\b' },
        params: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }, { type: 'null' }] } },
        limit: { type: 'integer', minimum: 1, maximum: 1000 },
        output: { $ref: '#/definitions/output' },
      },
      definitions: {
        output: {
          type: 'object',
          properties: { format: { enum: ['json', 'csv', 'table'] }, columns: { type: 'array', items: { type: 'string' }, uniqueItems: true } },
        },
      },
    },
    sample: { sql: 'SELECT 1', params: [1, 'a', null], limit: 10, output: { format: 'json' } },
  },
  {
    name: 'create_issue',
    inputSchema: {
      type: 'object',
      required: ['owner', 'repo', 'title'],
      properties: {
        owner: { type: 'string', pattern: '^[A-Za-z0-9-]{1,39}$' },
        repo: { type: 'string' },
        title: { type: 'string', minLength: 1, maxLength: 256 },
        body: { type: ['string', 'null'] },
        labels: { type: 'array', items: { type: 'string' }, maxItems: 20 },
        assignee: { oneOf: [{ type: 'string' }, { type: 'object', properties: { login: { type: 'string' } }, required: ['login'] }] },
        priority: { type: 'string', enum: ['low', 'medium', 'high', 'urgent'] },
        due: { type: 'string', format: 'date' },
      },
      if: { properties: { priority: { const: 'urgent' } }, required: ['priority'] },
      then: { required: ['assignee'] },
    },
    sample: { owner: 'octo', repo: 'hello', title: 'Bug', labels: ['bug'], priority: 'low' },
  },
  {
    name: 'tree',
    inputSchema: {
      type: 'object',
      required: ['root'],
      properties: { root: { $ref: '#/$defs/node' } },
      $defs: {
        node: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } } },
      },
    },
    sample: { root: { name: 'a', children: [{ name: 'b', children: [{ name: 'c' }] }] } },
  },
];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
const rows = [];
const row = (name, value, unit, note = '') => rows.push([name, value, unit, note]);

// --- load, in fresh processes ---------------------------------------------------------
const libraryUrl = import.meta.resolve('@cfworker/json-schema');
const gateUrl = pathToFileURL(join(ROOT, 'dist', 'gate', 'schema', 'schema.js')).href;
// The first imports of a process also warm up Node's module loader (10–20 ms here): modules
// mcpguard loads at start anyway pay that before the clock starts.
const warm = ['base/errors.js', 'mask/escape.js', 'wire/jsonrpc.js']
  .map((f) => `await import(${JSON.stringify(pathToFileURL(join(ROOT, 'dist', f)).href)});`)
  .join(' ');
const inFresh = (code) => Number(execFileSync(process.execPath, ['--input-type=module', '-e', `${warm} ${code}`], { cwd: ROOT, encoding: 'utf8' }));
const importMs = [];
const gateImportMs = [];
const firstVerdictMs = [];
for (let i = 0; i < PROCESS_RUNS; i++) {
  // What wiring the gate adds to a session that never needs a schema: its own modules, not the library.
  gateImportMs.push(
    inFresh(
      `const t = performance.now(); const g = await import(${JSON.stringify(gateUrl)}); if (g.engineLoaded()) throw new Error('eager'); process.stdout.write(String(performance.now() - t));`,
    ),
  );
  importMs.push(inFresh(`const t = performance.now(); await import(${JSON.stringify(libraryUrl)}); process.stdout.write(String(performance.now() - t));`));
  firstVerdictMs.push(
    inFresh(`
    const { ToolSchemas } = await import(${JSON.stringify(gateUrl)});
    const tools = JSON.parse((await import('node:fs')).readFileSync(${JSON.stringify(FIXTURE)}, 'utf8')).tools;
    const t = performance.now();
    const g = new ToolSchemas({ protocolVersion: '2025-11-25' });
    g.learnPage(tools, true);
    const v = await g.checkArguments('echo', { message: 'hello world' });
    if (!v.ok) throw new Error(JSON.stringify(v));
    process.stdout.write(String(performance.now() - t));`),
  );
}
row('load: import dist/gate/schema/schema.js, engine not loaded (fresh node, loader warm)', median(gateImportMs), 'ms', `${PROCESS_RUNS} processes`);
row('load: import @cfworker/json-schema (fresh node, loader warm)', median(importMs), 'ms', `${PROCESS_RUNS} processes`);
row('load: first verdict (learn 13 tools, import, compile echo, check)', median(firstVerdictMs), 'ms', `${PROCESS_RUNS} processes`);

// --- start-up: mcpguard with no schema needed ----------------------------------------------
// Spawn to the first `initialize` answer through mcpguard in front of the echo server.
// (Not `-- true`: a child that exits at once leaves mcpguard waiting out its 1 s stream
// drain timeout today, which would swamp the difference measured here.)
const BIN = join(ROOT, 'bin', 'mcpguard.js');
const ECHO = join(ROOT, 'bench', 'fixtures', 'echo-server.js');
const INIT = `${JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } })}\n`;
function firstAnswerMs(pre) {
  return new Promise((resolve, reject) => {
    const t = process.hrtime.bigint();
    const child = spawn(process.execPath, [...pre, BIN, '--records', 'off', '--', process.execPath, ECHO], { stdio: ['pipe', 'pipe', 'ignore'] });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('no initialize answer in 20 s'));
    }, 20000);
    let at = null;
    child.stdout.on('data', (chunk) => {
      if (at === null && chunk.includes(10)) {
        at = process.hrtime.bigint();
        child.stdin.end();
      }
    });
    child.on('exit', () => {
      clearTimeout(timer);
      at === null ? reject(new Error('mcpguard exited without answering')) : resolve(Number(at - t) / 1e6);
    });
    child.stdin.on('error', () => {});
    child.stdin.write(INIT);
  });
}
const startVariants = [
  { name: 'as it is', pre: [] },
  // The control: what --import itself costs, with a module that does nothing.
  { name: 'empty module preloaded', pre: ['--import', 'data:text/javascript,'] },
  { name: 'gate module preloaded', pre: ['--import', gateUrl] },
  { name: 'engine preloaded (eager load)', pre: ['--import', libraryUrl] },
];
const startMs = Object.fromEntries(startVariants.map((v) => [v.name, []]));
for (let i = 0; i < PROCESS_RUNS + 1; i++) {
  for (const v of i % 2 ? startVariants : [...startVariants].reverse()) {
    const ms = await firstAnswerMs(v.pre);
    if (i > 0) startMs[v.name].push(ms); // round 0 warms the disk cache
  }
}
for (const v of startVariants) {
  const diffs = startMs[v.name].map((x, i) => x - startMs['as it is'][i]);
  row(
    `start-up to the first initialize answer, ${v.name}`,
    median(startMs[v.name]),
    'ms',
    v.pre.length
      ? `${signed(median(diffs))} ms paired vs as it is, ${signed(median(startMs[v.name].map((x, i) => x - startMs['empty module preloaded'][i])))} vs the empty module`
      : `${PROCESS_RUNS} interleaved runs`,
  );
}

// --- compile, warm -------------------------------------------------------------------
await loadEngine();
const { compileSchema, resolveDialect } = await import('../dist/gate/schema/engine.js');
const compileUs = {};
for (const t of [...EVERYTHING, ...HAND_WRITTEN]) {
  const dialect = resolveDialect(t.inputSchema, '2025-11-25');
  for (let i = 0; i < 50; i++) compileSchema(t.inputSchema, dialect);
  const times = [];
  for (let i = 0; i < (QUICK ? 50 : 300); i++) {
    const start = process.hrtime.bigint();
    compileSchema(t.inputSchema, dialect);
    times.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  compileUs[t.name] = median(times);
}
const everythingCompile = EVERYTHING.map((t) => compileUs[t.name]);
row(
  'compile: server-everything schema (median of the 13 medians)',
  median(everythingCompile),
  'µs',
  `range ${Math.min(...everythingCompile).toFixed(1)}–${Math.max(...everythingCompile).toFixed(1)}`,
);
for (const t of HAND_WRITTEN) row(`compile: ${t.name}`, compileUs[t.name], 'µs');

// --- check, per call ----------------------------------------------------------------
const gate = new ToolSchemas({ protocolVersion: '2025-11-25' });
gate.learnPage([...EVERYTHING, ...HAND_WRITTEN], true);
function perCall(name, args) {
  if (!gate.checkArgumentsNow(name, args)?.ok) throw new Error(`${name} did not pass`);
  for (let i = 0; i < CALLS / 10; i++) gate.checkArgumentsNow(name, args);
  const each = new Float64Array(CALLS);
  for (let i = 0; i < CALLS; i++) {
    const start = process.hrtime.bigint();
    gate.checkArgumentsNow(name, args);
    each[i] = Number(process.hrtime.bigint() - start) / 1000;
  }
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) gate.checkArgumentsNow(name, args);
  const mean = Number(process.hrtime.bigint() - start) / 1000 / CALLS;
  each.sort();
  return { p50: quantile(each, 0.5), p99: quantile(each, 0.99), mean };
}
const timer = (() => {
  const each = [];
  for (let i = 0; i < 10000; i++) {
    const s = process.hrtime.bigint();
    each.push(Number(process.hrtime.bigint() - s) / 1000);
  }
  return median(each);
})();
for (const [label, name, args] of [
  ['small call: echo {message}', 'echo', { message: 'hello world' }],
  ['small call: get-sum {a, b}', 'get-sum', { a: 1, b: 2 }],
  ['nested call: edit_file', 'edit_file', HAND_WRITTEN[0].sample],
  ['nested call: query_db (draft-07, anyOf)', 'query_db', HAND_WRITTEN[1].sample],
]) {
  const r = perCall(name, args);
  row(
    `check: ${label}`,
    r.mean,
    'µs',
    `mean of ${CALLS} in a loop; timed one by one p50 ${r.p50.toFixed(2)}, p99 ${r.p99.toFixed(2)} µs (timer ${timer.toFixed(2)} µs)`,
  );
}
{
  const args = { message: 42 };
  for (let i = 0; i < 10000; i++) gate.checkArgumentsNow('echo', args);
  const start = process.hrtime.bigint();
  for (let i = 0; i < CALLS / 4; i++) gate.checkArgumentsNow('echo', args);
  row('check: refused small call (echo {message: 42}), verdict built', Number(process.hrtime.bigint() - start) / 1000 / (CALLS / 4), 'µs', 'mean');
}

const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => (i === 1 ? fmt(r[1]) : r[i]).length)));
for (const r of rows) console.log(`${r[0].padEnd(widths[0])}  ${fmt(r[1]).padStart(widths[1])} ${r[2].padEnd(widths[2])}  ${r[3]}`);
console.log(`(node ${process.version}; medians unless said; load average ${(await import('node:os')).loadavg()[0].toFixed(2)})`);

function fmt(x) {
  return x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
}
function signed(x) {
  return `${x >= 0 ? '+' : ''}${x.toFixed(1)}`;
}
