import { readFile } from "node:fs/promises";
import type { RunState } from "@taskledger/core";
import { defaultModels } from "@taskledger/llm";
import { describe, expect, it } from "vitest";
import { resumeOptions } from "../commands/resume-command.js";
import { otlpFromEnv, parseRunOptions, UsageError } from "./cli-options.js";
import { hostSettingsOf, loggedOptions, readHostSettings } from "./host-settings.js";

describe("parseRunOptions: default models", () => {
  it.each(Object.entries(defaultModels))(
    "%s: the manager and the agent default from defaultModels",
    async (provider, models) => {
      const options = await parseRunOptions({ provider }, "/");
      expect([options.model, options.agentModel]).toEqual([
        models.manager,
        `${provider}/${models.agent}`,
      ]);
    },
  );

  it("a --model the user chose is the agent's model too, unless --agent-model says otherwise", async () => {
    const chosen = await parseRunOptions({ provider: "openai", model: "my-model" }, "/");
    expect(chosen.agentModel).toBe("openai/my-model");
    const both = await parseRunOptions(
      { provider: "openai", model: "my-model", agentModel: "anthropic/other" },
      "/",
    );
    expect(both.agentModel).toBe("anthropic/other");
  });
});

describe("--executor", () => {
  it("is server unless cli is asked for; anything else is a usage error", async () => {
    expect((await parseRunOptions({}, "/")).executor).toBe("server");
    expect((await parseRunOptions({ executor: "cli" }, "/")).executor).toBe("cli");
    expect((await parseRunOptions({ executor: "server" }, "/")).executor).toBe("server");
    await expect(parseRunOptions({ executor: "fast" }, "/")).rejects.toThrow(UsageError);
  });

  it("is logged with the run and read back, so a resume runs on the same executor", async () => {
    const options = await parseRunOptions({ executor: "server" }, "/");
    const logged = JSON.parse(JSON.stringify(hostSettingsOf(options)));
    expect(readHostSettings(logged)?.executor).toBe("server");
    expect(loggedOptions).toContainEqual(["executor", "--executor"]);
  });
});

describe("--agent", () => {
  it("is opencode unless another agent is named; its model is in that agent's own form", async () => {
    expect(await parseRunOptions({}, "/")).toMatchObject({ agent: "opencode" });
    expect(await parseRunOptions({ agent: "claude-code" }, "/")).toMatchObject({
      agent: "claude-code",
      agentModel: "sonnet",
    });
    const codex = await parseRunOptions({ agent: "codex", agentModel: "gpt-5-codex" }, "/");
    expect(codex).toMatchObject({ agent: "codex", agentModel: "gpt-5-codex" });
    await expect(parseRunOptions({ agent: "codex" }, "/")).rejects.toThrow(
      "--agent-model is required with --agent codex",
    );
    await expect(parseRunOptions({ agent: "aider" }, "/")).rejects.toThrow(UsageError);
    await expect(parseRunOptions({ agentModel: "sonnet" }, "/")).rejects.toThrow(
      "provider/model for opencode",
    );
  });

  it("an alternate agent model may name another agent, and a bare one is the run's agent", async () => {
    const options = await parseRunOptions(
      { agent: "claude-code", alternateAgentModel: ["opus", "codex:gpt-5-codex"] },
      "/",
    );
    expect(options.alternateAgentModels).toEqual(["claude-code:opus", "codex:gpt-5-codex"]);
    await expect(parseRunOptions({ alternateAgentModel: ["codex:"] }, "/")).rejects.toThrow(
      UsageError,
    );
    await expect(
      parseRunOptions({ alternateAgentModel: ["opencode:sonnet"] }, "/"),
    ).rejects.toThrow("provider/model for opencode");
  });

  it("--no-keep-slots is logged with the run and read back, so a resume makes its worktrees anew too", async () => {
    const options = await parseRunOptions({ keepSlots: false }, "/");
    const logged = readHostSettings(JSON.parse(JSON.stringify(hostSettingsOf(options))));
    expect(logged?.keepSlots).toBe(false);
    const kept = readHostSettings(
      JSON.parse(JSON.stringify(hostSettingsOf(await parseRunOptions({}, "/")))),
    );
    expect(kept?.keepSlots).toBeUndefined();
  });

  it("is logged with the run and read back, so a resume runs on the same agent", async () => {
    const options = await parseRunOptions({ agent: "claude-code", agentModel: "opus" }, "/");
    const logged = readHostSettings(JSON.parse(JSON.stringify(hostSettingsOf(options))));
    expect(logged).toMatchObject({ agent: "claude-code", agentModel: "opus" });
    expect(loggedOptions).toContainEqual(["agent", "--agent"]);
  });
});

