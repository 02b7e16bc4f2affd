// A reader that is slow on purpose: it waits before reading anything (so the
// writer fills the pipe and has to wait), then takes one chunk at a time with
// a pause after each, and copies what it read to the file named by argv[2].
import { openSync, writeSync, closeSync } from 'node:fs';

const out = openSync(process.argv[2], 'w');
const pauseMs = Number(process.argv[3] ?? 3);
process.stdin.pause();
setTimeout(() => {
  process.stdin.on('data', (chunk) => {
    writeSync(out, chunk);
    process.stdin.pause();
    setTimeout(() => process.stdin.resume(), pauseMs);
  });
  process.stdin.on('end', () => closeSync(out));
  process.stdin.resume();
}, 300);
