import type { Command } from "commander";
import type { CliIo } from "../cli-io.js";
import { setUpDemo } from "../demo/demo.js";
import { parseRunOptions } from "../options/cli-options.js";
import { runCommand } from "./run-command.js";

/** `taskledger demo`: a scripted multi-step request, offline, on the real opencode CLI. */
export function addDemoCommand(program: Command, io: CliIo, exit: (code: number) => void): void {
  program
    .command("demo")
    .description(
      "run a scripted multi-step request offline: a local model server and the real opencode CLI",
    )
    .option("--json", "print the final report as JSON on stdout; progress goes to stderr")
    .option("--keep", "keep the directory the agents worked in")
    .option("--concurrency <n>", "sub-tasks running at once", "2")
    .option("--agent <name>", "the agent doing the work: opencode (default), claude-code or codex")
    .action(
      async (raw: { json?: boolean; keep?: boolean; concurrency?: string; agent?: string }) => {
        const agent = raw.agent ? { agent: raw.agent } : {};
        // The demo's agent model: opencode's is set by the demo, the others take any name.
        const model = raw.agent && raw.agent !== "opencode" ? { agentModel: "demo-agent" } : {};
        const checked = await parseRunOptions(
          { concurrency: raw.concurrency, ...agent, ...model },
          io.cwd,
        );
        const demo = await setUpDemo({
          json: raw.json === true,
          keep: raw.keep === true,
          concurrency: checked.concurrency,
          agent: checked.agent,
        });
        const human = demo.options.json ? io.stderr : io.stdout;
        human.write(
          `Offline demo: a scripted model server at ${demo.options.baseURL}, agents working in ${demo.cwd}\n`,
        );
        try {
          exit(await runCommand(demo.request, demo.options, io));
        } finally {
          await demo.finish((text) => human.write(text));
        }
      },
    );
}
