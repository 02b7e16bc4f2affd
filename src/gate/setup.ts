/**
 * The gate of one relay session, from the options: none at all when
 * --validate-args is off, there is no policy, and pins and hidden-character
 * rewriting are off (tools/call then passes like any request). The JSON
 * Schema engine is not loaded here: the tool book loads it the first time a
 * schema is compiled.
 */
import type { OptionValues } from '../cli/options.js';
import { resolveRecordDir } from '../records/location.js';
import { PinGuard, type OnToolChange } from '../pins/guard.js';
import { ToolHooks } from '../pins/hooks.js';
import { Gate, type GateIO } from './gate.js';
import type { Policy } from './policy.js';
import { ToolSchemas } from './schema/schema.js';

/** Where the pins' changes and hidden-character counts are recorded (the audit log), if anywhere. */
export type GateRecord = (type: string, body: Record<string, unknown>) => void;

/** `approveCmd`: --approve-cmd as resolved at start (`checkApproveCmd`), or null; `key`: the audit key (the chain of pin decisions records each pin file with it). */
export function gateFactory(v: OptionValues, policy: Policy | null, server: string, record: GateRecord = () => {}, approveCmd: string[] | null = null, key?: Buffer): ((io: GateIO) => Gate) | null {
  const validateArgs = v['validate-args'] === 'on';
  const onToolChange = (v['on-tool-change'] ?? 'off') as OnToolChange;
  const sanitize = { definitions: v.sanitize === 'on', results: v['sanitize-results'] === true };
  const hooksOn = onToolChange !== 'off' || sanitize.definitions || sanitize.results;
  if (!validateArgs && policy === null && !hooksOn) return null;
  // --name, when the options have it: the pins' identity is then that name alone.
  const name = typeof v.name === 'string' && v.name !== '' ? v.name : null;
  const stateDir = resolveRecordDir(typeof v['record-dir'] === 'string' ? v['record-dir'] : undefined);
  return (io) => {
    const hooks = hooksOn ? new ToolHooks(new PinGuard({ mode: onToolChange, name, command: server, stateDir, key }, { diag: io.diag, record }), sanitize, io.diag, record) : null;
    return new Gate(
      { validateArgs, validateOutput: v['validate-output'] as 'report' | 'enforce', policy, approveCmd, approvalTimeoutMs: v['approval-timeout'] as number, server, hooks, onToolChange },
      io,
      new ToolSchemas(),
    );
  };
}
