/**
 * `mcpguard pins [list | show NAME | diff NAME | accept NAME [TOOL] | forget NAME | log [NAME]]`:
 * the pinned tool definitions of each server identity, the changes held
 * (ask, block), and a person's decision about them. Tables for people,
 * `--json` (one object per line, ISO UTC times) for tools; tables fit the
 * terminal and show local times (`--utc`: UTC) as the record views do. `accept` and `forget` are
 * recorded in the pins directory's decision chain (decisions.ts) before they
 * take effect, signed with `--audit-key-file` when given; `log` lists them.
 *
 * NAME is a pin file's id (or a unique prefix of one, at least 4 hex
 * digits), or a server's name: its --name, else its serverInfo.name.
 * Exit status: 0 success; 1 nothing found (no such NAME, a NAME that fits
 * more than one, nothing held to accept, no decision recorded about NAME), or the
 * decision chain does not verify or cannot be written; 125 bad usage.
 */
import { parseArgs } from 'node:util';
import { join } from 'node:path';
import { EXIT_USAGE, GuardError } from '../base/errors.js';
import { loadAuditKey } from '../records/key.js';
import { resolveRecordDir } from '../records/location.js';
import { decide, decisionRecords, readDecisions, verifyDecisions } from '../pins/decisions.js';
import { StreamingTable, type Column, type TableStyle } from './format.js';
import { tableStyle } from './view-kit.js';
import { Clock } from './when.js';
import { diffLines, diffTool, wordDiff } from '../pins/diff.js';
import { jsonLine } from '../mask/escape.js';
import { processMasker, shownText } from '../mask/mask.js';
import { identityLabel, PinStore, type PinFile } from '../pins/store.js';

const VERBS = ['list', 'show', 'diff', 'accept', 'forget', 'log'] as const;
type Verb = (typeof VERBS)[number];
const POSITIONALS: Record<Verb, [number, number]> = { list: [0, 0], show: [1, 1], diff: [1, 1], accept: [1, 2], forget: [1, 1], log: [0, 1] };

interface IO {
  stdout: { write(text: string): unknown; isTTY?: boolean; columns?: number };
  stderr: { write(text: string): unknown };
  env?: Record<string, string | undefined>;
}

/** How tables and times are shown: as the record views show them (terminal width, local time unless --utc). */
interface Look {
  style: TableStyle;
  clock: Clock;
}

/** Rows through the views' table: fitted to the width, its columns given way as `columns` say. */
function grid(columns: Column[], rows: string[][], look: Look): string {
  const t = new StreamingTable(columns, look.style);
  return rows.map((r) => t.add(r)).join('') + t.end();
}

class Failure extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
  }
}