describe("--pass-env and --agent-base-url", () => {
  it("are logged with the run (names, never values) and a resume runs with them", async () => {
    const options = await parseRunOptions(
      { passEnv: ["DATABASE_URL"], agentBaseUrl: "http://127.0.0.1:9/v1" },
      "/",
    );
    const host = JSON.parse(JSON.stringify(hostSettingsOf(options)));
    expect(host).toMatchObject({
      passEnv: ["DATABASE_URL"],
      agentBaseUrl: "http://127.0.0.1:9/v1",
    });
    const recovered = {
      cwd: "/",
      settings: {
        host,
        concurrency: 3,
        maxRetries: 2,
        maxSubTasks: 20,
        alternateAgentModels: [],
        replan: { enabled: true },
        budget: {},
      },
    } as unknown as RunState;
    const { options: resumed } = await resumeOptions(recovered, {}, new Set(), "/");
    expect(resumed).toMatchObject({
      passEnv: ["DATABASE_URL"],
      agentBaseUrl: "http://127.0.0.1:9/v1",
    });
  });
});

describe("docs/cli.md", () => {
  it("names the defaults defaultModels holds, so the docs cannot drift from the code", async () => {
    const doc = await readFile(new URL("../../../../docs/cli.md", import.meta.url), "utf8");
    for (const [provider, models] of Object.entries(defaultModels)) {
      expect(doc).toContain(
        `| \`${provider}\` | \`${models.manager}\` | \`${provider}/${models.agent}\` |`,
      );
    }
  });
});

describe("parseRunOptions: --redis and --remote", () => {
  it("send attempts to workers with worktrees, and go together", async () => {
    const options = await parseRunOptions(
      {
        redis: "rediss://u:pw@queue:6380/2",
        remote: "/srv/repo.git",
        redisTimeout: "5000",
        workerWait: "60000",
      },
      "/",
    );
    expect(options.queue).toEqual({
      redis: "rediss://u:pw@queue:6380/2",
      remote: "/srv/repo.git",
      unreachableAfterMs: 5000,
      stalledCheckMs: 30_000,
      workerWaitMs: 60_000,
    });
    expect(options.isolation).toBe("worktree");
    expect((await parseRunOptions({}, "/")).queue).toBeUndefined();
    await expect(parseRunOptions({ redis: "redis://q" }, "/")).rejects.toThrow(
      "--redis and --remote go together",
    );
    await expect(parseRunOptions({ redis: "http://q", remote: "r" }, "/")).rejects.toThrow(
      "redis:// or rediss://",
    );
    await expect(
      parseRunOptions({ redis: "redis://q", remote: "r", isolation: "shared" }, "/"),
    ).rejects.toThrow("--redis needs worktree isolation");
  });
});

describe("otlpFromEnv: OpenTelemetry's variables when --otlp is not given", () => {
  it("takes the traces endpoint as it is, else the base endpoint with v1/traces", () => {
    expect(otlpFromEnv({})).toBeUndefined();
    expect(otlpFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(
      "http://collector:4318/v1/traces",
    );
    expect(otlpFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example.test/otlp/" })).toBe(
      "https://otel.example.test/otlp/v1/traces",
    );
    expect(
      otlpFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://base:4318",
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://traces:4318/custom",
      }),
    ).toBe("http://traces:4318/custom");
    expect(
      otlpFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }),
    ).toBeUndefined();
    expect(() => otlpFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: "grpc://c:4317" })).toThrow(
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL; got "grpc://c:4317"',
    );
  });
});
