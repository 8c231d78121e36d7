#!/usr/bin/env -S node --max-semi-space-size=4 --optimize-for-size
// Thin launcher: the compiled CLI lives in dist/ (built by `npm run build`, also on `npm install`).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
