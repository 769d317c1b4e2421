// Helpers the CLI's tests share. Not part of the package: tsconfig.build.json leaves this folder out.
import { readdir, readFile, readlink } from "node:fs/promises";
import { PassThrough } from "node:stream";
import type { CliIo } from "../cli.js";

/** The CLI's streams as strings: what a person would have seen on stdout and stderr. */
export function captureIo(overrides: Partial<CliIo> = {}) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = "";
  let err = "";
  stdout.on("data", (d) => {
    out += d;
  });
  stderr.on("data", (d) => {
    err += d;
  });
  const io: CliIo = {
    stdout,
    stderr,
    stdin: new PassThrough(),
    env: { CI: "true" },
    cwd: process.cwd(),
    signal: new AbortController().signal,
    ...overrides,
  };
  return { io, out: () => out, err: () => err };
}

/** Live processes whose working directory or environment lies under `root`: what a run left running. */
export async function processesUnder(root: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const [environ, cwd] = await Promise.all([
      readFile(`/proc/${name}/environ`, "utf8").catch(() => ""),
      readlink(`/proc/${name}/cwd`).catch(() => ""),
    ]);
    if (environ.includes(root) || cwd.startsWith(root)) found.push(Number(name));
  }
  return found;
}
