/**
 * `mcpguard check [options] -- <command> [args...]`: the clean-stdout release
 * test as one command. It starts the server as it would be run, speaks the
 * opening of an MCP session in the server's era (2026-07-28, or the
 * initialize era before it), closes stdin, waits through the grace path, and
 * reports every byte on stdout that is not a protocol message, every answer
 * that is missing or malformed, and how the server ended. Unlike the relay,
 * this command's stdout is its report.
 *
 *   exit 0  every run clean
 *   exit 1  violations found
 *   exit 2  could not run (bad options, command not found, interrupted)
 *
 * The parts: check/options.ts (argv), check/run.ts (one run), check/server.ts
 * (one server process), check/era.ts (the probe), check/exchange.ts (requests
 * and their answers), check/conversation.ts and check/modern.ts (what each
 * era's answers must hold), check/tools.ts (the same in both),
 * check/transcript.ts (stdout as raw bytes), check/report.ts (text and JSON).
 */
import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { ignoredSignalText, reportDebugSignals } from '../process/debug-signals.js';
import { GuardError } from '../base/errors.js';
import { Masker, processMasker } from '../mask/mask.js';
import { openOutput } from '../base/output.js';
import type { OptionSpec } from '../base/option-table.js';
import { CHECK_OPTIONS, parseCheckArgv, type CheckPlan } from './options.js';
import { jsonReport, resultOf, textReport } from './report.js';
import { checkOnce, type Interrupt, type RunReport } from './run.js';

export const CHECK_CLEAN = 0;
export const CHECK_VIOLATIONS = 1;
export const CHECK_COULD_NOT_RUN = 2;

/** How long the report may take to reach a slow stdout reader before it is given up. */
const OUTPUT_WAIT_MS = 10000;

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

/**
 * Run `mcpguard check` with `argv` (the words after `check`); resolves to the
 * exit code once the report is written. Never throws for what the server does.
 */
export async function runCheck(argv: readonly string[]): Promise<number> {
  const out = openOutput(1);
  const err = openOutput(2);
  let plan: CheckPlan | null;
  try {
    plan = parseCheckArgv(argv);
  } catch (error) {
    if (!(error instanceof GuardError)) throw error;
    // Option errors quote the option's value: `--env sk-…` missing its `=` is still a key.
    await writeAll(err, `mcpguard check: ${processMasker().text(error.message)}\n`);
    return CHECK_COULD_NOT_RUN;
  }
  if (plan === null) {
    await writeAll(out, checkHelp());
    return CHECK_CLEAN;
  }

  reportDebugSignals((what) => void writeAll(err, `mcpguard check: ${ignoredSignalText(what)}\n`));
  const { interrupt, undo } = listenForInterrupts();
  const runs: RunReport[] = [];
  try {
    for (let run = 1; run <= plan.runs; run++) {
      const report = await checkOnce(plan, VERSION, run, interrupt);
      runs.push(report);
      if (report.status === 'could_not_run' || report.status === 'interrupted') break;
    }
  } finally {
    undo();
  }

  const result = resultOf(runs);
  const code = result === 'clean' ? CHECK_CLEAN : result === 'violations' ? CHECK_VIOLATIONS : CHECK_COULD_NOT_RUN;
  // Reports quote the server (its name, tools, error messages) and the command
  // line: masked as a whole, with the server's environment, --env included.
  const masker = new Masker(plan.env);
  const failed = runs.find((r) => r.error !== null);
  if (failed !== undefined) await writeAll(err, `mcpguard check: ${masker.text(failed.error!)}\n`);
  if (plan.json) await writeAll(out, `${JSON.stringify(masker.value(jsonReport(plan, runs, code)))}\n`);
  else if (result !== 'could_not_run') await writeAll(out, masker.text(textReport(plan, runs)));
  return code;
}

/** SIGINT/SIGTERM/SIGHUP/SIGQUIT: the first ends the conversation, a second cuts the grace waits short. */
function listenForInterrupts(): { interrupt: Interrupt; undo: () => void } {
  let first!: () => void;
  let second!: () => void;
  const firstSeen = new Promise<void>((resolve) => (first = resolve));
  const secondSeen = new Promise<void>((resolve) => (second = resolve));
  const interrupt: Interrupt = { first: firstSeen, second: () => secondSeen, signal: null, cut: false };
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupt.signal === null) {
      interrupt.signal = signal;
      first();
    } else {
      interrupt.cut = true;
      second();
    }
  };
  // SIGQUIT as well: its default (a core dump, at once) would leave the server running unreported.
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;
  for (const s of signals) process.on(s, onSignal);
  return {
    interrupt,
    undo: () => {
      for (const s of signals) process.off(s, onSignal);
    },
  };
}

/** Write and wait until the bytes are handed to the OS (or the reader is gone, or too slow). */
function writeAll(stream: Writable, text: string): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, OUTPUT_WAIT_MS);
    stream.once('error', () => {}); // EPIPE: nobody reads the report; the exit code still tells
    stream.write(text, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export function checkHelp(): string {
  const table: Record<string, OptionSpec> = CHECK_OPTIONS;
  const options = Object.entries(table).map(([name, spec]) => {
    const arg =
      spec.kind === 'flag'
        ? ''
        : spec.kind === 'enum'
          ? ` ${spec.values!.join('|')}`
          : spec.kind === 'ms'
            ? ' MS'
            : spec.kind === 'bytes'
              ? ' BYTES'
              : name === 'env'
                ? ' KEY=VALUE'
                : name === 'runs'
                  ? ' N'
                  : name === 'cwd'
                    ? ' DIR'
                    : name === 'call'
                      ? ' NAME'
                      : ' JSON';
    const def = spec.default === null || spec.kind === 'flag' ? '' : ` (default ${spec.default})`;
    return `  --${name}${arg}\n      ${spec.help}${def}\n`;
  });
  return `Usage:
  mcpguard check [options] -- <command> [args...]

Starts the server as it would be run and speaks the opening of an MCP session
in the era --protocol-version names, then closes stdin and waits through the
grace path. auto (the default) first sends server/discover, as the SDK v2
client does: a DiscoverResult (or error -32022 naming modern versions) means
the modern era, which continues on the same process; any other answer, none
within --start-timeout, or an exit means the legacy era, which starts on a new
process.
  modern (2026-07-28): server/discover, tools/list (and --call), each with the
    required _meta
  legacy (2024-11-05 ... 2025-11-25): initialize, notifications/initialized,
    tools/list, ping (and --call)
Reports every stdout line that is not a JSON-RPC message or that the era
forbids, answers that are missing or malformed, and how the server exited;
shows stderr separately.

Options:
${options.join('')}
Exit status: 0 clean, 1 violations found, 2 could not run.
`;
}
