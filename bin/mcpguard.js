#!/usr/bin/env node
// Before anything else loads: while mcpguard listens for SIGUSR1 itself, Node
// does not open its inspector on it (see dist/process/debug-signals.js).
const { holdDebugSignals } = await import('../dist/process/debug-signals.js');
holdDebugSignals();
const { main } = await import('../dist/cli/main.js');

process.exitCode = await main(process.argv.slice(2));
// Exit now: the relay flushed what it could within its bounds, and a paused
// stdin or a stray handle must not keep a finished session alive.
process.exit();