/** Run `mcpguard pins ...` (arguments after `pins`); resolves to the exit code. */
export async function runPinsCommand(argv: readonly string[], io: IO = { stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let values: { 'record-dir'?: string; json?: boolean; 'audit-key-file'?: string; utc?: boolean };
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: [...argv],
      options: { 'record-dir': { type: 'string' }, json: { type: 'boolean' }, 'audit-key-file': { type: 'string' }, utc: { type: 'boolean' } },
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    io.stderr.write(`mcpguard pins: ${(error as Error).message} (see mcpguard pins --help)\n`);
    return EXIT_USAGE;
  }
  const verb = (positionals.shift() ?? 'list') as Verb;
  const fail = (message: string, code: number): number => {
    io.stderr.write(`mcpguard pins${VERBS.includes(verb) ? ` ${verb}` : ''}: ${message}\n`);
    return code;
  };
  if (!VERBS.includes(verb)) return fail(`unknown action '${verb}'; expected one of ${VERBS.join(', ')} (see mcpguard pins --help)`, EXIT_USAGE);
  const [min, max] = POSITIONALS[verb];
  if (positionals.length > max) return fail(`unexpected argument '${positionals[max]}'`, EXIT_USAGE);
  if (positionals.length < min) return fail('expects a NAME: a pin id (or a prefix of one) or a server name; see mcpguard pins list', EXIT_USAGE);
  if (values['record-dir'] === '') return fail("--record-dir expects a directory, got ''", EXIT_USAGE);
  if (values['audit-key-file'] === '') return fail("--audit-key-file expects a key file, got ''", EXIT_USAGE);
  const stateDir = resolveRecordDir(values['record-dir']);
  let key: Buffer | undefined;
  try {
    key = values['audit-key-file'] === undefined ? undefined : loadAuditKey(values['audit-key-file'], stateDir);
  } catch (error) {
    return fail((error as Error).message, error instanceof GuardError ? error.exitCode : EXIT_USAGE);
  }
  const store = new PinStore(stateDir);
  const out = (text: string): void => {
    io.stdout.write(text);
  };
  const json = values.json === true;
  const look: Look = { style: tableStyle({ stdout: io.stdout, stderr: io.stderr, env: io.env }, undefined), clock: new Clock(values.utc === true) };
  try {
    if (verb === 'list') return list(store, json, out, io, look);
    if (verb === 'log') return log(store, positionals[0], key, json, out, io, look);
    const pins = find(store, positionals[0]!);
    // A pin file that is not the one last recorded is shown with a warning, never accepted (that would vouch for it).
    const problem = store.problem(pins.id, key);
    if (problem !== null && verb === 'accept')
      throw new Failure(
        `the pins of ${shown(identityLabel(pins.identity))} are refused: ${problem}; accepting would vouch for them. See mcpguard verify; mcpguard pins forget ${pins.id} starts them again`,
        1,
      );
    if (problem !== null)
      io.stderr.write(`mcpguard pins ${verb}: warning: the pins of ${shown(identityLabel(pins.identity))} are refused by mcpguard sessions: ${problem}\n`);
    if (verb === 'show') return show(store, pins, json, out, look);
    if (verb === 'diff') return diff(pins, json, out, look);
    if (verb === 'accept') return accept(store, pins, positionals[1], key, json, out);
    const held = Object.keys(pins.pending).length + (pins.pending_instructions === null ? 0 : 1);
    decide(
      store.prepareDir(),
      key,
      [
        {
          type: 'pins_forgotten',
          pin_id: pins.id,
          server: identityLabel(pins.identity),
          command: pins.identity.command,
          tools: Object.keys(pins.tools).length,
          held,
        },
      ],
      () => {
        if (!store.forget(pins.id, key, 'mcpguard pins forget')) throw new Error(`${pins.id}.json was already gone`);
      },
    );
    out(
      json
        ? `${jsonLine({ id: pins.id, forgotten: true })}\n`
        : `forgot the pins of ${shown(identityLabel(pins.identity))} (${pins.id}); the next session pins what the server lists then\n`,
    );
    return 0;
  } catch (error) {
    if (error instanceof Failure) return fail(error.message, error.code);
    return fail((error as Error).message, 1);
  }
}

function list(store: PinStore, json: boolean, out: (text: string) => void, io: IO, look: Look): number {
  const { pins, unreadable } = store.all();
  for (const u of unreadable) io.stderr.write(`mcpguard pins: ${u.file}: skipped: ${u.error}\n`);
  const rows = pins.map((p) => ({
    id: p.id,
    name: p.identity.name,
    server_name: p.identity.server_name,
    command: p.identity.command,
    tools: Object.keys(p.tools).length,
    held: Object.keys(p.pending).length + (p.pending_instructions === null ? 0 : 1),
    created_at: p.created_at,
    updated_at: p.updated_at,
    file: join(store.dir, `${p.id}.json`),
  }));
  if (json) for (const r of rows) out(`${jsonLine(r)}\n`);
  else {
    // COMMAND gives way first (cut in its middle: its end names the server's script), then NAME, then the time's year.
    const columns: Column[] = [
      { header: 'ID' },
      { header: 'NAME', clip: 'end', min: 8, soft: 16, shrink: 1 },
      { header: 'COMMAND', clip: 'middle', min: 16, soft: 32, shrink: 0 },
      { header: 'TOOLS' },
      { header: 'HELD' },
      { header: `UPDATED ${look.clock.zone}`, clip: 'year', shrink: 2 },
    ];
    out(
      grid(
        columns,
        rows.map((r) => [
          r.id.slice(0, 12),
          shown(r.name ?? r.server_name ?? '-'),
          shown(r.command),
          String(r.tools),
          String(r.held),
          look.clock.date(r.updated_at),
        ]),
        look,
      ),
    );
  }
  return rows.length === 0 && unreadable.length === 0 ? 1 : 0;
}

/** The pins NAME names: an id or a unique prefix of one, else a --name or serverInfo.name. */
function find(store: PinStore, name: string): PinFile {
  const { pins } = store.all();
  const byId = /^[0-9a-f]{4,32}$/.test(name) ? pins.filter((p) => p.id.startsWith(name)) : [];
  const matches = byId.length > 0 ? byId : pins.filter((p) => p.identity.name === name || (p.identity.name === null && p.identity.server_name === name));
  if (matches.length === 1) return matches[0]!;
  if (matches.length === 0) throw new Failure(`no pins named '${shown(name)}' (see mcpguard pins list)`, 1);
  throw new Failure(
    `'${shown(name)}' names ${matches.length} pin files; use the id: ${matches.map((p) => `${p.id.slice(0, 12)} (${shown(p.identity.command)})`).join(', ')}`,
    1,
  );
}

