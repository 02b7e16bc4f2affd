#!/usr/bin/env node
import { main } from '../dist/cli.js';

process.exitCode = await main(process.argv.slice(2));
// Exit now: the relay flushed what it could within its bounds, and a paused
// stdin or a stray handle must not keep a finished session alive.
process.exit();
