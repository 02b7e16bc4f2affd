/**
 * The records module's public surface, for the core and the CLI: session logs
 * (store), where they live (location, key), offline verification and the views.
 */
export { SessionLog, fingerprint, newCallId, newSessionId, type RecordStoreOptions } from './store.js';
export { ensureRecordDir, resolveRecordDir } from './location.js';
export { loadAuditKey } from './key.js';
export { verifyBytes, verifyDir, verifyFile, type VerifyResult, type VerifyStatus } from '../views/verify.js';
export { runRecordsCommand, type CommandIO, type RecordsCommandName } from '../views/commands.js';
export { canonical } from './canonical.js';
