// Seed 004's consent measure: how long a person waits for the approval card.
// A legacy session through mcpguard with a policy that asks for the one tool
// the server has, and a client that declared elicitation. Each call is timed
// from just before its tools/call is written to mcpguard's stdin to the
// arrival of mcpguard's `elicitation/create` (the card) at the client; the
// client then accepts, waits for the call's result (the server's answer),
// and the next call goes. Two variants, interleaved: the server quiet, and
// the same server with a thread writing its stderr without pause, before,
// during and after every request (bench/fixtures/noisy-echo-server.js).
// Nothing of the call reaches the server before the card: what the flood can
// slow down is mcpguard's own event loop, which drains and masks that stderr.
// Before the timed calls, the client lists the tools (so mcpguard knows the
// schema and asks no tools/list of its own) and runs `warmup` untimed cards.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { interleave, roundName } from './interleave.js';
import { benchHome, launch, stop } from './proc.js';
import { INITIALIZE_PARAMS, Peer, requestFrame } from './rpc.js';
import { median, pairedRatio, percentiles } from './stats.js';
import { line, num, ratioText } from './table.js';
import { NODE, ROOT, guarded } from './variants.js';

const NOISY_SERVER = `${ROOT}bench/fixtures/noisy-echo-server.js`;
const CALL = { name: 'echo', arguments: { size: 64 } };
const ASK_ECHO = { default: 'allow', rules: [{ tool: 'echo', decision: 'ask', reason: 'the consent bench' }] };
/** A card or a result that takes this long means the session is stuck: fail the run, do not hang it. */
const STUCK_MS = 30000;
const CARD_ID = /"id"\s*:\s*"((?:[^"\\]|\\.)*)"/;

/** A Peer that also catches mcpguard's own requests: its approval cards. */
class CardPeer extends Peer {
  constructor(child) {
    super(child);
    this.cardWaiter = null;
  }

  onLine(head, bytes, at) {
    const text = head.toString('latin1');
    if (!text.includes('"method":"elicitation/create"')) return super.onLine(head, bytes, at);
    const id = CARD_ID.exec(text)?.[1];
    const waiter = this.cardWaiter;
    this.cardWaiter = null;
    if (waiter === null) throw new Error(`consent: a card nobody waited for: ${text}`);
    if (id === undefined) waiter.reject(new Error(`consent: no string id in the first bytes of the card: ${text}`));
    else waiter.resolve({ id, at });
  }

  /** The next card to arrive. */
  nextCard() {
    return new Promise((resolve, reject) => {
      this.cardWaiter = { resolve, reject };
    });
  }

