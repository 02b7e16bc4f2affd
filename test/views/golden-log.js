// Deterministic session logs for the golden-output tests, written through the
// real AuditLog and SessionLog (so every chain verifies), with the clock, the
// pids and the call ids fixed: the same bytes on every run. Run it as its own
// process (it replaces the global Date): node test/views/golden-log.js DIR
import { AuditLog } from '../../dist/session/audit.js';
import { newCall } from '../../dist/mcp/call.js';
import { generationTagger } from '../../dist/session/tag.js';

const [dir] = process.argv.slice(2);
if (dir === undefined) throw new Error('usage: golden-log.js DIR');

// One fake clock for everything the records read: Date.now() and new Date().
let now = 0;
const RealDate = Date;
class FixedDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(now);
    else super(...args);
  }

  static now() {
    return now;
  }
}
globalThis.Date = FixedDate;
Object.defineProperty(process, 'pid', { value: 4100 });

const at = (iso) => {
  now = RealDate.parse(iso);
};
const later = (ms) => {
  now += ms;
};

let serial = 0;
function call(_audit, requestId, method, tool) {
  const c = newCall(requestId, `n:${requestId}`, method, tool);
  c.callId = `c_${String(++serial).padStart(4, '0')}0000beef`;
  c.startedAt = now;
  return c;
}

// The server generation calls are dispatched to: null (untagged, as before --restart existed) but in session 5.
let generation = null;
const tagger = generationTagger(() => generation);

/** A call that goes out and ends `ms` later in `state`. */
function dispatched(audit, requestId, method, tool, ms, state, extra = {}) {
  const c = call(audit, requestId, method, tool);
  audit.callStarted(c);
  c.dispatchedAt = now;
  if (generation !== null) tagger.callDispatched(c);
  audit.callDispatched(c);
  audit.log.flush();
  later(ms);
  Object.assign(c, { state, endedAt: now, stderr: { seen: 0, retained: 0, truncated: false, shared: false, text: null } }, extra);
  audit.callEnded(c);
  audit.log.flush();
  later(40);
  return c;
}

/** A call the gate refused before it went out: its final record is its only record. */
function refused(audit, requestId, tool, state, detail) {
  const c = call(audit, requestId, 'tools/call', tool);
  Object.assign(c, { state, endedAt: now, detail });
  audit.callEnded(c);
  audit.log.flush();
  later(40);
}

function end(audit, counts, fields) {
  audit.sessionEnded({
    end_reason: 'client_eof',
    pid: 4242,
    exit_code: 0,
    signal: null,
    status: 0,
    spawn_error: null,
    forced_kill: false,
    unkillable: false,
    signals_sent: [],
    survivors: [],
    found_by_marker: [],
    trigger_to_exit_ms: 15,
    stream_end: { stdout: 'eof', stderr: 'eof' },
    stderr_bytes_seen: 512,
    stderr: {
      bytes_seen: 512,
      bytes_retained: 64,
      truncated: true,
      redactions: 0,
      mirrored_bytes: 512,
      suppressed_bytes: 0,
      tail: '[captured stderr]\nlistening on stdio\n',
    },
    frames: { client: 9, child: 9 },
    rejected: { client: 1, child: 0 },
    calls: counts,
    era: 'legacy',
    protocol_version: '2025-06-18',
    era_decided_by: 'initialize',
    ...fields,
  });
}

// 1. A session given --name, with a long command; every kind of row: completed, denied (a long reason),
//    tool_error, a rejected frame, a timeout.
at('2026-11-30T07:00:00.000Z');
const files = new AuditLog({ dir, fsync: false }, 's_20261130T070000Z_aaaaaaaa', (error) => {
  throw error;
});
files.sessionStarted({
  command: 'node',
  args: ['/opt/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js', '/home/alice/projects'],
  cwd: '/home/alice',
  options: { name: 'files' },
});
files.childSpawned(4242);
later(120);
dispatched(files, 1, 'initialize', null, 35, 'completed');
files.serverInfo({ name: 'secure-filesystem-server', version: '0.2.0', from: 'initialize' });
dispatched(files, 2, 'tools/list', null, 12, 'completed');
dispatched(files, 3, 'tools/call', 'read_text_file', 8, 'completed', {
  stderr: { seen: 2048, retained: 1024, truncated: true, shared: false, text: 'read /home/alice/projects/notes.md\n' },
});
refused(
  files,
  4,
  'write_file',
  'denied',
  'policy rule "no-writes-outside-scratch" denies write_file: path /home/alice/projects/.env is outside /home/alice/scratch; ask an operator to extend the rule',
);
dispatched(files, 5, 'tools/call', 'search_files', 230, 'tool_error', { detail: 'the tool reported an error (result isError: true)' });
files.rejected({
  direction: 'client',
  line: 7,
  code: -32700,
  reason: 'not JSON: Unexpected token } in JSON at position 17',
  frame: Buffer.from('{"jsonrpc":"2.0",}'),
  bytes: 18,
});
files.log.flush();
later(500);
dispatched(files, 6, 'tools/call', 'directory_tree', 30_000, 'timed_out_after_dispatch', { detail: '--call-timeout 30000 ms expired' });
later(2_000);
end(files, { completed: 3, denied: 1, tool_error: 1, timed_out_after_dispatch: 1 }, {});

