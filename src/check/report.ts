/**
 * The check's two outputs: a text report for a person and one JSON object for
 * a machine. Both list the same violations, with the same messages. Untrusted
 * bytes reach them only escaped (stdout findings) or masked, bounded and
 * prefixed line by line (the stderr excerpt), so the server cannot forge a
 * line of the report.
 */
import { renderExcerpt } from '../stderr/excerpt.js';
import type { CheckPlan } from './options.js';
import type { RunReport } from './run.js';

/** Most UTF-8 bytes of stderr shown per run in the text report. */
const TEXT_STDERR_BYTES = 4096;

export interface Violation {
  stream: 'stdout' | 'behaviour';
  kind: string;
  message: string;
  line?: number;
  bytes?: string;
  length?: number;
  reason?: string;
}

export function violationsOf(run: RunReport): Violation[] {
  return [
    ...run.stdout.findings.map((f): Violation => ({ stream: 'stdout', ...f })),
    ...run.behaviour.map((f): Violation => ({ stream: 'behaviour', ...f })),
  ];
}

function countOf(run: RunReport): number {
  return run.stdout.findings.length + run.stdout.omitted + run.behaviour.length;
}

export function jsonReport(plan: CheckPlan, runs: readonly RunReport[], exitCode: number): Record<string, unknown> {
  return {
    mcpguard: 'check',
    result: resultOf(runs),
    exit_code: exitCode,
    command: [plan.command, ...plan.args],
    cwd: plan.cwd ?? null,
    // Names only: values given with --env are often secrets.
    env_added: plan.addedEnv.map((pair) => pair.slice(0, pair.indexOf('='))),
    protocol_version: plan.protocolVersion,
    call: plan.call,
    start_timeout_ms: plan.startTimeoutMs,
    timeout_ms: plan.timeoutMs,
    grace_ms: plan.graceMs,
    violations: runs.reduce((sum, run) => sum + countOf(run), 0),
    runs: runs.map((run) => ({
      run: run.run,
      result: run.status,
      error: run.error,
      duration_ms: run.durationMs,
      violations: violationsOf(run),
      omitted_violations: run.stdout.omitted,
      stdout: { bytes: run.stdout.bytes, lines: run.stdout.lines, messages: run.stdout.messages, notifications: run.stdout.notifications, server_requests: run.stdout.serverRequests },
      steps: run.steps,
      server: run.server === null ? null : { protocol_version: run.server.protocolVersion, name: run.server.name, version: run.server.version, tools: run.server.tools },
      exit: run.exit === null ? null : {
        code: run.exit.code, signal: run.exit.signal, how: run.exit.how, ms_after_stdin_closed: run.exit.msAfterStdinClosed,
        signals_sent: run.exit.signalsSent, survivors: run.exit.survivors,
      },
      stderr: { bytes: run.stderr.bytes, masked: run.stderr.masked, excerpt: renderExcerpt(run.stderr.ring, { maxBytes: Infinity, label: false }) },
    })),
  };
}

export function resultOf(runs: readonly RunReport[]): RunReport['status'] {
  if (runs.some((r) => r.status === 'could_not_run')) return 'could_not_run';
  if (runs.some((r) => r.status === 'interrupted')) return 'interrupted';
  return runs.some((r) => r.status === 'violations') ? 'violations' : 'clean';
}

