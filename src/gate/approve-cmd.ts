/**
 * `--approve-cmd`: the way to ask when the client cannot show a card. The
 * command runs without a shell, in its own process group, with the action
 * as one JSON object on its stdin; exit status 0 approves, anything else
 * (a signal, a failure to start, the deadline) denies. An approval may say
 * how far it reaches: a stdout that is a JSON object with a `scope` member
 * (`{"scope":"session-tool"}`, one of the action's `scopes`). Any other
 * stdout (none, text, an object without `scope`) is an approval `once`, as
 * before grants existed; an object that cannot be read, or a scope the
 * action did not offer, denies. Output is read only up to a small bound.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';
import { GuardError } from '../base/errors.js';
import { processMasker } from '../mask/mask.js';
import type { Card } from './card.js';
import { checkScope, ONCE_ONLY, type Scope } from './grants.js';

export interface CommandVerdict {
  approved: boolean;
  /** Why, in words, for the records and the denial message. */
  detail: string;
  /** An approval's reach (`once` when the command said nothing about it). */
  scope?: Scope;
}

/** Most output kept from the command, for the denial message. */
const OUTPUT_BYTES = 512;
/** Most stdout read as the command's answer (`{"scope":"session-tool"}` is 25 bytes). */
const ANSWER_BYTES = 4096;

/** Split `--approve-cmd` into argv: words separated by spaces, no quoting, no shell. */
export function approveArgv(command: string): string[] {
  return command.split(/\s+/).filter(Boolean);
}

/**
 * Resolve `--approve-cmd` once, at start, to the absolute path of the file
 * that will run: every approval runs that file, so a program of the same name
 * placed later in an earlier PATH directory (or a changed PATH) decides
 * nothing. A name that resolves to no executable file stops mcpguard at
 * start (an approval that cannot be asked is a denial; a typo should not
 * turn every `ask` into one silently).
 */
export function checkApproveCmd(command: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const argv = approveArgv(command);
  const program = argv[0];
  if (program === undefined) throw new GuardError('bad_option', `--approve-cmd expects a command, got '${command}'`);
  const candidates = program.includes('/')
    ? [program]
    : (env.PATH ?? '')
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, program));
  for (const path of candidates) {
    try {
      if (!statSync(path).isFile()) continue;
      accessSync(path, constants.X_OK);
      return [resolve(path), ...argv.slice(1)];
    } catch {
      // Not this one.
    }
  }
  throw new GuardError('bad_option', `--approve-cmd: '${program}' is not an executable file${program.includes('/') ? '' : ' on PATH'} (got '${command}')`);
}

/** The call an approver is asked about (the card holds the arguments). */
export interface ApproverFacts {
  server: string;
  tool: string;
  reason: string;
  callId: string;
  expiresAt: number;
  change?: readonly string[];
  /** What an approval may answer for its reach (gate/grants.ts), narrowest first. */
  scopes?: readonly Scope[];
}

/**
 * What the approver reads on its stdin: what a person would see on the card,
 * no more. `arguments_text` is the arguments' own text, never a re-serialised
 * value (`1e400`, `-0`, 2^53+1 stay as the server will get them), with the
 * card's secrets masked; `masked` says what was masked, in the card's words;
 * `card` is the card itself.
 */
export function approverAction(card: Card, facts: ApproverFacts): Record<string, unknown> {
  return {
    server: processMasker().text(facts.server),
    tool: facts.tool,
    arguments_text: card.argumentsText,
    masked: card.masked,
    card: card.text,
    reason: facts.reason,
    call_id: facts.callId,
    expires_at: new Date(facts.expiresAt).toISOString(),
    scopes: facts.scopes ?? ONCE_ONLY,
    ...(facts.change === undefined ? {} : { change: facts.change }),
  };
}

/** Run the resolved command (`checkApproveCmd`) once, for one action; an approval may choose one of `offered`. */
export function runApproveCmd(
  argv: readonly string[],
  action: Record<string, unknown>,
  deadlineMs: number,
  offered: readonly Scope[] = ONCE_ONLY,
): Promise<CommandVerdict> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (verdict: CommandVerdict): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(verdict);
    };
    const child = spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'], detached: true, shell: false });
    let stderr = '';
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    // Read to the end (a full pipe would stall the command), keep the bound.
    child.stdout.on('data', (chunk: Buffer) => {
      if (stdoutBytes <= ANSWER_BYTES) stdout.push(chunk);
      stdoutBytes += chunk.length;
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < OUTPUT_BYTES) stderr += chunk.toString('utf8').slice(0, OUTPUT_BYTES - stderr.length);
    });
    const timer = setTimeout(() => {
      killGroup(child.pid);
      finish({ approved: false, detail: `--approve-cmd gave no answer within ${deadlineMs} ms` });
    }, deadlineMs);
    timer.unref();
    child.on('error', (error) => finish({ approved: false, detail: `--approve-cmd could not run: ${error.message}` }));
    child.on('close', (code, signal) => {
      if (code === 0) {
        const scope = answerScope(Buffer.concat(stdout).toString('utf8'), stdoutBytes > ANSWER_BYTES, offered);
        if (typeof scope === 'string') return finish({ approved: true, detail: '--approve-cmd exited 0', scope });
        return finish({ approved: false, detail: `--approve-cmd exited 0, but its answer does not fit the card: ${scope.error}` });
      }
      const how = signal !== null ? `was killed by ${signal}` : `exited ${code}`;
      finish({ approved: false, detail: `--approve-cmd ${how}${stderr.trim() === '' ? '' : `: ${stderr.trim()}`}` });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(`${JSON.stringify(action)}\n`);
  });
}

/**
 * The reach an approving command's stdout chose: a JSON object's `scope`, or
 * `once` for any stdout that is not an object (what approvers printed before
 * grants). An object longer than the bound is not an answer that can be read.
 */
function answerScope(text: string, overflow: boolean, offered: readonly Scope[]): Scope | { error: string } {
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return 'once';
  if (overflow) return { error: `its stdout is longer than ${ANSWER_BYTES} bytes` };
  let answer: unknown;
  try {
    answer = JSON.parse(trimmed);
  } catch {
    return { error: 'its stdout starts like a JSON object but is not one' };
  }
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer) || !Object.hasOwn(answer, 'scope')) return 'once';
  const scope = (answer as Record<string, unknown>).scope;
  return checkScope(typeof scope === 'string' ? scope : null, offered);
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}
