// Every package's public API, name by name: what each `src/index.ts` exports, values and types.
// `node scripts/public-api.mjs` compares it with scripts/public-api.json and exits 1 naming every
// name added or gone; `--write` records the current set after a deliberate change.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";

const root = join(import.meta.dirname, "..");
const recordPath = join(import.meta.dirname, "public-api.json");
const packages = readdirSync(join(root, "packages")).sort();
const entries = packages.map((dir) => join(root, "packages", dir, "src", "index.ts"));

const base = ts.readConfigFile(join(root, "tsconfig.base.json"), ts.sys.readFile).config;
const { options } = ts.convertCompilerOptionsFromJson(
  { ...base.compilerOptions, noEmit: true, baseUrl: root },
  root,
);
const program = ts.createProgram(entries, options);
const checker = program.getTypeChecker();

const current = {};
for (const [index, dir] of packages.entries()) {
  const name = JSON.parse(readFileSync(join(root, "packages", dir, "package.json"), "utf8")).name;
  const source = program.getSourceFile(entries[index]);
  const module = source && checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`${name}: no module at ${entries[index]}`);
  current[name] = checker
    .getExportsOfModule(module)
    .map((symbol) => {
      const target =
        symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return `${symbol.name} (${target.flags & ts.SymbolFlags.Value ? "value" : "type"})`;
    })
    .sort();
}

if (process.argv.includes("--write")) {
  writeFileSync(recordPath, `${JSON.stringify(current, null, 2)}\n`);
  console.log(`public-api: recorded ${Object.keys(current).length} packages`);
  process.exit(0);
}
const recorded = JSON.parse(readFileSync(recordPath, "utf8"));
const problems = [];
for (const name of new Set([...Object.keys(recorded), ...Object.keys(current)])) {
  const before = new Set(recorded[name] ?? []);
  const now = new Set(current[name] ?? []);
  for (const gone of before)
    if (!now.has(gone)) problems.push(`${name}: ${gone} is no longer exported`);
  for (const added of now)
    if (!before.has(added)) problems.push(`${name}: ${added} is newly exported`);
}
if (problems.length > 0) {
  console.error(
    `public-api: the packages' exports differ from scripts/public-api.json (node scripts/public-api.mjs --write records a deliberate change):\n${problems.map((p) => `  ${p}`).join("\n")}`,
  );
  process.exit(1);
}
console.log(
  `public-api: ${Object.keys(current).length} packages export what scripts/public-api.json records`,
);
