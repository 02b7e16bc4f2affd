// Small calls from the official SDK's client (v1 `Client` over its
// `StdioClientTransport`), as an agent makes them: straight to the bench's
// echo server, through mcpguard with --records off, and through mcpguard with
// its defaults, interleaved per round. The other latency rows drive the relays
// with raw pipes (bench/lib/rpc.js), so that no client's own work is in their
// numbers; this row is what a real client sees, its own parsing, validation
// and promise turns included. Run only when named (`--rows=sdkclient`).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { interleave, roundName } from './interleave.js';
import { BENCH_ENV } from './proc.js';
import { median, pairedRatio, percentiles } from './stats.js';
import { line, num, ratioText } from './table.js';
import { ECHO_SERVER, MCPGUARD, NODE } from './variants.js';

const CALL = { name: 'echo', arguments: { size: 64 } };

async function clientCalls([command, ...args], { requests, warmup }) {
  const client = new Client({ name: 'mcpguard-bench', version: '0' });
  await client.connect(new StdioClientTransport({ command, args, env: BENCH_ENV, stderr: 'ignore' }));
  try {
    await client.listTools();
    for (let i = 0; i < warmup; i++) await client.callTool(CALL);
    const micros = [];
    for (let i = 0; i < requests; i++) {
      const start = process.hrtime.bigint();
      await client.callTool(CALL);
      micros.push(Number(process.hrtime.bigint() - start) / 1000);
    }
    return { ...percentiles(micros), mean: micros.reduce((a, b) => a + b, 0) / micros.length };
  } finally {
    await client.close();
  }
}

export async function sdkClientRows({ rounds, requests, warmup }, progress) {
  const variants = [
    { name: 'direct', label: 'SDK client → server (no relay)', argv: [NODE, ECHO_SERVER] },
    { name: 'norecords', label: 'SDK client → mcpguard --records off', argv: [NODE, MCPGUARD, '--records', 'off', '--', NODE, ECHO_SERVER] },
    { name: 'mcpguard', label: 'SDK client → mcpguard (defaults)', argv: [NODE, MCPGUARD, '--', NODE, ECHO_SERVER] },
  ];
  const samples = await interleave(variants, rounds, (v, r) => {
    progress(`sdkclient ${v.name} ${roundName(r, rounds)}`);
    return clientCalls(v.argv, { requests, warmup });
  });
  const lines = [];
  for (const key of ['p50', 'mean']) {
    const row = `SDK v1 client, small call ${key} (µs), calls ${warmup + 1}-${warmup + requests} × ${rounds} rounds`;
    const direct = samples.direct.map((s) => s[key]);
    for (const v of variants) {
      const values = samples[v.name].map((s) => s[key]);
      const vsDirect = ratioText(pairedRatio(values, direct), 'direct');
      const vsOff =
        v.name === 'mcpguard'
          ? `; ${ratioText(
              pairedRatio(
                values,
                samples.norecords.map((s) => s[key]),
              ),
              'records off',
            )}`
          : '';
      lines.push(line(row, v.label, num(median(values)), v.name === 'direct' ? 'baseline' : `${vsDirect}${vsOff}`));
    }
  }
  return {
    lines,
    notes: ["sdkclient: @modelcontextprotocol/sdk v1 Client + StdioClientTransport, the bench's echo server; each round a fresh client and server"],
  };
}
