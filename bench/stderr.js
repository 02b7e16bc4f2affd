// Micro-benchmark of the stderr hot path: 1 GiB of `helper-diagnostic\n` in
// 64 KiB chunks (cut at arbitrary points of the line, as a pipe would) fed the
// way the session feeds it: Redactor.feed, then StderrStore.write and
// Passthrough.write with the redacted bytes. Printed beside a baseline loop
// that only sums chunk lengths (as asked) and, for scale, a JS loop that reads
// every byte once, with peak RSS.
//
//   npx tsc -p tsconfig.json && node bench/stderr.js [GiB]
import { Redactor } from '../dist/mask/redact.js';
import { StderrStore } from '../dist/stderr/budget.js';
import { Passthrough } from '../dist/stderr/passthrough.js';

const GIB = Number(process.argv[2] ?? 1);
const CHUNK = 64 * 1024;
const TOTAL = Math.round(GIB * 1024 ** 3);
const LINE = 'helper-diagnostic\n';

// Chunks start at every offset of the line, so boundaries fall mid-word.
const long = Buffer.from(LINE.repeat(Math.ceil((CHUNK + LINE.length) / LINE.length)));
const chunks = Array.from({ length: LINE.length }, (_, off) => Buffer.from(long.subarray(off, off + CHUNK)));

const ENV = {
  GITHUB_TOKEN: 'ghp_0123456789abcdefghijABCDEFGHIJ012345',
  OPENAI_API_KEY: 'sk-proj-0123456789abcdefghijklmnop',
  DB_PASSWORD: 'correct horse battery staple',
  AWS_SECRET_ACCESS_KEY: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  SESSION_COOKIE: 'sid=9f8e7d6c5b4a',
};

let peakRss = process.memoryUsage.rss();
function sampleRss() {
  const rss = process.memoryUsage.rss();
  if (rss > peakRss) peakRss = rss;
}

function feed(onChunk) {
  let sent = 0;
  let i = 0;
  const start = process.hrtime.bigint();
  while (sent < TOTAL) {
    const chunk = chunks[i++ % chunks.length];
    onChunk(chunk);
    sent += chunk.length;
    if ((i & 1023) === 0) sampleRss();
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  sampleRss();
  return { sent, seconds, mibps: sent / 1024 ** 2 / seconds };
}

function pipeline(inFlight) {
  const redactor = new Redactor({ env: ENV });
  const store = new StderrStore();
  const mirror = new Passthrough({ write: () => true });
  const keep = (safe) => {
    store.write(safe, inFlight);
    mirror.write(safe);
  };
  const r = feed((chunk) => redactor.feed(chunk, keep));
  const tail = redactor.flush();
  store.write(tail, inFlight);
  if (store.seen !== r.sent || redactor.count !== 0) throw new Error(`accounting: seen ${store.seen} of ${r.sent}, ${redactor.count} redactions`);
  if (store.retained > store.processBytes) throw new Error(`retained ${store.retained} over budget`);
  return { ...r, retained: store.retained, suppressed: mirror.suppressed };
}

const mib = (n) => (n / 1024 ** 2).toFixed(1);

// Warm the JIT on the same code paths so the rows compare steady states.
{
  const r = new Redactor({ env: ENV });
  const store = new StderrStore();
  for (let i = 0; i < 2048; i++) r.feed(chunks[i % chunks.length], (safe) => store.write(safe, i & 1 ? ['w'] : []));
}
const rssBefore = process.memoryUsage.rss();
peakRss = rssBefore;

let total = 0;
const baseline = feed((chunk) => {
  total += chunk.length;
});
if (total !== baseline.sent) throw new Error('baseline');

let x = 0;
const touch = feed((chunk) => {
  for (let i = 0; i < chunk.length; i++) x ^= chunk[i];
});
if (x === -1) throw new Error('unreachable');

const rows = [
  ['baseline (sum lengths)', baseline],
  ['reference: JS loop reading every byte', touch],
  ['redact + store, no call in flight', pipeline([])],
  ['redact + store, 1 call in flight', pipeline(['c1'])],
  ['redact + store, 50 calls in flight', pipeline(Array.from({ length: 50 }, (_, i) => `c${i}`))],
];

process.stdout.write(`stderr hot path: ${mib(TOTAL)} MiB in ${CHUNK / 1024} KiB chunks, node ${process.version}\n`);
for (const [name, r] of rows) {
  const ratio = r === baseline ? '' : `  ${(baseline.mibps / r.mibps).toFixed(0)}x baseline time`;
  const kept = r.retained === undefined ? '' : `  retained ${r.retained} B`;
  process.stdout.write(`${name.padEnd(38)} ${r.mibps.toFixed(0).padStart(8)} MiB/s  ${r.seconds.toFixed(2)} s${kept}${ratio}\n`);
}
const maxRss = process.resourceUsage().maxRSS * 1024;
process.stdout.write(`RSS before ${mib(rssBefore)} MiB, peak sampled ${mib(peakRss)} MiB (+${mib(peakRss - rssBefore)} MiB), maxRSS ${mib(maxRss)} MiB\n`);
