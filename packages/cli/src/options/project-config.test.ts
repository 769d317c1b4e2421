import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { parseRunOptions } from "./cli-options.js";
import { hostSettingsOf, readHostSettings } from "./host-settings.js";
import { loadProjectConfig, projectConfigJsonSchema } from "./project-config.js";

function project(config: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), "taskledger-project-config-"));
  mkdirSync(join(dir, ".git"));
  mkdirSync(join(dir, "packages/app"), { recursive: true });
  writeFileSync(join(dir, "taskledger.json"), JSON.stringify(config));
  return dir;
}

const manager = { provider: "openai-compatible", model: "m", baseUrl: "http://127.0.0.1:1/v1" };

describe("taskledger.json", () => {
  it("is found from a subdirectory up to the repository's top, and the command line wins over it", async () => {
    const dir = project({
      setup: { command: "npm ci", inputs: ["package-lock.json"], timeoutSeconds: 90 },
      include: [".env"],
      dependencies: false,
      checks: [{ type: "command", argv: ["npm", "run", "typecheck"] }],
      agentModel: "anthropic/claude-sonnet-5",
      concurrency: 5,
      isolation: "shared",
    });
    const loaded = await loadProjectConfig(join(dir, "packages/app"), undefined);
    expect(loaded?.path).toBe(join(dir, "taskledger.json"));
    const defaults = { path: loaded!.path, ...loaded!.config };
    const fromConfig = await parseRunOptions(manager, dir, defaults);
    expect(fromConfig).toMatchObject({
      agentModel: "anthropic/claude-sonnet-5",
      concurrency: 5,
      isolation: "shared",
      checks: [{ type: "command", argv: ["npm", "run", "typecheck"] }],
      configPath: join(dir, "taskledger.json"),
      environment: {
        dependencies: false,
        include: [".env"],
        setup: { command: "npm ci", inputs: ["package-lock.json"], timeoutMs: 90_000 },
      },
    });
    const given = await parseRunOptions(
      {
        ...manager,
        agentModel: "openai/gpt-6",
        concurrency: "2",
        isolation: "worktree",
        setup: "pnpm i --offline",
        include: ["config/local.json"],
      },
      dir,
      defaults,
    );
    expect(given).toMatchObject({
      agentModel: "openai/gpt-6",
      concurrency: 2,
      isolation: "worktree",
      environment: {
        include: [".env", "config/local.json"],
        setup: { command: "pnpm i --offline" },
      },
    });
  });

  it("stops at the repository's top and reads --config from where it is given", async () => {
    const outer = project({ concurrency: 2 });
    const inner = join(outer, "inner");
    mkdirSync(join(inner, ".git"), { recursive: true });
    expect(await loadProjectConfig(inner, undefined)).toBeUndefined();
    const loaded = await loadProjectConfig(inner, "../taskledger.json");
    expect(loaded?.config).toEqual({ concurrency: 2 });
  });

  it.each([
    [{ setpu: "npm ci" }, /unknown key "setpu"/],
    [{ setup: { command: "npm ci", timeout: 5 } }, /unknown key "timeout" in "setup"/],
    [{ concurrency: "four" }, /"concurrency": .*number/i],
    [{ checks: [{ type: "commmand", argv: ["x"] }] }, /"checks\.0\.type"/],
    [{ agentModel: "sonnet" }, /"agentModel": must look like provider\/model/],
    [{ sandbox: { homeReads: "~/x" } }, /"sandbox\.homeReads": .*expected array/],
    [{ sandbox: { homeRead: ["~/x"] } }, /unknown key "homeRead" in "sandbox"/],
  ])("refuses %j naming the key and the file", async (config, message) => {
    const dir = project(config);
    const error = await loadProjectConfig(dir, undefined).catch((e: unknown) => e);
    expect((error as Error).name).toBe("UsageError");
    expect((error as Error).message).toContain(join(dir, "taskledger.json"));
    expect((error as Error).message).toMatch(message);
  });

  it("refuses a file that is not JSON", async () => {
    const dir = project({});
    writeFileSync(join(dir, "taskledger.json"), "{ setup: npm ci }");
    await expect(loadProjectConfig(dir, undefined)).rejects.toThrow(/is not valid JSON/);
  });

  it("passEnv and agentBaseUrl: the config's names then the command line's, the command line's endpoint over the config's", async () => {
    const dir = project({ passEnv: ["DATABASE_URL"], agentBaseUrl: "http://127.0.0.1:9/v1" });
    const loaded = await loadProjectConfig(dir, undefined);
    const defaults = { path: loaded!.path, ...loaded!.config };
    expect(await parseRunOptions(manager, dir, defaults)).toMatchObject({
      passEnv: ["DATABASE_URL"],
      agentBaseUrl: "http://127.0.0.1:9/v1",
    });
    const given = { ...manager, passEnv: ["REDIS_URL"], agentBaseUrl: "https://gateway.test/v1" };
    expect(await parseRunOptions(given, dir, defaults)).toMatchObject({
      passEnv: ["DATABASE_URL", "REDIS_URL"],
      agentBaseUrl: "https://gateway.test/v1",
    });
    await expect(parseRunOptions({ ...manager, passEnv: ["A=B"] }, dir)).rejects.toThrow(
      '--pass-env must name an environment variable; got "A=B"',
    );
    await expect(parseRunOptions({ ...manager, agentBaseUrl: "ftp://x" }, dir)).rejects.toThrow(
      '--agent-base-url must be an http(s) URL; got "ftp://x"',
    );
    const bad = project({ passEnv: ["NOT A NAME"], agentBaseUrl: "nowhere" });
    await expect(loadProjectConfig(bad, undefined)).rejects.toThrow(
      /"passEnv.0": must be an environment variable name; "agentBaseUrl": /,
    );
  });

  it("sandbox.homeReads: normalized, kept with the run for resume; a bad entry names the key", async () => {
    const dir = project({ sandbox: { mode: "auto", homeReads: ["~/.config/myapp/", "~/sdk"] } });
    const loaded = await loadProjectConfig(dir, undefined);
    const options = await parseRunOptions(manager, dir, { path: loaded!.path, ...loaded!.config });
    expect(options.sandbox).toEqual({
      mode: "auto",
      allowHosts: [],
      homeReads: ["~/.config/myapp", "~/sdk"],
    });
    const logged = JSON.parse(JSON.stringify(hostSettingsOf(options)));
    expect(readHostSettings(logged)?.sandbox).toEqual(options.sandbox);
    const relative = project({ sandbox: { homeReads: ["code/other"] } });
    const bad = await loadProjectConfig(relative, undefined);
    await expect(
      parseRunOptions(manager, relative, { path: bad!.path, ...bad!.config }),
    ).rejects.toThrow(
      '"sandbox.homeReads": a home read must be ~, a path starting with ~/ or an absolute path; got "code/other"',
    );
  });

  it("publishes the JSON Schema of what it accepts (taskledger.schema.json, regenerated by scripts/write-config-schema.ts)", () => {
    const published = JSON.parse(
      readFileSync(resolve(import.meta.dirname, "../../taskledger.schema.json"), "utf8"),
    );
    expect(published).toEqual(projectConfigJsonSchema());
    expect(published.additionalProperties).toBe(false);
  });
});
