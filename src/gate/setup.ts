/**
 * The gate of one relay session, from the options: none at all when
 * --validate-args is off, there is no policy, and pins and hidden-character
 * rewriting are off (tools/call then passes like any request). The JSON
 * Schema engine is not loaded here: the tool book loads it the first time a
 * schema is compiled.
 */
import { resolveRecordDir } from '../records/location.js';
import { PinGuard, type OnToolChange } from '../pins/guard.js';
import { ToolHooks } from '../pins/hooks.js';
import { Gate, type GateIO } from './gate.js';
import type { Policy } from './policy.js';
import type { SecretsMode } from './secrets.js';
import { ToolSchemas } from './schema/schema.js';

/** Where the pins' changes and hidden-character counts are recorded (the audit log), if anywhere. */
export type GateRecord = (type: string, body: Record<string, unknown>) => void;

/**
 * The gate's options, typed: the command line builds them from
 * --validate-args, --validate-output, --on-tool-change, --sanitize,
 * --sanitize-results, --name, --record-dir, --approval-timeout and
 * --secrets-in-args.
 */
export interface GateOptions {
  validateArgs: boolean;
  validateOutput: 'report' | 'enforce';
  onToolChange: OnToolChange;
  sanitize: { definitions: boolean; results: boolean };
  /** --name, or null: with a name, the pins' identity is that name alone. */
  name: string | null;
  /** --record-dir as given (undefined: the default place), where the pins are kept too. */
  recordDir: string | undefined;
  approvalTimeoutMs: number;
  /** --secrets-in-args (secrets.ts); absent: off. */
  secretsInArgs?: SecretsMode;
}

/** `approveCmd`: --approve-cmd as resolved at start (`checkApproveCmd`), or null; `key`: the audit key (the chain of pin decisions records each pin file with it). */
export function gateFactory(
  o: GateOptions,
  policy: Policy | null,
  server: string,
  record: GateRecord = () => {},
  approveCmd: string[] | null = null,
  key?: Buffer,
): ((io: GateIO) => Gate) | null {
  const { validateArgs, onToolChange, sanitize, name } = o;
  const hooksOn = onToolChange !== 'off' || sanitize.definitions || sanitize.results;
  if (!validateArgs && policy === null && !hooksOn) return null;
  const stateDir = resolveRecordDir(o.recordDir);
  return (io) => {
    const hooks = hooksOn
      ? new ToolHooks(new PinGuard({ mode: onToolChange, name, command: server, stateDir, key }, { diag: io.diag, record }), sanitize, io.diag, record)
      : null;
    return new Gate(
      {
        validateArgs,
        validateOutput: o.validateOutput,
        policy,
        approveCmd,
        approvalTimeoutMs: o.approvalTimeoutMs,
        server,
        hooks,
        onToolChange,
        // Secrets are looked for where mcpguard reads arguments at all (their schema, or a policy): not with pins alone.
        secrets: validateArgs || policy !== null ? o.secretsInArgs : 'off',
      },
      io,
      new ToolSchemas(),
    );
  };
}
