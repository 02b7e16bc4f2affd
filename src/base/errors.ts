/**
 * The one error class mcpguard raises for its own failures. `code` is a stable
 * string for tests and tools; `exitCode` is what the process exits with when the
 * error reaches the command line. JSON-RPC numeric codes are a wire concern and
 * live in jsonrpc.ts, not here.
 */
export class GuardError extends Error {
  readonly code: string;
  readonly exitCode: number;

  constructor(code: string, message: string, exitCode: number = EXIT_USAGE) {
    super(message);
    this.name = 'GuardError';
    this.code = code;
    this.exitCode = exitCode;
  }
}

/** mcpguard's own failure exit codes, chosen like env(1)/timeout(1) so they rarely collide with a child's. */
export const EXIT_USAGE = 125;
export const EXIT_CANNOT_EXECUTE = 126;
export const EXIT_NOT_FOUND = 127;
/**
 * The audit log could not be created or failed during the session (EX_IOERR in
 * sysexits.h). It wins over the child's status, which stays in the session
 * record and summary: a session whose record is incomplete must not look clean.
 */
export const EXIT_RECORD_FAILURE = 74;
