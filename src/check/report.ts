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
  /** Set for the probe's own process (auto, legacy server): its stdout lines are numbered from 1 too. */
  process?: 'probe';
  kind: string;
  message: string;
  line?: number;
  bytes?: string;
  length?: number;
  reason?: string;
}

export function violationsOf(run: RunReport): Violation[] {
  const probe = run.era.probe?.stdout.findings ?? [];
  return [
    ...probe.map((f): Violation => ({ stream: 'stdout', process: 'probe', ...f, message: `probe process: ${f.message}` })),
    ...run.stdout.findings.map((f): Violation => ({ stream: 'stdout', ...f })),
    ...run.behaviour.map((f): Violation => ({ stream: 'behaviour', ...f })),
  ];
}

function countOf(run: RunReport): number {
  return omittedOf(run) + run.stdout.findings.length + run.behaviour.length + (run.era.probe?.stdout.findings.length ?? 0);
}

function omittedOf(run: RunReport): number {
  return run.stdout.omitted + (run.era.probe?.stdout.omitted ?? 0);
}

function stdoutJson(s: RunReport['stdout']): Record<string, unknown> {
  return { bytes: s.bytes, lines: s.lines, messages: s.messages, notifications: s.notifications, server_requests: s.serverRequests };
}

function exitJson(exit: NonNullable<RunReport['exit']>): Record<string, unknown> {
  return {
    code: exit.code,
    signal: exit.signal,
    how: exit.how,
    ms_after_stdin_closed: exit.msAfterStdinClosed,
    signals_sent: exit.signalsSent,
    survivors: exit.survivors,
  };
}

function stderrJson(stderr: RunReport['stderr']): Record<string, unknown> {
  return { bytes: stderr.bytes, masked: stderr.masked, excerpt: renderExcerpt(stderr.ring, { maxBytes: Infinity, label: false }) };
}

function eraJson(run: RunReport): Record<string, unknown> {
  const { era, decidedBy, how, probe } = run.era;
  return {
    era,
    protocol_version: run.server?.protocolVersion ?? null,
    decided_by: decidedBy,
    how,
    probe_process: probe === null ? null : { step: probe.step, stdout: stdoutJson(probe.stdout), exit: exitJson(probe.exit), stderr: stderrJson(probe.stderr) },
  };
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
      era: eraJson(run),
      violations: violationsOf(run),
      omitted_violations: omittedOf(run),
      stdout: stdoutJson(run.stdout),
      steps: run.steps,
      server:
        run.server === null
          ? null
          : { protocol_version: run.server.protocolVersion, name: run.server.name, version: run.server.version, tools: run.server.tools },
      exit: run.exit === null ? null : exitJson(run.exit),
      stderr: stderrJson(run.stderr),
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
    out.push(
      '',
      `run ${run.run} of ${plan.runs}: ${run.status === 'clean' ? 'ok' : run.status === 'violations' ? `FAIL, ${plural(count, 'violation')}` : run.error}`,
    );
    if (run.status === 'could_not_run') continue;
    for (const v of violationsOf(run)) out.push(`  ✗ ${oneLine(v.message)}`);
    if (omittedOf(run) > 0) out.push(`  ✗ … and ${plural(omittedOf(run), 'more stdout violation')} not listed`);
    out.push(oneLine(`  era: ${describeEra(run)}`));
    const probe = run.era.probe;
    if (probe !== null) {
      out.push(
        oneLine(
          `  probe process: ${probe.step.label}: ${describeStep(probe.step)}; stdout ${describeStdout(probe.stdout)}; ${describeExit(probe.exit)}; stderr ${plural(probe.stderr.bytes, 'byte')}${probe.stderr.bytes > 0 ? ' (not shown)' : ''}`,
        ),
      );
    }
    out.push(oneLine(`  stdout: ${describeStdout(run.stdout)}`));
    for (const step of run.steps) out.push(oneLine(`  ${step.label}: ${describeStep(step)}`));
    if (run.exit !== null) out.push(`  exit: ${describeExit(run.exit)}`);
    out.push(
      `  stderr: ${plural(run.stderr.bytes, 'byte')}${run.stderr.masked > 0 ? `, ${plural(run.stderr.masked, 'secret')} masked` : ''}${run.stderr.bytes > 0 ? ' (not a violation: shown for diagnosis)' : ''}`,
    );
    if (run.stderr.bytes > 0) {
      const text = renderExcerpt(run.stderr.ring, { maxBytes: TEXT_STDERR_BYTES, label: false });
      for (const line of text.replace(/\n$/, '').split('\n')) out.push(`    | ${visible(line)}`);
    }
  }
  const total = runs.reduce((sum, run) => sum + countOf(run), 0);
  const result = resultOf(runs);
  out.push(
    '',
    result === 'clean'
      ? `result: ok, ${plural(runs.length, 'clean run')}`
      : result === 'violations'
        ? `result: FAIL, ${plural(total, 'violation')} (${runs.filter((r) => countOf(r) > 0).length} of ${plural(runs.length, 'run')} failed)`
        : `result: ${runs.find((r) => r.error !== null)?.error ?? result}`,
  );
  return `${out.join('\n')}\n`;
}

function describeEra(run: RunReport): string {
  const { era, how } = run.era;
  if (era === null) return how;
  const version = run.server?.protocolVersion;
  return `${era}${version === null || version === undefined ? '' : `, protocol ${version}`} (${how})`;
}

function describeStdout(s: RunReport['stdout']): string {
  return `${plural(s.lines, 'line')}, ${plural(s.bytes, 'byte')}, ${plural(s.messages, 'protocol message')}${s.notifications > 0 ? ` (${plural(s.notifications, 'notification')})` : ''}${s.serverRequests.length > 0 ? `; server requests: ${s.serverRequests.join(', ')}` : ''}`;
}

function describeStep(step: RunReport['steps'][number]): string {
  if (step.ms === null) return step.detail;
  return `answered in ${step.ms} ms${step.detail === '' ? '' : step.outcome === 'error' ? ` with ${step.detail}` : `: ${step.detail}`}`;
}

function describeExit(exit: NonNullable<RunReport['exit']>): string {
  const status = exit.signal !== null ? `signal ${exit.signal}` : `exit status ${exit.code}`;
  // Signals after the server's own exit went to processes it left behind.
  const leftovers = exit.signalsSent.length > 0 ? `; mcpguard sent ${exit.signalsSent.join(', ')} to processes it left behind` : '';
  switch (exit.how) {
    case 'before_stdin_closed':
      return `${status}, before stdin was closed${leftovers}`;
    case 'after_stdin_closed':
      return `${status}, ${exit.msAfterStdinClosed} ms after stdin closed${leftovers}`;
    case 'after_sigterm':
      return `stopped with SIGTERM ${exit.msAfterStdinClosed} ms after stdin closed (${status})`;
    case 'after_sigkill':
      return `killed with SIGKILL ${exit.msAfterStdinClosed} ms after stdin closed (${status})`;
    case 'unkillable':
      return `still running after ${exit.signalsSent.join(', ')}`;
    case 'interrupted':
      return `${status}; the shutdown was cut short by a second signal to mcpguard (sent ${exit.signalsSent.join(', ') || 'nothing'})`;
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
