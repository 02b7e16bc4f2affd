/**
 * SIGUSR1 and SIGUSR2, which mcpguard has no use for. Unhandled, SIGUSR1 makes
 * Node open its inspector on 127.0.0.1:9229 (a debugging port, with full code
 * execution, on a security tool) and SIGUSR2 terminates the process at once,
 * skipping the shutdown: no answers, an unsealed log. A listener of our own
 * stops both (Node starts the inspector only while nothing listens for
 * SIGUSR1). bin/mcpguard.js installs it before loading anything else.
 *
 * A SIGUSR1 that arrives while Node itself is starting, before any of
 * mcpguard's code runs, still opens the inspector: that one is closed as soon
 * as mcpguard runs, and looked for again shortly after (the request to start
 * it passes through a helper thread and may land a little later). Only an
 * inspector asked for on the command line (`node --inspect …`) is left open.
 *
 * Each signal is reported once, as a diagnostic line, when whoever owns
 * mcpguard's stderr asks for the reports.
 */
const SIGNALS = ['SIGUSR1', 'SIGUSR2'] as const;

/** What is reported: an ignored signal, or an inspector that was found open and closed. */
export type Ignored = NodeJS.Signals | 'inspector';

let installed = false;
let report: ((what: Ignored) => void) | null = null;
const seen = new Set<Ignored>();
const unreported: Ignored[] = [];

/** Install the listeners (once). */
export function holdDebugSignals(): void {
  if (installed) return;
  installed = true;
  for (const s of SIGNALS) process.on(s, noted);
  closeStrayInspector();
}

// Once per kind: a flood of signals must not flood stderr or grow a queue.
function noted(what: Ignored): void {
  if (seen.has(what)) return;
  seen.add(what);
  if (report === null) unreported.push(what);
  else report(what);
}

/** Recheck for an inspector opened during Node's start-up after these delays, ms. */
const RECHECK_MS = [100, 1000];

function closeStrayInspector(): void {
  const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
  if (!process.features.inspector || flags.some((flag) => /^--inspect/.test(flag))) return;
  void import('node:inspector').then(
    (inspector) => {
      const check = (): void => {
        if (inspector.url() === undefined) return;
        inspector.close();
        noted('inspector');
      };
      check();
      for (const ms of RECHECK_MS) setTimeout(check, ms).unref();
    },
    () => {},
  );
}

/** Send the reports (those so far and those to come) to `to`. */
export function reportDebugSignals(to: (what: Ignored) => void): void {
  report = to;
  for (const what of unreported.splice(0)) to(what);
}

/** The diagnostic line for a report. */
export function ignoredSignalText(what: Ignored): string {
  if (what === 'inspector') return 'closed the Node inspector that a SIGUSR1 during start-up had opened';
  return what === 'SIGUSR1' ? 'ignored SIGUSR1: mcpguard does not open a debugger' : `ignored ${what}`;
}
