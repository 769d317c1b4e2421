// Writes taskledger.schema.json, the JSON Schema of taskledger.json, from its zod schema.
// Run after a build: node packages/cli/scripts/write-config-schema.ts
import { writeFileSync } from "node:fs";
import { projectConfigJsonSchema } from "../dist/options/project-config.js";

const path = new URL("../taskledger.schema.json", import.meta.url);
writeFileSync(path, `${JSON.stringify(projectConfigJsonSchema(), null, 2)}\n`);
console.log(`wrote ${path.pathname}`);
