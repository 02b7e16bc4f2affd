// Micro-benchmarks that other work added next to run.js (bench/records.js for
// the audit log, bench/stderr.js for the stderr budgets). They are run as they
// are, when present, and their output is appended below the table verbatim.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { ROOT, NODE } from './variants.js';

const SCRIPTS = [
  { file: 'bench/records.js', quickArgs: ['2000', '100'] },
  { file: 'bench/stderr.js', quickArgs: [] },
  { file: 'bench/gate-schema.js', quickArgs: ['--quick'] },
  { file: 'bench/scan.js', quickArgs: ['--quick'] },
];

export async function microSections({ quick }, progress) {
  const sections = [];
  for (const { file, quickArgs } of SCRIPTS) {
    if (!existsSync(`${ROOT}${file}`)) continue;
    const args = quick ? quickArgs : [];
    progress(`micro ${file}`);
    const text = await new Promise((resolve) => {
      execFile(NODE, [file, ...args], { cwd: ROOT, timeout: 300_000, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
        resolve(error ? `(failed: ${error.message.split('\n')[0]}${stderr ? `; ${stderr.trim().split('\n').at(-1)}` : ''})` : stdout.trimEnd());
      });
    });
    sections.push(`## ${file} (node ${[file, ...args].join(' ')})\n\n\`\`\`\n${text}\n\`\`\``);
  }
  return sections;
}
