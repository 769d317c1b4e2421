import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunState } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { resumeOptions } from "../commands/resume-command.js";
import { parseRunOptions, type RawRunOptions, UsageError } from "./cli-options.js";
import { loggedOptions } from "./host-settings.js";
import { loadProjectConfig } from "./project-config.js";

const manager = { provider: "openai-compatible", model: "m", baseUrl: "http://127.0.0.1:1/v1" };

async function withConfig(config: unknown, raw: RawRunOptions = {}) {
  const dir = mkdtempSync(join(tmpdir(), "taskledger-integration-options-"));
  mkdirSync(join(dir, ".git"));
  writeFileSync(join(dir, "taskledger.json"), JSON.stringify(config));
  const loaded = await loadProjectConfig(dir, undefined);
  return parseRunOptions({ ...manager, ...raw }, dir, { path: loaded!.path, ...loaded!.config });
}

describe("--integration, --no-acceptance, --acceptance-rounds", () => {
  it("default to the batch gate and one round of acceptance", async () => {
    expect(await parseRunOptions(manager, "/")).toMatchObject({
      integration: "batch",
      acceptance: { rounds: 1 },
    });
  });

  it("take each mode and a number of rounds; --no-acceptance turns the acceptance off", async () => {
    for (const mode of ["batch", "each", "end", "off"])
      expect((await parseRunOptions({ ...manager, integration: mode }, "/")).integration).toBe(
        mode,
      );
    expect((await parseRunOptions({ ...manager, acceptanceRounds: "0" }, "/")).acceptance).toEqual({
      rounds: 0,
    });
    expect((await parseRunOptions({ ...manager, acceptanceRounds: "5" }, "/")).acceptance).toEqual({
      rounds: 5,
    });
    expect((await parseRunOptions({ ...manager, acceptance: false }, "/")).acceptance).toBe(false);
  });

  it.each([
    [{ integration: "always" }, '--integration must be one of batch, each, end, off; got "always"'],
    [{ acceptanceRounds: "6" }, '--acceptance-rounds must be a whole number from 0 to 5; got "6"'],
    [{ acceptanceRounds: "1.5" }, "--acceptance-rounds must be a whole number"],
    [{ acceptanceRounds: "" }, "--acceptance-rounds must be a whole number"],
    [{ acceptance: false, acceptanceRounds: "2" }, "leave out --no-acceptance"],
  ])("refuses %j with a usage error", async (raw, message) => {
    const error = await parseRunOptions({ ...manager, ...raw }, "/").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).toContain(message);
  });
});

describe("taskledger.json's integration and acceptance", () => {
  it("are read, and the command line wins over them", async () => {
    expect(await withConfig({ integration: "end", acceptance: { rounds: 3 } })).toMatchObject({
      integration: "end",
      acceptance: { rounds: 3 },
    });
    expect((await withConfig({ acceptance: false })).acceptance).toBe(false);
    expect((await withConfig({ acceptance: true })).acceptance).toEqual({ rounds: 1 });
    expect((await withConfig({ acceptance: {} })).acceptance).toEqual({ rounds: 1 });
    expect(
      await withConfig(
        { integration: "end", acceptance: false },
        { integration: "each", acceptanceRounds: "2" },
      ),
    ).toMatchObject({ integration: "each", acceptance: { rounds: 2 } });
    expect(
      (await withConfig({ acceptance: { rounds: 3 } }, { acceptance: false })).acceptance,
    ).toBe(false);
  });

  it.each([
    [{ integration: "sometimes" }, /"integration": /],
    [{ acceptance: { rounds: 9 } }, /"acceptance.rounds": /],
    [{ acceptance: { round: 1 } }, /unknown key "round"/],
    [{ acceptance: "yes" }, /"acceptance": /],
  ])("refuses %j naming the key", async (config, message) => {
    const error = await withConfig(config).catch((e: unknown) => e);
    expect((error as Error).name).toBe("UsageError");
    expect((error as Error).message).toMatch(message);
  });
});

describe("resume and the gate's options", () => {
  const recovered = (settings: Record<string, unknown>) =>
    ({
      cwd: "/",
      settings: {
        host: {
          provider: "openai-compatible",
          model: "m",
          baseURL: "http://127.0.0.1:1/v1",
          agentModel: "taskledger-compatible/a",
        },
        concurrency: 3,
        maxRetries: 2,
        maxSubTasks: 20,
        alternateAgentModels: [],
        replan: { enabled: true },
        budget: {},
        ...settings,
      },
    }) as unknown as RunState;
  // Commander's default for `--no-acceptance`.
  const raw = { acceptance: true };

  it("are logged options: a run resumes as it was started, a flag given again overrides", async () => {
    for (const key of ["integration", "acceptance", "acceptanceRounds"])
      expect(loggedOptions.map(([k]) => k)).toContain(key);
    const started = recovered({ integration: "each", acceptance: { rounds: 2 } });
    expect((await resumeOptions(started, raw, new Set(), "/")).options).toMatchObject({
      integration: "each",
      acceptance: { rounds: 2 },
    });
    const off = await resumeOptions(
      started,
      { ...raw, acceptance: false, integration: "off" },
      new Set(["acceptance", "integration"] as const),
      "/",
    );
    expect(off.options).toMatchObject({ integration: "off", acceptance: false });
    expect(off.notices).toContain(
      "--no-acceptance given: it overrides what the run was started with",
    );
    const on = await resumeOptions(
      recovered({ integration: "batch" }),
      { ...raw, acceptanceRounds: "3" },
      new Set(["acceptanceRounds"] as const),
      "/",
    );
    expect(on.options.acceptance).toEqual({ rounds: 3 });
  });

  it("a log from before the gate resumes with neither", async () => {
    const { options } = await resumeOptions(recovered({}), raw, new Set(), "/");
    expect(options).toMatchObject({ integration: "off", acceptance: false });
  });
});
