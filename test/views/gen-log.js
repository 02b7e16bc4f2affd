// Session logs of any size, written through the real AuditLog (the records a
// relay writes, in the order it writes them: each call's write-ahead attempt
// at once, its dispatch and end with the next flush). Also a command for
// measuring by hand: node test/views/gen-log.js DIR CALLS [COPIES]
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AuditLog } from '../../dist/session/audit.js';
import { canonical } from '../../dist/records/canonical.js';
import { lineHash, recordHash } from '../../dist/records/chain.js';
import { newCall } from '../../dist/mcp/call.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * Write one sealed session of `calls` tools/call calls (every 97th a tool error
 * answer, every 1000th a rejected client line) and resolve to its path.
 * `open` leaves the last `open` calls without a final record; `seal: false`
 * stops before the session record (a crashed session).
 */
export async function writeSession(dir, sessionId, calls, { open = 0, seal = true, batch = 500 } = {}) {
  const audit = new AuditLog({ dir, fsync: false }, sessionId, (error) => {
    throw error;
  });
  audit.sessionStarted({ command: 'python3', args: ['noisy_server.py', '--port', '0'], cwd: '/srv', options: { 'call-timeout': 30000 } });
  audit.childSpawned(4242);
  const states = {};
  let rejected = 0;
  for (let i = 0; i < calls; i += batch) {
    const started = [];
    for (let j = i; j < Math.min(calls, i + batch); j++) {
      const call = newCall(j + 1, `n:${j + 1}`, 'tools/call', j % 3 === 0 ? 'read_file' : 'search');
      audit.callStarted(call);
      call.dispatchedAt = Date.now();
      audit.callDispatched(call);
      started.push(call);
      if (j % 1000 === 999) {
        audit.rejected({ direction: 'client', line: j + 2, code: -32700, reason: 'not JSON', frame: Buffer.from('{oops'), bytes: 5 });
        rejected++;
      }
    }
    for (const call of started) {
      if (call.requestId > calls - open) continue;
      call.state = call.requestId % 97 === 0 ? 'error' : 'completed';
      call.endedAt = call.dispatchedAt + 3;
      call.stderr = { seen: 120, retained: 120, truncated: false, shared: false };
      states[call.state] = (states[call.state] ?? 0) + 1;
      audit.callEnded(call);
    }
    await turn();
  }
  if (seal) {
    audit.sessionEnded({
      end_reason: 'stdin_eof',
      pid: 4242,
      exit_code: 0,
      signal: null,
      status: 0,
      spawn_error: null,
      forced_kill: false,
      unkillable: false,
      signals_sent: ['SIGTERM'],
      survivors: [],
      found_by_marker: null,
      trigger_to_exit_ms: 12,
      stream_end: null,
      stderr_bytes_seen: 4096,
      stderr: {
        bytes_seen: 4096,
        bytes_retained: 2048,
        truncated: true,
        redactions: 0,
        mirrored_bytes: 4096,
        suppressed_bytes: 0,
        tail: '[head]\nstarting\n[...]\nfatal: out of cheese\n',
      },
      frames: { client: calls, child: calls },
      rejected: { client: rejected, child: 0 },
      calls: states,
      era: 'legacy',
      protocol_version: '2025-06-18',
      era_decided_by: 'initialize',
      duration_ms: 1000,
    });
  } else {
    audit.log.flush();
  }
  return audit.log.path;
}

/**
 * Copies of a sealed log under new session ids (the header's id and the file
 * name; the chain of a copy no longer verifies, which the views do not check).
 */
export function copySession(path, dir, count, idOf) {
  const bytes = readFileSync(path);
  const nl = bytes.indexOf(10);
  const header = bytes.subarray(0, nl).toString();
  const id = /"log_id":"([^"]+)"/.exec(header)[1];
  const rest = bytes.subarray(nl);
  const files = [];
  for (let i = 0; i < count; i++) {
    const copyId = idOf(i);
    const file = join(dir, `${copyId}.jsonl`);
    writeFileSync(file, Buffer.concat([Buffer.from(header.replace(id, copyId)), rest]));
    files.push(file);
  }
  return files;
}

/**
 * Make a copy's chain verify again (copySession breaks it by renaming the
 * header): every `prev` recomputed from the line before, and the seal's hash.
 * For logs written by writeSession (no nested `prev` member), plain SHA-256.
 */
export function rechain(path) {
  const lines = readFileSync(path, 'utf8').split('\n');
  const tail = lines.pop(); // '' after the last newline
  let prev = '0'.repeat(64);
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i].replace(/"prev":"[0-9a-f]{64}"/, `"prev":"${prev}"`);
    if (line.includes('"type":"seal"')) {
      const { hash: _old, ...seal } = JSON.parse(line);
      line = canonical({ ...seal, hash: recordHash(seal, undefined) });
    }
    lines[i] = line;
    prev = lineHash(`${line}\n`, undefined);
  }
  writeFileSync(path, `${lines.join('\n')}\n${tail}`);
}

// (No script path when imported from `node -e`.)
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [dir, calls, copies] = process.argv.slice(2);
  const path = await writeSession(dir, 's_20261130T020000Z_00000000', Number(calls));
  if (copies !== undefined)
    copySession(path, dir, Number(copies), (i) => `s_20261130T0300${String(i).padStart(2, '0').slice(-2)}Z_${String(i).padStart(8, '0')}`);
  process.stdout.write(`${path}\n`);
}
