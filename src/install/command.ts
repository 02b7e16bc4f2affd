/**
 * `mcpguard clients`, `install` and `uninstall`: find the agents' config
 * files, plan the edits per server, then print a diff (--dry-run) or write
 * each file safely (write.ts), saying per file what was done. A file that
 * cannot be read, parsed or written is reported and left as it was; the
 * others are still done, and the exit status is 1.
 */
import { isAbsolute, resolve } from 'node:path';
import { GuardError } from '../base/errors.js';
import { checkApproveCmd } from '../gate/approve-cmd.js';
import { writeOut } from '../mask/escape.js';
import { Masker } from '../mask/mask.js';
import { Output } from '../views/output.js';
import { CLIENT_NAMES, clientTitle, envFrom, findFiles, type ConfigFile } from './clients.js';
import { unifiedDiff } from './diff.js';
import { jsonEntries } from './jsonc.js';
import { tomlEntries } from './toml.js';
import { applyEdits, commandLine, guardArgsAt, installEdits, statusOf, uninstallEdits, type Edit, type Entry } from './wrap.js';
import { readConfig, writeConfig, type ReadFile } from './write.js';

/** What cli/main.ts hands in: this layer may not read the relay's option table itself. */
export interface InstallContext {
  /** Throws a GuardError naming the option and value when `options` would not start the relay. */
  checkRelayOptions(options: readonly string[]): void;
  /** The mcpguard.js that runs now: what the wrapped command starts. */
  bin: string;
  /** Tests: runs between the temporary file and the rename. */
  beforeRename?: () => void;
}

type Action = 'clients' | 'install' | 'uninstall';
interface Args {
  clients: string[];
  servers: string[];
  dryRun: boolean;
  options: string[];
}

/** Relay options whose value is a path: made absolute, since the agent starts the server from its own directory. */
const PATH_OPTIONS = new Set(['--policy', '--config', '--audit-key-file', '--record-dir']);

function parse(action: Action, argv: readonly string[]): Args {
  const a: Args = { clients: [], servers: [], dryRun: false, options: [] };
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i]!;
    if (w === '--' && action === 'install') {
      a.options = argv.slice(i + 1).map((o, j, all) => absolute(o, all[j - 1]));
      break;
    }
    if (w === '--dry-run' && action !== 'clients') a.dryRun = true;
    else if ((w === '--server' || w.startsWith('--server=')) && action !== 'clients') {
      const v = w === '--server' ? argv[++i] : w.slice('--server='.length);
      if (v === undefined || v === '') throw new GuardError('bad_option', `--server expects a server name, got ${v === undefined ? 'nothing' : "''"}`);
      a.servers.push(v);
    } else if (w.startsWith('-')) throw new GuardError('bad_option', `${action}: unknown option '${w}' (see mcpguard ${action} --help)`);
    else if (!CLIENT_NAMES.includes(w)) throw new GuardError('bad_usage', `${action}: no client '${w}'; the clients are ${CLIENT_NAMES.join(', ')}`);
    else a.clients.push(w);
  }
  return a;
}

function absolute(option: string, previous: string | undefined): string {
  const eq = option.indexOf('=');
  // --approve-cmd is a program (looked up on PATH, which the agent's may lack) and its words: its program made absolute now.
  if (previous === '--approve-cmd') return checkApproveCmd(option).join(' ');
  if (option.startsWith('--approve-cmd=')) return `--approve-cmd=${checkApproveCmd(option.slice(eq + 1)).join(' ')}`;
  if (eq > 0 && PATH_OPTIONS.has(option.slice(0, eq)) && !isAbsolute(option.slice(eq + 1))) return `${option.slice(0, eq)}=${resolve(option.slice(eq + 1))}`;
  return previous !== undefined && PATH_OPTIONS.has(previous) && !isAbsolute(option) && option !== 'off' ? resolve(option) : option;
}

/**
 * Run one of the three subcommands; resolves to the exit code once every
 * line is written (to `out`, or stdout through the views' Output: a reader
 * that goes away, `| head -1`, ends the output quietly).
 */
export async function runInstallCommand(action: Action, argv: readonly string[], ctx: InstallContext, out?: (s: string) => void): Promise<number> {
  if (out !== undefined) return await run(action, argv, ctx, out);
  const output = new Output(process.stdout);
  try {
    return await run(action, argv, ctx, (s) => void output.write(s));
  } finally {
    await output.end();
  }
}