  answerCard(id, action) {
    this.child.stdin.write(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"action":"${action}","content":{}}}\n`);
  }
}

function bounded(promise, what) {
  let timer;
  const stuck = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`consent: no ${what} within ${STUCK_MS} ms`)), STUCK_MS);
  });
  return Promise.race([promise, stuck]).finally(() => clearTimeout(timer));
}

/** One approved call: µs from the tools/call's write to its card, and from the accept's write to the call's result. */
async function approvedCall(peer) {
  const id = peer.reserveId();
  const frame = requestFrame(id, 'tools/call', CALL);
  const card = peer.nextCard();
  let carded = false;
  const t0 = process.hrtime.bigint();
  const result = peer.send(id, frame);
  // A result before any card: the policy did not ask, and the number would time the wrong thing.
  const early = result.then(() => {
    if (!carded) throw new Error('consent: the call was answered without a card');
  });
  const shown = await bounded(Promise.race([card, early]), 'card');
  carded = true;
  const t1 = process.hrtime.bigint();
  peer.answerCard(shown.id, 'accept');
  const { at } = await bounded(result, 'result after the accept');
  return { card: Number(shown.at - t0) / 1000, result: Number(at - t1) / 1000 };
}

/** One session: initialize (declaring elicitation), list the tools, `warmup` untimed cards, `requests` timed ones. */
async function consentRun(mode, policyPath, report, { requests, warmup }) {
  const child = launch(guarded([NODE, NOISY_SERVER, mode, report], ['--policy', policyPath]));
  try {
    const peer = new CardPeer(child);
    await peer.call('initialize', { ...INITIALIZE_PARAMS, capabilities: { elicitation: {} } });
    child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
    await peer.call('tools/list', {});
    const first = await approvedCall(peer);
    for (let i = 1; i < warmup; i++) await approvedCall(peer);
    const cards = new Float64Array(requests);
    const results = new Float64Array(requests);
    for (let i = 0; i < requests; i++) ({ card: cards[i], result: results[i] } = await approvedCall(peer));
    return { card: percentiles(cards), result: percentiles(results), firstCard: first.card, cards };
  } finally {
    await stop(child);
  }
}

/** What the flood wrote over the session, in MiB/s (NaN without a report). */
function floodRate(path) {
  try {
    const { bytes, seconds } = JSON.parse(readFileSync(path, 'utf8'));
    return bytes / 2 ** 20 / seconds;
  } catch {
    return NaN;
  } finally {
    rmSync(path, { force: true });
  }
}

export async function consentRows({ rounds, requests, warmup, warmupRounds = 1 }, progress) {
  const policyPath = join(benchHome, 'consent-policy.json');
  writeFileSync(policyPath, JSON.stringify(ASK_ECHO));
  const variants = [
    { name: 'quiet', label: 'server quiet' },
    { name: 'flood', label: 'server flooding its stderr' },
  ];
  let sessions = 0;
  const samples = await interleave(
    variants,
    rounds,
    async (v, r) => {
      progress(`consent ${v.name} ${roundName(r, rounds)}`);
      const report = join(benchHome, `consent-${sessions++}.json`);
      const sample = await consentRun(v.name, policyPath, report, { requests, warmup });
      const floodMiBps = floodRate(report);
      if (v.name === 'flood' && !(floodMiBps > 0))
        throw new Error('consent: the flooding server wrote no stderr: the flood variant would measure a quiet server');
      return { ...sample, floodMiBps };
    },
    { warmup: warmupRounds },
  );

  const series = (name, pick) => samples[name].map(pick);
  const lines = [];
  const rowOf = {
    card: (q) => `consent: tools/call written → approval card at the client, ${q} (µs), calls ${warmup + 1}-${warmup + requests} × ${rounds} rounds`,
    result: (q) => `consent: accept written → the call's result, ${q} (µs), same calls`,
  };
  for (const [what, q] of [
    ['card', 'p50'],
    ['card', 'p99'],
    ['result', 'p50'],
  ]) {
    const quiet = series('quiet', (s) => s[what][q]);
    const flood = series('flood', (s) => s[what][q]);
    lines.push(line(rowOf[what](q), variants[0].label, num(median(quiet)), 'baseline'));
    lines.push(line(rowOf[what](q), variants[1].label, num(median(flood)), ratioText(pairedRatio(flood, quiet), 'quiet')));
  }
  const pooled = (name) => {
    const all = Float64Array.from(samples[name].flatMap((s) => [...s.cards])).sort();
    return { ...percentiles(all), max: all[all.length - 1], n: all.length };
  };
  const notes = [];
  for (const v of variants) {
    const p = pooled(v.name);
    notes.push(
      `consent, ${v.label}: all ${p.n} timed cards pooled: p50 ${num(p.p50)} µs, p99 ${num(p.p99)} µs, max ${num(p.max)} µs; first card of each session (after initialize and tools/list, JIT cold): median ${num(median(series(v.name, (s) => s.firstCard)))} µs`,
    );
  }
  const roundRatios = (q) => {
    const ratios = samples.flood.map((s, i) => s.card[q] / samples.quiet[i].card[q]);
    return `${num(Math.min(...ratios))}-${num(Math.max(...ratios))}×`;
  };
  notes.push(`consent: flood/quiet per round, card p50 ${roundRatios('p50')}, card p99 ${roundRatios('p99')}`);
  notes.push(
    `consent: the flooding server wrote its stderr at ${num(median(series('flood', (s) => s.floodMiBps)))} MiB/s over each session (median of rounds; the pace at which mcpguard drained it); policy: ask for echo, default allow; every card accepted; server: bench/fixtures/noisy-echo-server.js`,
  );
  return { lines, notes };
}
