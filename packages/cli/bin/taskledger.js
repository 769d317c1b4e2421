#!/usr/bin/env node
// The command's entry exists before any build, so npm links it on install; the code is in dist/.
import { existsSync } from "node:fs";

const entry = new URL("../dist/bin.js", import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write(
    "taskledger is not built yet: run `npm run build` at the repository's root, then try again.\n",
  );
  process.exit(1);
}
await import(entry.href);
