import { Buffer } from "node:buffer";

/**
 * Keeps the first `headBytes` and the last `tailBytes` of a stream, whatever its size, and
 * counts the rest: a command's output stays bounded yet shows how it began and how it ended.
 */
export class HeadTailBuffer {
  private head = Buffer.alloc(0);
  private tail = Buffer.alloc(0);
  private total = 0;

  constructor(
    private readonly headBytes: number,
    private readonly tailBytes: number,
  ) {}

  push(chunk: Uint8Array): void {
    this.total += chunk.length;
    let rest = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.head.length < this.headBytes) {
      const take = Math.min(this.headBytes - this.head.length, rest.length);
      this.head = Buffer.concat([this.head, rest.subarray(0, take)]);
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    const joined = Buffer.concat([this.tail, rest]);
    // A copy, so a large chunk is not kept alive by a small view of it.
    this.tail = Buffer.from(joined.subarray(Math.max(0, joined.length - this.tailBytes)));
  }

  /** Bytes seen in all. */
  get size(): number {
    return this.total;
  }

  toString(): string {
    const dropped = this.total - this.head.length - this.tail.length;
    if (dropped <= 0) return Buffer.concat([this.head, this.tail]).toString("utf8");
    return `${this.head.toString("utf8")}\n[… ${dropped} bytes cut …]\n${this.tail.toString("utf8")}`;
  }
}