async function run(action: Action, argv: readonly string[], ctx: InstallContext, out: (s: string) => void): Promise<number> {
  const args = parse(action, argv);
  if (args.options.length > 0) {
    if (args.options.some((o) => o === '--name' || o.startsWith('--name=')))
      throw new GuardError('bad_option', 'install: --name is set per server (its name in the config); leave it out of the options after --');
    ctx.checkRelayOptions(args.options);
  }
  const env = envFrom(process.env, process.cwd());
  if (env === null) throw new GuardError('install_home', `${action}: HOME is not set: no place to look for the agents' config files`, 1);
  const files = findFiles(env, args.clients);
  if (files.length === 0) {
    out(
      `no agent config file found${args.clients.length > 0 ? ` for ${args.clients.join(', ')}` : ''} (see mcpguard ${action} --help for where each is looked for)\n`,
    );
    return action === 'clients' ? 0 : 1;
  }
  let failed = false;
  const matched = new Set<string>();
  for (const file of files) {
    const head = `${clientTitle(file.client)}: ${file.path}`;
    let read: ReadFile;
    let entries: Entry[];
    try {
      read = readConfig(file.path);
      entries = await entriesOf(file, read.text);
    } catch (error) {
      failed = true;
      out(`${show(head)}\n  refused: ${show(reason(error))}\n`);
      continue;
    }
    const masker = new Masker({ ...process.env, ...Object.assign({}, ...entries.map((e) => e.env)) });
    const shown = (s: string): string => writeOut(masker.text(s));
    const chosen = entries.filter((e) => args.servers.length === 0 || args.servers.includes(e.name));
    for (const e of chosen) matched.add(e.name);
    if (action === 'clients') {
      out(
        `${shown(head)}\n${entries.length === 0 ? '  no servers\n' : entries.map((e) => `  ${shown(label(e))}  ${shown(describe(e, ctx.bin))}${e.remote === null ? `  ${shown(commandLine(e).join(' '))}` : ''}\n`).join('')}`,
      );
      continue;
    }
    const edits: Edit[] = [];
    const lines: string[] = [];
    for (const e of chosen) {
      const planned = plan(action, read.text, e, ctx, args.options);
      if (typeof planned === 'string') lines.push(`  ${shown(label(e))}: ${planned}\n`);
      else {
        edits.push(...planned);
        lines.push(`  ${shown(label(e))}: ${action === 'install' ? 'guarded' : 'unguarded'}${args.dryRun ? ' (dry run)' : ''}\n`);
      }
    }
    if (edits.length === 0) {
      out(`${shown(head)}: nothing to change\n${lines.join('')}`);
      continue;
    }
    if (args.dryRun) {
      out(`${shown(head)}: would change (dry run, nothing written)\n${lines.join('')}${writeOut(masker.text(unifiedDiff(file.path, read.text, edits)), true)}`);
      continue;
    }
    try {
      const backup = writeConfig(read, applyEdits(read.text, edits), ctx.beforeRename);
      out(
        `${shown(head)}: written${read.link ? ` (through its symlink to ${shown(read.real)})` : ''}${backup !== null ? `; the original is kept in ${shown(backup)}` : ''}\n${lines.join('')}`,
      );
    } catch (error) {
      failed = true;
      out(`${shown(head)}: refused: ${shown(reason(error))}\n`);
    }
  }
  for (const s of args.servers)
    if (!matched.has(s)) {
      failed = true;
      out(`no server named '${writeOut(s)}' in the files above\n`);
    }
  return failed ? 1 : 0;
}

async function entriesOf(file: ConfigFile, raw: string): Promise<Entry[]> {
  // A byte-order mark (Windows editors write one) is read as a space: one UTF-16 unit, so every offset still fits the file.
  const text = raw.startsWith('\uFEFF') ? ` ${raw.slice(1)}` : raw;
  return file.format === 'toml' ? tomlEntries(text) : await jsonEntries(text, file.key, file.projects);
}

/** The edits for one entry, or why there are none. */
function plan(action: Action, text: string, e: Entry, ctx: InstallContext, options: readonly string[]): Edit[] | string {
  const status = statusOf(e);
  if (status === 'remote') return `left alone: ${e.remote}, which mcpguard cannot stand in front of (stdio only)`;
  if (status === 'unusual') return 'left alone: its command or args are not strings';
  if (action === 'install')
    return status === 'guarded' ? 'already guarded, left as it is' : installEdits(text, e, process.execPath, [ctx.bin, ...options, '--name', e.name, '--']);
  return status === 'guarded' ? uninstallEdits(text, e) : 'not guarded, left as it is';
}

const label = (e: Entry): string => (e.scope === null ? e.name : `${e.name} (project ${e.scope})`);

/** A server's state for `clients`; "guarded" by a program of that name elsewhere says which (anything can be called mcpguard). */
function describe(e: Entry, bin: string): string {
  const s = statusOf(e);
  if (s !== 'guarded')
    return s === 'remote' ? `not guardable: ${e.remote}` : s === 'unusual' ? 'not guardable: command or args are not strings' : 'not guarded';
  const guard = guardArgsAt(e) === 0 ? e.command!.value : e.args!.items[0]!.value;
  return guard === bin ? 'guarded' : `guarded (by ${String(guard)})`;
}

function reason(error: unknown): string {
  if (error instanceof GuardError) return error.message;
  // A value nested deeper than the parsers' stack (a hostile file): a parse failure, not a read failure.
  if (error instanceof RangeError) return 'cannot parse it: nested too deeply';
  const e = error as NodeJS.ErrnoException;
  return `cannot read it: ${e.code ?? e.message}`;
}

function show(s: string): string {
  return writeOut(s);
}