function show(store: PinStore, pins: PinFile, json: boolean, out: (text: string) => void, look: Look): number {
  const file = join(store.dir, `${pins.id}.json`);
  if (json) {
    out(
      `${jsonLine({ kind: 'server', id: pins.id, ...pins.identity, file, created_at: pins.created_at, updated_at: pins.updated_at, instructions_sha256: pins.instructions?.sha256 ?? null, instructions_held: pins.pending_instructions !== null })}\n`,
    );
    for (const [tool, t] of Object.entries(pins.tools))
      out(`${jsonLine({ kind: 'tool', tool, sha256: t.sha256, pinned_at: t.pinned_at, held: pins.pending[tool]?.kind ?? null })}\n`);
    for (const [tool, p] of Object.entries(pins.pending))
      if (!Object.hasOwn(pins.tools, tool)) out(`${jsonLine({ kind: 'tool', tool, sha256: null, pinned_at: null, held: p.kind })}\n`);
    return 0;
  }
  out(
    `Pins ${pins.id}\n  server:  ${shown(identityLabel(pins.identity))}${pins.identity.name === null ? '' : ' (--name)'}\n  command: ${shown(pins.identity.command)}\n  file:    ${file}\n  pinned:  ${look.clock.full(pins.created_at)}, updated ${look.clock.full(pins.updated_at)}\n  instructions: ${pins.instructions === null ? 'none' : pins.instructions.sha256.slice(0, 16)}${pins.pending_instructions === null ? '' : ' (a change is held)'}\n\n`,
  );
  const rows = Object.entries(pins.tools).map(([tool, t]) => [tool, t.sha256.slice(0, 16), look.clock.date(t.pinned_at), pins.pending[tool]?.kind ?? '']);
  for (const [tool, p] of Object.entries(pins.pending)) if (!Object.hasOwn(pins.tools, tool)) rows.push([tool, '-', '-', p.kind]);
  const columns: Column[] = [
    { header: 'TOOL', clip: 'end', min: 16, shrink: 0 },
    { header: 'SHA256' },
    { header: `PINNED ${look.clock.zone}`, clip: 'year', shrink: 1 },
    { header: 'HELD' },
  ];
  out(
    grid(
      columns,
      rows.map((r) => r.map(shown)),
      look,
    ),
  );
  return 0;
}

/** Each held change, with its diff. */
function diff(pins: PinFile, json: boolean, out: (text: string) => void, look: Look): number {
  const changes = heldChanges(pins);
  if (json) for (const c of changes) out(`${jsonLine(c)}\n`);
  else if (changes.length === 0) out(`nothing held for ${shown(identityLabel(pins.identity))}: what it lists matches its pins\n`);
  else
    for (const c of changes)
      out(
        `== ${c.tool === null ? 'instructions' : `tool ${shown(c.tool)}`}: ${c.kind} (seen ${look.clock.full(c.seen_at)})\n${c.diff.map((l) => `  ${l}\n`).join('')}`,
      );
  return 0;
}

interface HeldChange {
  tool: string | null;
  kind: string;
  seen_at: string;
  before_sha256: string | null;
  after_sha256: string | null;
  diff: string[];
}

function heldChanges(pins: PinFile): HeldChange[] {
  const changes: HeldChange[] = Object.entries(pins.pending).map(([tool, p]) => {
    const pinned = pins.tools[tool];
    const lines =
      p.kind === 'removed'
        ? ['no longer listed']
        : p.kind === 'added' || pinned === undefined
          ? ['new tool']
          : diffLines(diffTool(pinned.definition, p.definition!));
    return { tool, kind: p.kind, seen_at: p.seen_at, before_sha256: pinned?.sha256 ?? null, after_sha256: p.sha256, diff: lines.map(shown) };
  });
  const i = pins.pending_instructions;
  if (i !== null)
    changes.push({
      tool: null,
      kind: 'instructions',
      seen_at: i.seen_at,
      before_sha256: pins.instructions?.sha256 ?? null,
      after_sha256: i.sha256,
      diff: [shown(wordDiff(pins.instructions?.text ?? '', i.text ?? ''))],
    });
  return changes;
}

