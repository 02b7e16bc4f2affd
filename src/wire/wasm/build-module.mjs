#!/usr/bin/env node
// Compiles string-body.wat (beside this file) with wabt (a pinned
// devDependency: the JavaScript build of wat2wasm) and embeds the module,
// base64, as MODULE in string-body.ts. Run after editing the .wat:
//   node src/wire/wasm/build-module.mjs           rewrite string-body.ts
//   node src/wire/wasm/build-module.mjs --check   exit 1 if string-body.ts is stale
// test/wire/string-body.test.js runs the check, so the two never drift apart.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const WAT = fileURLToPath(new URL('string-body.wat', import.meta.url));
const TS = fileURLToPath(new URL('string-body.ts', import.meta.url));
// The formatter puts the long string on a line of its own: any whitespace after the `=`.
const EMBEDDED = /const MODULE =\s*'([A-Za-z0-9+/=]*)';/;

/** The module compiled from the .wat, base64. */
export async function compiledModule() {
  const wabt = await (await import('wabt')).default();
  const parsed = wabt.parseWat('string-body.wat', readFileSync(WAT, 'utf8'), { simd: true });
  try {
    parsed.validate();
    return Buffer.from(parsed.toBinary({}).buffer).toString('base64');
  } finally {
    parsed.destroy();
  }
}

/** The module string-body.ts embeds, base64. */
export function embeddedModule() {
  const match = EMBEDDED.exec(readFileSync(TS, 'utf8'));
  if (match === null) throw new Error(`no MODULE constant in ${TS}`);
  return match[1];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const fresh = await compiledModule();
  if (process.argv.includes('--check')) {
    if (fresh !== embeddedModule()) {
      process.stderr.write(`${TS} is stale: run node src/wire/wasm/build-module.mjs\n`);
      process.exit(1);
    }
  } else {
    writeFileSync(TS, readFileSync(TS, 'utf8').replace(EMBEDDED, `const MODULE =\n  '${fresh}';`));
    process.stderr.write(`${TS}: MODULE rewritten (${Buffer.from(fresh, 'base64').length} bytes)\n`);
  }
}
