import { mkdir, mkdtemp, realpath, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ListRootsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientRoots } from "./client-roots.js";

let base: string;
let project: string;
let outside: string;

beforeAll(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "taskledger-roots-")));
  project = join(base, "project");
  outside = join(base, "outside");
  await mkdir(join(project, "sub"), { recursive: true });
  await mkdir(outside);
  // A link inside the root that leads out of it.
  await symlink(outside, join(project, "escape"));
});

afterAll(() => rm(base, { recursive: true, force: true }));

/** A server whose client lists `roots` (none: the client has no roots capability). */
async function rootsOf(roots: string[] | undefined, startDirectory: string) {
  const server = new Server({ name: "t", version: "1" }, { capabilities: {} });
  const client = new Client(
    { name: "c", version: "1" },
    { capabilities: roots ? { roots: {} } : {} },
  );
  if (roots)
    client.setRequestHandler(ListRootsRequestSchema, async () => ({
      roots: roots.map((path) => ({ uri: pathToFileURL(path).href })),
    }));
  const [a, b] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(a), client.connect(b)]);
  return new ClientRoots(server, startDirectory);
}

describe("ClientRoots", () => {
  it("defaults to the first root and accepts directories below a root, relative ones from the first", async () => {
    const roots = await rootsOf([project, outside], base);
    expect(await roots.resolve(undefined)).toBe(project);
    expect(await roots.resolve("sub")).toBe(join(project, "sub"));
    expect(await roots.resolve(outside)).toBe(outside);
  });

  it("refuses a directory outside the roots, through a link too, naming it", async () => {
    const roots = await rootsOf([project], base);
    await expect(roots.resolve(base)).rejects.toThrow(
      `The directory ${base} is outside your roots`,
    );
    await expect(roots.resolve(join(project, "escape"))).rejects.toThrow("is outside your roots");
    await expect(roots.resolve(`${project}-sibling`)).rejects.toThrow("does not exist");
  });

  it("without roots from the client, only the start directory", async () => {
    const roots = await rootsOf(undefined, project);
    expect(await roots.resolve(undefined)).toBe(project);
    await expect(roots.resolve(outside)).rejects.toThrow("where taskledger mcp was started");
  });
});
