/**
 * The gate of one relay session, from the options: none at all when
 * --validate-args is off and there is no policy (tools/call then passes like
 * any request). The JSON Schema engine is not loaded here: the tool book
 * loads it the first time a schema is compiled.
 */
import type { OptionValues } from '../options.js';
import { approveArgv } from './approve-cmd.js';
import { Gate, type GateIO } from './gate.js';
import type { Policy } from './policy.js';
import { ToolSchemas } from './schema.js';

export function gateFactory(v: OptionValues, policy: Policy | null, server: string): ((io: GateIO) => Gate) | null {
  const validateArgs = v['validate-args'] === 'on';
  if (!validateArgs && policy === null) return null;
  const approveCmd = typeof v['approve-cmd'] === 'string' ? approveArgv(v['approve-cmd']) : null;
  return (io) => new Gate(
    { validateArgs, validateOutput: v['validate-output'] as 'report' | 'enforce', policy, approveCmd, approvalTimeoutMs: v['approval-timeout'] as number, server },
    io,
    new ToolSchemas(),
  );
}