function accept(store: PinStore, pins: PinFile, tool: string | undefined, key: Buffer | undefined, json: boolean, out: (text: string) => void): number {
  const changes = heldChanges(pins).filter((c) => tool === undefined || c.tool === tool);
  if (changes.length === 0)
    throw new Failure(
      tool === undefined
        ? `nothing held for ${shown(identityLabel(pins.identity))}`
        : `no change of tool '${shown(tool)}' is held for ${shown(identityLabel(pins.identity))}`,
      1,
    );
  const now = new Date().toISOString();
  for (const c of changes) {
    if (c.tool === null) {
      const i = pins.pending_instructions!;
      pins.instructions = i.sha256 === null ? null : { sha256: i.sha256, text: i.text ?? '' };
      pins.pending_instructions = null;
      continue;
    }
    const p = pins.pending[c.tool]!;
    if (p.kind === 'removed') delete pins.tools[c.tool];
    else pins.tools[c.tool] = { sha256: p.sha256!, definition: p.definition!, pinned_at: now };
    delete pins.pending[c.tool];
  }
  const decisions = changes.map((c) => ({
    type: 'pin_accepted',
    pin_id: pins.id,
    server: identityLabel(pins.identity),
    command: pins.identity.command,
    tool: c.tool,
    change: c.kind,
    before_sha256: c.before_sha256,
    after_sha256: c.after_sha256,
  }));
  decide(store.prepareDir(), key, decisions, () => store.write(pins, key, 'mcpguard pins accept'));
  for (const c of changes) {
    out(
      json
        ? `${jsonLine({ id: pins.id, tool: c.tool, kind: c.kind, accepted: true, sha256: c.after_sha256 })}\n`
        : `accepted: ${c.tool === null ? 'instructions' : `tool ${shown(c.tool)}`} (${c.kind})\n`,
    );
  }
  return 0;
}

/**
 * The recorded decisions (of NAME's pins: an id prefix or a server name),
 * oldest first. No decision yet is an empty log (exit 0, as `sessions` with
 * none); a NAME with no decision is nothing found (exit 1).
 */
function log(store: PinStore, name: string | undefined, key: Buffer | undefined, json: boolean, out: (text: string) => void, io: IO, look: Look): number {
  const bytes = readDecisions(store.dir);
  if (bytes === null && name !== undefined) throw new Failure(`no decision recorded in ${store.dir}`, 1);
  const verdict = bytes === null ? null : verifyDecisions(bytes, key);
  const intact = verdict === null || verdict.status === 'ok';
  if (verdict !== null && !intact)
    io.stderr.write(
      `mcpguard pins log: ${store.dir}/decisions.log does not verify (${verdict.status}${verdict.line === null ? '' : ` at line ${verdict.line}`}: ${verdict.reason}); what follows is what it says\n`,
    );
  const wanted = (r: Record<string, unknown>): boolean =>
    name === undefined || (/^[0-9a-f]{4,32}$/.test(name) && typeof r.pin_id === 'string' && r.pin_id.startsWith(name)) || r.server === name;
  const records = bytes === null ? [] : decisionRecords(bytes).filter(wanted);
  if (json) for (const r of records) out(`${jsonLine(processMasker().value(r))}\n`);
  else {
    const columns: Column[] = [
      { header: `TIME ${look.clock.zone}`, clip: 'year', shrink: 2 },
      { header: 'PIN' },
      { header: 'SERVER', clip: 'end', min: 8, shrink: 0 },
      { header: 'DECISION', last: true, clip: 'end', min: 16 },
      { header: 'TOOL', clip: 'end', min: 8, shrink: 1 },
      { header: 'USER', clip: 'end', min: 8, drop: 0 },
    ];
    out(
      grid(
        columns,
        records.map((r) => [
          look.clock.date(typeof r.ts === 'string' ? r.ts : null),
          String(r.pin_id ?? '-').slice(0, 12),
          shown(String(r.server ?? '-')),
          (r.type === 'pin_accepted' ? `accepted ${String(r.change)}` : `forgot ${String(r.tools)} tools`) +
            (typeof r.undone === 'string' ? ` (undone: ${r.undone})` : ''),
          r.type === 'pin_accepted' ? (r.tool === null ? '(instructions)' : shown(String(r.tool))) : '-',
          String(r.user ?? '-'),
        ]),
        look,
      ),
    );
  }
  if (records.length === 0 && name !== undefined) io.stderr.write(`mcpguard pins log: no decision about '${name}'\n`);
  if (records.length === 0 && name === undefined) io.stderr.write(`mcpguard pins log: no decision recorded in ${shown(store.dir)} yet\n`);
  return intact && (records.length > 0 || name === undefined) ? 0 : 1;
}

/** Text from a server or a command line, as a terminal can show it: secrets masked, hidden characters written out. */
function shown(text: string): string {
  return shownText(text);
}