export function textReport(plan: CheckPlan, runs: readonly RunReport[]): string {
  const out: string[] = [];
  out.push(`mcpguard check -- ${[plan.command, ...plan.args].map(shellWord).join(' ')}`);
  const setup = [`protocol ${plan.protocolVersion}`, `start timeout ${plan.startTimeoutMs} ms`, `timeout ${plan.timeoutMs} ms`, `grace ${plan.graceMs} ms`];
  if (plan.cwd !== undefined) setup.push(`cwd ${shellWord(plan.cwd)}`);
  if (plan.addedEnv.length > 0) setup.push(`env ${plan.addedEnv.map((p) => p.slice(0, p.indexOf('='))).join(', ')} set`);
  if (plan.call !== null) setup.push(`call ${plan.call.name}`);
  out.push(setup.join(', '));
  for (const run of runs) {
    const count = countOf(run);
    out.push('', `run ${run.run} of ${plan.runs}: ${run.status === 'clean' ? 'ok' : run.status === 'violations' ? `FAIL, ${plural(count, 'violation')}` : run.error}`);
    if (run.status === 'could_not_run') continue;
    for (const v of violationsOf(run)) out.push(`  ✗ ${oneLine(v.message)}`);
    if (run.stdout.omitted > 0) out.push(`  ✗ … and ${plural(run.stdout.omitted, 'more stdout violation')} not listed`);
    const s = run.stdout;
    out.push(`  stdout: ${plural(s.lines, 'line')}, ${plural(s.bytes, 'byte')}, ${plural(s.messages, 'protocol message')}${s.notifications > 0 ? ` (${plural(s.notifications, 'notification')})` : ''}${s.serverRequests.length > 0 ? `; server requests: ${oneLine(s.serverRequests.join(', '))}` : ''}`);
    for (const step of run.steps) {
      const answer = step.ms === null ? step.detail : `answered in ${step.ms} ms${step.detail === '' ? '' : step.outcome === 'error' ? ` with ${step.detail}` : `: ${step.detail}`}`;
      out.push(oneLine(`  ${step.label}: ${answer}`));
    }
    if (run.exit !== null) out.push(`  exit: ${describeExit(run.exit)}`);
    out.push(`  stderr: ${plural(run.stderr.bytes, 'byte')}${run.stderr.masked > 0 ? `, ${plural(run.stderr.masked, 'secret')} masked` : ''}${run.stderr.bytes > 0 ? ' (not a violation: shown for diagnosis)' : ''}`);
    if (run.stderr.bytes > 0) {
      const text = renderExcerpt(run.stderr.ring, { maxBytes: TEXT_STDERR_BYTES, label: false });
      for (const line of text.replace(/\n$/, '').split('\n')) out.push(`    | ${visible(line)}`);
    }
  }
  const total = runs.reduce((sum, run) => sum + countOf(run), 0);
  const result = resultOf(runs);
  out.push('', result === 'clean' ? `result: ok, ${plural(runs.length, 'clean run')}`
    : result === 'violations' ? `result: FAIL, ${plural(total, 'violation')} (${runs.filter((r) => countOf(r) > 0).length} of ${plural(runs.length, 'run')} failed)`
      : `result: ${runs.find((r) => r.error !== null)?.error ?? result}`);
  return `${out.join('\n')}\n`;
}

function describeExit(exit: NonNullable<RunReport['exit']>): string {
  const status = exit.signal !== null ? `signal ${exit.signal}` : `exit status ${exit.code}`;
  // Signals after the server's own exit went to processes it left behind.
  const leftovers = exit.signalsSent.length > 0 ? `; mcpguard sent ${exit.signalsSent.join(', ')} to processes it left behind` : '';
  switch (exit.how) {
    case 'before_stdin_closed': return `${status}, before stdin was closed${leftovers}`;
    case 'after_stdin_closed': return `${status}, ${exit.msAfterStdinClosed} ms after stdin closed${leftovers}`;
    case 'after_sigterm': return `stopped with SIGTERM ${exit.msAfterStdinClosed} ms after stdin closed (${status})`;
    case 'after_sigkill': return `killed with SIGKILL ${exit.msAfterStdinClosed} ms after stdin closed (${status})`;
    case 'unkillable': return `still running after ${exit.signalsSent.join(', ')}`;
    case 'interrupted': return `${status}; the shutdown was cut short by a second signal to mcpguard (sent ${exit.signalsSent.join(', ') || 'nothing'})`;
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Text with parts the server chose (names, messages) as one visible line. */
function oneLine(text: string): string {
  return visible(text).replace(/\n/g, '\\n').replace(/\t/g, '\\t');
}

/** Control and bidi characters of untrusted text as escapes: they could rewrite the terminal line. */
function visible(line: string): string {
  return line.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
