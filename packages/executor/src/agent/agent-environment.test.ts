import { InvalidConfigError } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { opencodeKeyVariables } from "../opencode/opencode-provider-keys.js";
import { agentEnvironment } from "./agent-environment.js";

const host = {
  PATH: "/usr/bin",
  LANG: "C.UTF-8",
  LC_ALL: "C.UTF-8",
  TERM: "xterm",
  TZ: "UTC",
  BUN_JSC_useFTLJIT: "0",
  BUN_INSTALL: "/home/user/.bun",
  HOME: "/home/user",
  AWS_SECRET_ACCESS_KEY: "aws-secret",
  GITHUB_TOKEN: "gh-token",
  MY_SECRET: "mine",
  ANTHROPIC_API_KEY: "sk-ant",
  CLAUDE_CONFIG_DIR: "/home/user/.claude",
  XDG_CONFIG_HOME: "/home/user/.config",
};
const dirs = { home: "/attempt/home", tmp: "/attempt/tmp" };

describe("an agent's environment", () => {
  it("holds its list of the host's variables, its own home and temp directory, nothing else", () => {
    const env = agentEnvironment({ host, provider: ["ANTHROPIC_API_KEY"], ...dirs });
    expect(env).toEqual({
      PATH: "/usr/bin",
      LANG: "C.UTF-8",
      LC_ALL: "C.UTF-8",
      TERM: "xterm",
      TZ: "UTC",
      BUN_JSC_useFTLJIT: "0",
      ANTHROPIC_API_KEY: "sk-ant",
      HOME: "/attempt/home",
      USERPROFILE: "/attempt/home",
      TMPDIR: "/attempt/tmp",
      TMP: "/attempt/tmp",
      TEMP: "/attempt/tmp",
    });
  });

  it("passes a variable the user names, and explicit env over all", () => {
    const env = agentEnvironment({
      host,
      provider: [],
      passEnv: ["MY_SECRET", "NOT_SET"],
      env: { EXTRA: "1", PATH: "/opt/bin" },
      ...dirs,
    });
    expect(env).toMatchObject({ MY_SECRET: "mine", EXTRA: "1", PATH: "/opt/bin" });
    expect(env).not.toHaveProperty("NOT_SET");
    expect(env).not.toHaveProperty("GITHUB_TOKEN");
  });

  it("inheritEnv (deprecated) passes the host's environment but the agent's own config", () => {
    const env = agentEnvironment({
      host,
      provider: [],
      inheritEnv: true,
      drop: /^(CLAUDE|XDG_)/,
      ...dirs,
    });
    expect(env).toMatchObject({ MY_SECRET: "mine", GITHUB_TOKEN: "gh-token", HOME: dirs.home });
    expect(env).not.toHaveProperty("CLAUDE_CONFIG_DIR");
    expect(env).not.toHaveProperty("XDG_CONFIG_HOME");
  });

  it("refuses a passEnv that names no variable, with a typed error", () => {
    for (const passEnv of [["A=B"], ["has space"], "MY_SECRET", [3]]) {
      const error = (() => {
        try {
          agentEnvironment({ host, provider: [], passEnv: passEnv as string[], ...dirs });
        } catch (caught) {
          return caught;
        }
      })();
      expect(InvalidConfigError.isInstance(error)).toBe(true);
      expect(String((error as Error).message)).toMatch(/^passEnv/);
    }
  });
});

describe("the variables opencode gets for its providers", () => {
  it("are its catalogue's for built-in providers, a configured provider's env and {env:} references", () => {
    const config = {
      provider: {
        mine: { env: ["MINE_KEY"], options: { apiKey: "{env:MINE_TOKEN}" } },
      },
    };
    expect(
      opencodeKeyVariables(["anthropic/claude", "google/gemini", "mine/m", "toString/x"], config),
    ).toEqual([
      "ANTHROPIC_API_KEY",
      "GOOGLE_API_KEY",
      "GOOGLE_GENERATIVE_AI_API_KEY",
      "GEMINI_API_KEY",
      "MINE_KEY",
      "MINE_TOKEN",
    ]);
    // A provider the run does not use gives nothing: bedrock's AWS keys stay out.
    expect(opencodeKeyVariables(["openai/gpt"], undefined)).toEqual(["OPENAI_API_KEY"]);
  });
});
