// Every package as npm would publish it, checked by publint (strict) and Are the Types Wrong? (every
// resolution: node10, node16 from CJS and ESM, bundler; an ESM-only package's CJS resolving to ESM
// is what it is). One `npm pack` and one process for all twelve: the same checks as
// `publint --strict && attw --pack .` in each package, without twelve npm, node and TypeScript
// start-ups. Run after the build; exits 1 naming every problem.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkPackage, createPackageFromTarballData } from "@arethetypeswrong/core";
import { publint } from "publint";
import { formatMessage } from "publint/utils";

const root = join(import.meta.dirname, "..");
// An ESM-only package: `require` of it gets ESM, which Node 22 supports.
const ignoredProblems = new Set(["CJSResolvesToESM"]);

const packages = readdirSync(join(root, "packages")).map((name) => join(root, "packages", name));
const packed = mkdtempSync(join(tmpdir(), "taskledger-lint-"));
let failed = 0;
try {
  const workspaces = packages.flatMap((dir) => ["--workspace", dir]);
  const pack = spawnSync(
    "npm",
    ["pack", "--silent", "--json", "--pack-destination", packed, ...workspaces],
    { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );
  if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stderr}`);
  const tarballs = new Map(
    JSON.parse(pack.stdout).map((entry) => [entry.name, join(packed, entry.filename)]),
  );
  for (const dir of packages) {
    const name = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).name;
    const tarball = tarballs.get(name);
    if (!tarball) throw new Error(`npm pack made no tarball for ${name}`);
    const data = readFileSync(tarball);
    const problems = [];
    // The files as packed: the tarball's own top directory is the package.
    const linted = await publint({
      pkgDir: "package",
      strict: true,
      pack: { tarball: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) },
    });
    for (const message of linted.messages) {
      problems.push(
        `publint (${message.type}): ${formatMessage(message, linted.pkg, { color: false })}`,
      );
    }
    const analysis = await checkPackage(createPackageFromTarballData(new Uint8Array(data)));
    if (!analysis.types) problems.push("Are the Types Wrong?: the package has no types");
    else {
      for (const problem of analysis.problems) {
        if (ignoredProblems.has(problem.kind)) continue;
        const where = "resolutionKind" in problem ? ` (${problem.resolutionKind})` : "";
        const entry = "entrypoint" in problem ? ` at "${problem.entrypoint}"` : "";
        problems.push(`Are the Types Wrong?: ${problem.kind}${entry}${where}`);
      }
    }
    if (problems.length === 0) console.log(`${name}: no problems`);
    else {
      failed++;
      console.error(`${name}:\n${problems.map((p) => `  ${p}`).join("\n")}`);
    }
  }
} finally {
  rmSync(packed, { recursive: true, force: true });
}
process.exit(failed === 0 ? 0 : 1);
