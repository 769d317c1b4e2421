// CPU of opencode attempts (`opencode run` per attempt, and a server's first five attempts), with
// Bun's default JIT tiers and with `BUN_JSC_useFTLJIT=0` (what the test suite sets). Each setting
// runs in a node process of its own, whose reaped children's CPU (Linux: /proc/self/stat) is
// opencode's: the figure does not depend on the machine's other load, only on its speed.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { Executor } from "@taskledger/core";
import { createOpencodeExecutor, createOpencodeServerExecutor } from "@taskledger/executor";
import { createModelServer, scriptedOpencodeProvider } from "@taskledger/testing";
import { subTask } from "./start-sub-task.ts";

export interface OpencodeCpuRow {
  kind: "cli" | "server";
  attempts: number;
  /** CPU-seconds per attempt, opencode's processes only. */
  defaultCpuS: number;
  ftlOffCpuS: number;
}

const attempts = 5;

/** Reaped children's user + system CPU of this process, in seconds (Linux). */
async function childrenCpuSeconds(): Promise<number> {
  const stat = await readFile("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 16 and 17 of stat(5) (cutime, cstime), counted here from field 3.
  return (Number(fields[13]) + Number(fields[14])) / 100;
}

/** In the child: `attempts` attempts, each in a new directory; prints opencode's CPU-seconds. */
async function child(kind: "cli" | "server", ftlOff: boolean): Promise<void> {
  const server = await createModelServer({ replies: () => ({ text: "Done." }) });
  const settings = {
    model: "scripted/m",
    config: { provider: scriptedOpencodeProvider(server, { models: ["m"] }) },
    ...(ftlOff ? { env: { BUN_JSC_useFTLJIT: "0" } } : {}),
  };
  const executor: Executor =
    kind === "cli" ? createOpencodeExecutor(settings) : createOpencodeServerExecutor(settings);
  const dirs: string[] = [];
  try {
    for (let i = 0; i < attempts; i++) {
      const cwd = await mkdtemp(join(tmpdir(), "taskledger-bench-cpu-"));
      dirs.push(cwd);
      const result = await executor.run("Say done.", {
        subTask,
        attempt: 1,
        cwd,
        abortSignal: new AbortController().signal,
      });
      if (result.outcome !== "finished") throw new Error(`opencode-cpu bench: ${result.outcome}`);
    }
  } finally {
    await executor.close?.();
    await server.close();
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  }
  process.stdout.write(`${await childrenCpuSeconds()}\n`);
}

async function measure(kind: "cli" | "server", ftlOff: boolean): Promise<number> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [import.meta.filename, "child", kind, ftlOff ? "off" : "default"],
    { timeout: 300_000 },
  );
  return Number(stdout.trim()) / attempts;
}

export async function benchOpencodeCpu(): Promise<OpencodeCpuRow[]> {
  if (process.platform !== "linux") return [];
  const rows: OpencodeCpuRow[] = [];
  for (const kind of ["cli", "server"] as const) {
    // Interleaved, twice: a drift in the machine's speed falls on both settings alike.
    let defaultCpuS = 0;
    let ftlOffCpuS = 0;
    for (let round = 0; round < 2; round++) {
      defaultCpuS += (await measure(kind, false)) / 2;
      ftlOffCpuS += (await measure(kind, true)) / 2;
    }
    rows.push({ kind, attempts, defaultCpuS, ftlOffCpuS });
  }
  return rows;
}

// `node bench/opencode-cpu.ts`: this part alone.
if (import.meta.url === `file://${process.argv[1]}`) {
  if (process.argv[2] === "child") {
    await child(process.argv[3] === "server" ? "server" : "cli", process.argv[4] === "off");
  } else {
    console.table(await benchOpencodeCpu());
  }
}
