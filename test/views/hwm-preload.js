// Loaded with `node --import` before mcpguard: at exit, the process's peak
// resident set (VmHWM, from its own /proc entry) goes to the file named by
// MCPGUARD_TEST_HWM_FILE. Linux only: elsewhere nothing is written.
import { readFileSync, writeFileSync } from 'node:fs';

process.on('exit', () => {
  try {
    const kb = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kb !== undefined) writeFileSync(process.env.MCPGUARD_TEST_HWM_FILE, kb);
  } catch {
    /* no /proc: the test skips */
  }
});
