import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../../..");
// Every workspace package, as the root package.json's `packages/*` names them.
const packages = readdirSync(join(root, "packages")).filter((name) =>
  existsSync(join(root, "packages", name, "package.json")),
);
let project: string;
let tarballs: string[];

// Packs every package as npm would publish it and installs the tarballs into an empty project:
// what a user gets, not what the workspace links.
beforeAll(async () => {
  for (const name of packages) {
    if (!existsSync(join(root, "packages", name, "dist", "index.js"))) {
      throw new Error(`packages/${name}/dist is missing: run \`npm run build\` first`);
    }
  }
  project = await mkdtemp(join(tmpdir(), "taskledger-packed-"));
  const packed = join(project, "tarballs");
  await mkdir(packed);
  const workspaces = packages.flatMap((p) => ["-w", `packages/${p}`]);
  await run("npm", ["pack", "--silent", "--pack-destination", packed, ...workspaces], {
    cwd: root,
  });
  tarballs = (await readdir(packed)).map((file) => join(packed, file));
  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "host", private: true, type: "commonjs" }),
  );
  // Scripts are skipped: the opencode binary is not needed to import the packages.
  await run(
    "npm",
    ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", ...tarballs],
    {
      cwd: project,
      maxBuffer: 16 * 1024 * 1024,
    },
  );
}, 240_000);

afterAll(async () => {
  if (project) await rm(project, { recursive: true, force: true });
});

