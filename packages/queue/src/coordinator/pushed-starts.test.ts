import { describe, expect, it } from "vitest";
import { PushedStarts } from "./pushed-starts.js";

describe("start commits a coordinator pushed", () => {
  it("a commit is pushed once, under the first attempt's ref, however many attempts start from it at once", async () => {
    const pushes: string[] = [];
    const starts = new PushedStarts();
    const push = (ref: string) => async () => {
      pushes.push(ref);
    };
    const refs = await Promise.all([
      starts.refFor("c1", "r/a", push("r/a")),
      starts.refFor("c1", "r/b", push("r/b")),
    ]);
    expect(refs).toEqual(["r/a", "r/a"]);
    expect(await starts.refFor("c2", "r/c", push("r/c"))).toBe("r/c");
    expect(pushes).toEqual(["r/a", "r/c"]);
  });

  it("a failed push is forgotten: the next attempt from that commit pushes its own", async () => {
    const starts = new PushedStarts();
    await expect(
      starts.refFor("c1", "r/a", async () => {
        throw new Error("remote down");
      }),
    ).rejects.toThrow("remote down");
    expect(await starts.refFor("c1", "r/b", async () => {})).toBe("r/b");
  });

  it("a ref pushed again with another commit no longer stands for the one it held", async () => {
    const starts = new PushedStarts();
    const pushes: string[] = [];
    const push = (what: string) => async () => {
      pushes.push(what);
    };
    await starts.refFor("c1", "r/a", push("c1 to r/a"));
    await starts.refFor("c2", "r/a", push("c2 to r/a"));
    expect(await starts.refFor("c1", "r/b", push("c1 to r/b"))).toBe("r/b");
    expect(pushes).toEqual(["c1 to r/a", "c2 to r/a", "c1 to r/b"]);
  });
});
