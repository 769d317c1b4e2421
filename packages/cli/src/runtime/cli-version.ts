import { readFileSync } from "node:fs";

/** The taskledger package's version, as its package.json says ("0.0.0" where none is found). */
export function cliVersion(): string {
  try {
    const json = readFileSync(new URL("../../package.json", import.meta.url), "utf8");
    return (JSON.parse(json) as { version?: string }).version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}
