import { describe, expect, it } from "vitest";
import { HeadTailBuffer } from "./head-tail-buffer.js";

describe("HeadTailBuffer", () => {
  it("keeps the head and the tail of a stream of any size and counts what it cut", () => {
    const buffer = new HeadTailBuffer(4, 6);
    for (let i = 0; i < 10_000; i++) buffer.push(Buffer.from("0123456789"));
    buffer.push(Buffer.from("END!"));
    expect(buffer.size).toBe(100_004);
    expect(buffer.toString()).toBe("0123\n[… 99994 bytes cut …]\n89END!");
  });

  it("passes short output through whole", () => {
    const buffer = new HeadTailBuffer(0, 100);
    buffer.push(Buffer.from("warning: x\n"));
    expect(buffer.toString()).toBe("warning: x\n");
  });
});
