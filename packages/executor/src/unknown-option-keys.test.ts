import { InvalidConfigError } from "@taskledger/core";
import { describe, expect, it } from "vitest";
import { createClaudeCodeExecutor } from "./claude-code/claude-code-executor.js";
import { createCodexExecutor } from "./codex/codex-executor.js";
import { createOpencodeExecutor } from "./opencode/opencode-executor.js";
import { createOpencodeServerExecutor } from "./opencode/server/opencode-server-executor.js";

/** Options as a JavaScript host or a config file may pass them, past the types. */
const loose = <T>(options: Record<string, unknown>) => options as unknown as T;

describe("executor options", () => {
  it.each([
    ["createOpencodeExecutor", () => createOpencodeExecutor(loose({ model: "p/m", timeoutMS: 5 }))],
    [
      "createOpencodeServerExecutor",
      () => createOpencodeServerExecutor(loose({ model: "p/m", timeoutMS: 5 })),
    ],
    [
      "createClaudeCodeExecutor",
      () => createClaudeCodeExecutor(loose({ model: "m", timeoutMS: 5 })),
    ],
    ["createCodexExecutor", () => createCodexExecutor(loose({ model: "m", timeoutMS: 5 }))],
  ])("%s refuses an unknown key by name, with the key meant", (factory, make) => {
    expect(make).toThrow(
      expect.objectContaining({
        code: "invalid-config",
        message: expect.stringContaining(
          `${factory}: unknown option "timeoutMS" (did you mean "timeoutMs"?)`,
        ),
      }),
    );
  });

  it("refuses a server option given to the CLI executor, and takes it on the server executor", () => {
    expect(() => createOpencodeExecutor(loose({ model: "p/m", poolSize: 2 }))).toThrow(
      /unknown option "poolSize"/,
    );
    expect(createOpencodeServerExecutor({ model: "p/m", poolSize: 2 })).toBeDefined();
  });

  it("says the type of a number given as a string", () => {
    let error: unknown;
    try {
      createOpencodeExecutor(loose({ model: "p/m", timeoutMs: "5000" }));
    } catch (caught) {
      error = caught;
    }
    expect(InvalidConfigError.isInstance(error)).toBe(true);
    expect((error as Error).message).toBe('timeoutMs must be a positive number, got string "5000"');
  });
});
