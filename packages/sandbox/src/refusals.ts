import type { SandboxRefusal } from "@taskledger/core";

/** Most refusals kept for one launch: an agent in a loop must not grow the record. */
export const maxRefusals = 50;

/**
 * A refusal from one of the runtime's violation lines (`deny openat /x`, `deny network-outbound
 * host:port (reason)`), or undefined for a line of another shape.
 */
export function refusalOf(line: string): SandboxRefusal | undefined {
  const network = /^deny network-outbound (\S+)(?: \((.*)\))?/.exec(line);
  if (network) {
    return {
      kind: "network",
      target: network[1] as string,
      ...(network[2] ? { detail: network[2].slice(0, 200) } : {}),
    };
  }
  const file = /^deny (\S+) (\/.*)$/.exec(line);
  if (file) {
    const call = file[1] as string;
    const kind =
      /read/.test(call) && !/write|open|creat|rename|unlink|mkdir/.test(call) ? "read" : "write";
    return { kind, target: (file[2] as string).slice(0, 500), detail: call };
  }
  return undefined;
}

/** The distinct refusals of these lines, in order, at most `maxRefusals`. */
export function refusalsOf(lines: readonly string[]): SandboxRefusal[] {
  const seen = new Set<string>();
  const refusals: SandboxRefusal[] = [];
  for (const line of lines) {
    const refusal = refusalOf(line);
    if (!refusal) continue;
    const key = `${refusal.kind} ${refusal.target}`;
    if (seen.has(key)) continue;
    seen.add(key);
    refusals.push(refusal);
    if (refusals.length >= maxRefusals) break;
  }
  return refusals;
}

/**
 * Writes refused as a confined process's tools report them (`bash: ../x: Read-only file system`,
 * `EROFS: read-only file system, open '/x'`): where the runtime keeps no record of its own.
 */
export function refusedWritesIn(output: string): string[] {
  const paths: string[] = [];
  const shell = /([^\s:'"`]+): Read-only file system/g;
  const node = /EROFS: read-only file system, \w+ '([^']+)'/g;
  for (const pattern of [shell, node]) {
    for (const match of output.matchAll(pattern)) {
      paths.push(match[1] as string);
      if (paths.length >= maxRefusals) return paths;
    }
  }
  return paths;
}