// 2. A server named by its serverInfo, killed after it ignored SIGTERM, with a call in flight.
at('2026-11-30T08:15:30.000Z');
const memory = new AuditLog({ dir, fsync: false }, 's_20261130T081530Z_bbbbbbbb', (error) => {
  throw error;
});
memory.sessionStarted({ command: 'python3', args: ['-u', 'memory_server.py'], cwd: '/srv/memory', options: {} });
memory.childSpawned(4343);
later(80);
dispatched(memory, 1, 'initialize', null, 20, 'completed');
memory.serverInfo({ name: 'memory', version: '1.4.2', from: 'initialize' });
dispatched(memory, 2, 'tools/call', 'create_entities', 15, 'completed');
dispatched(memory, 3, 'tools/call', 'read_graph', 61_000, 'unknown_after_dispatch', { detail: 'the server exited with the call in flight' });
end(
  memory,
  { completed: 2, unknown_after_dispatch: 1 },
  {
    end_reason: 'signal_SIGTERM',
    exit_code: null,
    signal: 'SIGKILL',
    status: 137,
    forced_kill: true,
    signals_sent: ['SIGTERM', 'SIGKILL'],
    trigger_to_exit_ms: 10_012,
  },
);

// 3. A session in July (the other side of a DST change in New York): its times carry their own offset there.
at('2026-07-01T12:00:00.000Z');
const summer = new AuditLog({ dir, fsync: false }, 's_20260701T120000Z_dddddddd', (error) => {
  throw error;
});
summer.sessionStarted({ command: 'uvx', args: ['mcp-server-git', '--repository', '/srv/repo'], cwd: '/srv', options: {} });
summer.childSpawned(4444);
later(300);
dispatched(summer, 1, 'initialize', null, 25, 'completed');
later(1_000);
end(
  summer,
  { completed: 1 },
  {
    stderr: { bytes_seen: 0, bytes_retained: 0, truncated: false, redactions: 0, mirrored_bytes: 0, suppressed_bytes: 0, tail: '' },
    frames: { client: 1, child: 1 },
    rejected: { client: 0, child: 0 },
  },
);

// 4. A session still running (or whose mcpguard was killed): no session record, no seal, a call open.
at('2026-11-30T09:45:00.000Z');
const open = new AuditLog({ dir, fsync: false }, 's_20261130T094500Z_cccccccc', (error) => {
  throw error;
});
open.sessionStarted({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-everything'], cwd: '/tmp', options: {} });
open.childSpawned(4545);
later(200);
dispatched(open, 1, 'initialize', null, 30, 'completed');
const hanging = call(open, 2, 'tools/call', 'longRunningOperation');
open.callStarted(hanging);
hanging.dispatchedAt = now;
open.callDispatched(hanging);
open.log.flush();

// 5. A server run with --restart on-failure that crashed twice: calls on generations 1, 2 and 3, the ones in
//    flight at a crash unknown_after_dispatch, one that waited too long for the new generation never dispatched.
at('2026-11-30T06:00:00.000Z');
const flaky = new AuditLog({ dir, fsync: false }, 's_20261130T060000Z_eeeeeeee', (error) => {
  throw error;
});
flaky.sessionStarted({ command: 'python3', args: ['crashy.py'], cwd: '/srv/flaky', options: { name: 'flaky', restart: 'on-failure' } });
flaky.childSpawned(4646);
generation = 1;
flaky.generationStarted({ generation: 1, pid: 4646, startedAt: now });
later(90);
dispatched(flaky, 1, 'initialize', null, 20, 'completed');
dispatched(flaky, 2, 'tools/call', 'echo', 5, 'completed');
dispatched(flaky, 3, 'tools/call', 'crash', 15, 'unknown_after_dispatch', { detail: 'the server exited with the call in flight; mcpguard does not retry' });
for (const [next, pid, delay] of [
  [2, 4747, 250],
  [3, 4848, 520],
]) {
  flaky.generationEnded({
    generation: next - 1,
    pid: pid - 101,
    started_at: null,
    ended_at: new Date(now).toISOString(),
    exit_code: 1,
    signal: null,
    status: 1,
    stream_end: null,
    signals_sent: [],
    survivors: [],
    stderr_bytes_seen: 40,
    stderr_tail: 'Traceback: boom\n',
    next: `restart in ${delay} ms`,
    delay_ms: delay,
  });
  later(delay);
  generation = next;
  flaky.generationStarted({ generation: next, pid, startedAt: now });
  flaky.restarted({ generation: next, handshake_replayed: true, tools_changed: false, list_changed_sent: false, client_warned: true, state_lost: true });
  flaky.log.flush();
  later(60);
  dispatched(flaky, 2 + 2 * next, 'tools/call', 'echo', 4, 'completed');
  if (next === 2)
    dispatched(flaky, 3 + 2 * next, 'tools/call', 'crash', 12, 'unknown_after_dispatch', {
      detail: 'the server exited with the call in flight; mcpguard does not retry',
    });
}
refused(flaky, 9, 'echo', 'cancelled_before_dispatch', '--restart-wait 30000 ms expired before the server was back');
later(400);
end(
  flaky,
  { completed: 4, unknown_after_dispatch: 2, cancelled_before_dispatch: 1 },
  {
    pid: 4848,
    name: 'flaky',
    name_source: 'option',
    restarts: 2,
    generations: 3,
    restarts_stopped_by: null,
    rejected: { client: 0, child: 0 },
    frames: { client: 9, child: 9 },
  },
);