describe("the packed packages", () => {
  it("ship dist and types, a README and a LICENSE, not tests or test support", async () => {
    const workspaces = packages.flatMap((p) => ["-w", `packages/${p}`]);
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", ...workspaces], {
      cwd: root,
    });
    for (const packed of JSON.parse(stdout) as { name: string; files: { path: string }[] }[]) {
      const files = packed.files.map((f) => f.path);
      expect(files, packed.name).toEqual(
        expect.arrayContaining(["dist/index.js", "dist/index.d.ts", "README.md", "LICENSE"]),
      );
      const stray = files.filter(
        (f) => f.endsWith(".test.ts") || f.endsWith(".test.js") || f.includes("test-support/"),
      );
      expect(stray, packed.name).toEqual([]);
      // A README's relative link must land in the tarball (the registry shows no other file).
      const dir = packages.find(
        (p) =>
          JSON.parse(readFileSync(join(root, "packages", p, "package.json"), "utf8")).name ===
          packed.name,
      )!;
      const readme = readFileSync(join(root, "packages", dir, "README.md"), "utf8");
      const outside = [...readme.matchAll(/\]\(([^)#\s]+)[^)]*\)/g)]
        .map((m) => m[1]!)
        .filter((target) => !/^[a-z]+:/.test(target))
        .filter((target) => !files.includes(posix.normalize(target).replace(/^\.\//, "")));
      expect(outside, `${packed.name}'s README`).toEqual([]);
    }
  });

  it("import as ESM in a fresh project and run a scripted request", async () => {
    const script = `
      import { createManager, TaskLedgerError } from "@taskledger/core";
      import { createFakeExecutor } from "@taskledger/testing";
      import { createModel } from "@taskledger/llm";
      import { createOpencodeExecutor } from "@taskledger/executor";
      import { createEvaluator } from "@taskledger/evaluator";
      import { createQueueExecutor } from "taskledger/queue";
      import { runCli } from "taskledger/cli";
      for (const f of [createModel, createOpencodeExecutor, createEvaluator, createQueueExecutor, runCli]) if (typeof f !== "function") throw new Error("missing export");
      const manager = createManager({ cwd: process.cwd(), executor: createFakeExecutor({ fallback: { type: "success" } }) });
      const report = await manager.run("Fix the typo", {});
      console.log(report.status, typeof TaskLedgerError.isInstance);
    `;
    await writeFile(join(project, "esm.mjs"), script);
    const { stdout } = await run(process.execPath, ["esm.mjs"], { cwd: project });
    expect(stdout.trim()).toBe("completed function");
  });

  it("import taskledger as a library without the command line, the queue, the page, the testing kit or a provider SDK", async () => {
    // Every module the import resolves is noted; the heavy ones must not be among them.
    const script = `
      import { registerHooks } from "node:module";
      const seen = [];
      registerHooks({ resolve(specifier, context, next) { const r = next(specifier, context); seen.push(r.url); return r; } });
      const lib = await import("taskledger");
      for (const name of ["createManager", "createModel", "cleanRepository", "gitWorkspaces"]) if (typeof lib[name] !== "function") throw new Error("missing export " + name);
      const heavy = /node_modules[/](bullmq|ioredis|commander|@taskledger[/](ui|testing|queue)|@anthropic-ai|openai|@google[/]genai|@opencode-ai|@pydantic|@opentelemetry[/](exporter|sdk))[/]/;
      console.log(JSON.stringify([...new Set(seen.filter((url) => heavy.test(url)).map((url) => url.slice(url.lastIndexOf("node_modules/") + 13)))]));
    `;
    await writeFile(join(project, "light.mjs"), script);
    const { stdout } = await run(process.execPath, ["light.mjs"], { cwd: project });
    expect(JSON.parse(stdout.trim())).toEqual([]);
  });

  it("serve the page from the built assets they ship, with nothing fetched from elsewhere", async () => {
    const script = `
      import { startUiServer } from "@taskledger/ui";
      import { mkdtempSync } from "node:fs";
      import { tmpdir } from "node:os";
      import { join } from "node:path";
      const server = await startUiServer({ store: mkdtempSync(join(tmpdir(), "packed-ui-")) });
      const page = await (await fetch(server.url)).text();
      const token = new URL(server.url).searchParams.get("token");
      const script = await fetch(new URL("/assets/app.js?token=" + token, server.url));
      const css = await fetch(new URL("/assets/app.css?token=" + token, server.url));
      console.log(script.status, css.status, (await script.text()).length > 10000, /https?:\\/\\//.test(page));
      await server.close();
    `;
    await writeFile(join(project, "ui.mjs"), script);
    const { stdout } = await run(process.execPath, ["ui.mjs"], { cwd: project });
    expect(stdout.trim()).toBe("200 200 true false");
  });

  it("serve `taskledger mcp` from the installed command, ending when the client closes stdin", async () => {
    const child = spawn(
      process.execPath,
      [
        join(project, "node_modules", "taskledger", "bin", "taskledger.js"),
        "mcp",
        ...[
          "--provider",
          "openai-compatible",
          "--model",
          "m",
          "--base-url",
          "http://127.0.0.1:9/v1",
        ],
        ...["--store", join(project, "runs")],
      ],
      { cwd: project, stdio: ["pipe", "pipe", "ignore"] },
    );
    const message = (id: number, method: string, params: object) =>
      `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;
    child.stdin.write(
      message(1, "initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "packed", version: "1" },
      }),
    );
    child.stdin.write(
      `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`,
    );
    child.stdin.write(message(2, "tools/list", {}));
    let out = "";
    const exited = once(child, "exit");
    await new Promise<void>((listed) =>
      child.stdout.on("data", (chunk) => {
        out += chunk;
        if (out.includes('"id":2')) listed();
      }),
    );
    child.stdin.end();
    const [code] = await exited;
    const listed = out
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { id: number; result: { tools: unknown[] } })
      .find((reply) => reply.id === 2);
    expect(code).toBe(0);
    expect(listed?.result.tools.length).toBe(9);
  });

  it("load with require() from a CommonJS host such as an Electron main process", async () => {
    const script = `
      const core = require("@taskledger/core");
      const { createModel } = require("@taskledger/llm");
      console.log(typeof core.createManager, typeof createModel);
    `;
    await writeFile(join(project, "cjs.cjs"), script);
    const { stdout } = await run(process.execPath, ["cjs.cjs"], { cwd: project });
    expect(stdout.trim()).toBe("function function");
  });

  it("type-check for a TypeScript consumer", async () => {
    const source = `
      import { createManager, type RunReport } from "@taskledger/core";
      import { createFakeExecutor } from "@taskledger/testing";
      const manager = createManager({ cwd: ".", executor: createFakeExecutor() });
      export const report: Promise<RunReport> = manager.run("x");
    `;
    await writeFile(join(project, "consumer.ts"), source);
    await writeFile(
      join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          types: [],
        },
        files: ["consumer.ts"],
      }),
    );
    const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
    const result = await run(process.execPath, [tsc, "-p", "tsconfig.json"], {
      cwd: project,
    }).catch((e) => e);
    expect(result.stdout ?? "").toBe("");
  });

  it("type-check in a strict host (lib es2023, node's types only): every entry point, the JSDoc example of `checks`, and telemetry without its optional peer", async () => {
    const example = await checksExample(join(project, "node_modules", "@taskledger", "core"));
    expect(await strictTypeErrors(project, example)).toEqual([]);
    // @opentelemetry/api comes with the command line and the Anthropic SDK: telemetry alone here.
    const host = join(project, "without-peers");
    await mkdir(host);
    await writeFile(
      join(host, "package.json"),
      JSON.stringify({ name: "without-peers", private: true, type: "module" }),
    );
    // Core's own dependency on @taskledger/process comes along.
    const own = tarballs.filter((file) => /taskledger-(core|process|telemetry)-\d/.test(file));
    expect(own).toHaveLength(3);
    await run(
      "npm",
      ["install", "--prefer-offline", "--ignore-scripts", "--no-audit", "--no-fund", ...own],
      { cwd: host, maxBuffer: 16 * 1024 * 1024 },
    );
    expect(existsSync(join(host, "node_modules", "@opentelemetry", "api"))).toBe(false);
    expect(await strictTypeErrors(host, "")).toEqual([]);
  }, 240_000);
});

/** The entry points with types of every package installed in `host`, as a host imports them. */
async function entryPoints(host: string): Promise<string[]> {
  const names = packages.map(
    (name) => JSON.parse(readFileSync(join(root, "packages", name, "package.json"), "utf8")).name,
  );
  const found: string[] = [];
  for (const name of names) {
    const manifest = join(host, "node_modules", name, "package.json");
    if (!existsSync(manifest)) continue;
    const exports = JSON.parse(await readFile(manifest, "utf8")).exports as Record<string, unknown>;
    for (const [subpath, target] of Object.entries(exports)) {
      if (typeof target === "object" && target && "types" in target)
        found.push(subpath === "." ? name : `${name}/${subpath.slice(2)}`);
    }
  }
  return found;
}

/** `ManagerOptions.checks`' example in core's shipped types, as code a host would write. */
async function checksExample(core: string): Promise<string> {
  const types = await readFile(join(core, "dist", "run", "manager-options.d.ts"), "utf8");
  const example = /\(`(\{ type: [^`]+\})`\)\.?\s*\*\/\s*checks\?:/.exec(types)?.[1];
  expect(example, "the JSDoc of ManagerOptions.checks gives an example").toBeDefined();
  return `import type { ManagerOptions } from "@taskledger/core";\nexport const options: Pick<ManagerOptions, "checks"> = { checks: [${example}] };\n`;
}

/** tsc's errors for a strict ESM host that imports every entry point installed in `host`. */
async function strictTypeErrors(host: string, extra: string): Promise<string[]> {
  const imports = (await entryPoints(host)).map(
    (specifier, i) => `import * as entry${i} from "${specifier}";\nexport { entry${i} };`,
  );
  await writeFile(join(host, "strict.mts"), `${imports.join("\n")}\n${extra}`);
  await writeFile(
    join(host, "tsconfig.strict.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        lib: ["es2023"],
        types: ["node"],
        // Node's types from the workspace: a host has its own.
        typeRoots: [join(root, "node_modules", "@types")],
        module: "nodenext",
        moduleResolution: "nodenext",
        skipLibCheck: false,
        noEmit: true,
      },
      files: ["strict.mts"],
    }),
  );
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  const result = await run(process.execPath, [tsc, "-p", "tsconfig.strict.json"], {
    cwd: host,
    maxBuffer: 16 * 1024 * 1024,
  }).catch((e: { stdout?: string }) => e);
  return (result.stdout ?? "").split("\n").filter((line: string) => line.includes("error TS"));
}
