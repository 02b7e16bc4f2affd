// Are this build's record lines byte for byte those of another build? Both
// write the golden sessions (test/views/golden-log.js: real AuditLog and
// SessionLog, a fixed clock, fixed pids and call ids) in this one process, so
// what the records take from the process (its start identity) is the same too,
// and every file is compared whole: fields, order, spelling, every `prev` and
// the seal's hash. For a change to the records' code that must not change a byte.
//   npm run build && node bench/records-same.js --before=DIR   # DIR: the other build's root (DIR/dist/...)
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({ options: { before: { type: 'string' } } });
if (args.before === undefined) throw new Error('usage: node bench/records-same.js --before=DIR');
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const source = readFileSync(join(ROOT, 'test', 'views', 'golden-log.js'), 'utf8');
const work = mkdtempSync(join(tmpdir(), 'mcpguard-records-same-'));
// started_ms is Date.now() - process.uptime(): with golden-log's fixed clock, the uptime must hold still too.
process.uptime = () => 1;
try {
  const outs = [];
  for (const [label, root] of [
    ['before', resolve(args.before)],
    ['this build', ROOT],
  ]) {
    const dist = pathToFileURL(join(root, 'dist')).href;
    const script = join(work, `${outs.length}-golden-log.mjs`);
    writeFileSync(script, source.replaceAll("'../../dist/", `'${dist}/`));
    const out = join(work, String(outs.length));
    process.argv[2] = out;
    await import(pathToFileURL(script).href);
    outs.push({ label, out });
  }
  const files = readdirSync(outs[0].out).sort();
  let bytes = 0;
  const differ = [];
  for (const file of files) {
    const a = readFileSync(join(outs[0].out, file));
    const b = readFileSync(join(outs[1].out, file));
    if (a.equals(b)) bytes += a.length;
    else differ.push(file);
  }
  if (readdirSync(outs[1].out).length !== files.length) differ.push('(the builds wrote different files)');
  process.stdout.write(
    `${files.length - differ.length} of ${files.length} session logs byte-identical (${bytes} bytes)${differ.length === 0 ? '' : `; different: ${differ.join(', ')}`}\n`,
  );
  process.exitCode = differ.length === 0 ? 0 : 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
