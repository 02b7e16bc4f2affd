// mcpguard in front of a fixture server, driven one line at a time by the
// test (a client written by hand), with the server's received lines and the
// session's records at hand afterwards.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { frame, readLines, runGuard, sessionEnd, tempDir } from './run.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Start `mcpguard [args] -- server...` with a record directory and
 * RECORD_LINES (the file where the fixture appends each line it reads).
 */
export function conversation(server, args = [], env = {}, timeout = 30000) {
  const { dir, cleanup } = tempDir();
  const atServer = join(dir, 'server-lines');
  const recordDir = join(dir, 'records');
  const run = runGuard([`--record-dir=${recordDir}`, '--on-invalid=reject', ...args, '--', ...server], {
    keepOpen: true,
    env: { RECORD_LINES: atServer, ...env },
    timeout,
  });
  let text = '';
  run.child.stdout.on('data', (c) => {
    text += c;
  });
  const out = () =>
    text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  return {
    child: run.child,
    dir,
    recordDir,
    send: (...values) => run.child.stdin.write(values.map(frame).join('')),
    out,
    /** The handshake of a 2025-06-18 client (`initialize`, its answer, `notifications/initialized`), then `more` frames. */
    async initialize(...more) {
      this.send({
        jsonrpc: '2.0',
        id: 'init',
        method: 'initialize',
        params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
      });
      await this.waitFor((m) => m.id === 'init', 'initialize answer');
      this.send({ jsonrpc: '2.0', method: 'notifications/initialized' }, ...more);
    },
    /** Wait for a line that matches; fails the test after `ms`. */
    async waitFor(match, what, ms = 10000) {
      for (let waited = 0; waited < ms; waited += 20) {
        const found = out().find(match);
        if (found) return found;
        await sleep(20);
      }
      assert.fail(`no ${what} in ${text}`);
    },
    /** Lines the server read, parsed. */
    atServer: () => readLines(atServer).map((l) => JSON.parse(l)),
    /** The ids of the tools/call requests that reached the server, in the order it read them. */
    callsAtServer: () =>
      readLines(atServer)
        .map((l) => JSON.parse(l))
        .filter((m) => m.method === 'tools/call')
        .map((m) => m.id),
    /** Close stdin, wait for mcpguard to exit, and read the summary and every record. */
    async finish() {
      run.child.stdin.end();
      const r = await run.done;
      const files = readdirSync(recordDir, { recursive: true }).filter((f) => String(f).endsWith('.jsonl'));
      const records = files.flatMap((f) =>
        readFileSync(join(recordDir, String(f)), 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l)),
      );
      return { ...r, summary: sessionEnd(r.stderr), records, out: out() };
    },
    cleanup,
  };
}

/** The final records of calls, and the one for a request id. */
export const callEnds = (records) => records.filter((r) => r.type === 'call_end');
export const endOf = (records, id) => callEnds(records).find((r) => r.request_id === id);
