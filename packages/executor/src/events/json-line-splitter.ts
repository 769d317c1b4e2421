/** One line of output; an oversize line keeps only its first bytes, with its full size. */
export interface SplitLine {
  text: string;
  bytes: number;
  oversize: boolean;
}

/**
 * Splits a byte stream into lines while holding at most `maxLineBytes` of any one line, so a line
 * of many megabytes costs no more memory than a short one.
 */
export class JsonLineSplitter {
  private pieces: Buffer[] = [];
  private kept = 0;
  private total = 0;

  constructor(private readonly maxLineBytes: number) {}

  /** Feeds a chunk and returns the lines it completed. */
  push(chunk: Buffer | string): SplitLine[] {
    const buffer = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    const lines: SplitLine[] = [];
    let start = 0;
    for (;;) {
      const newline = buffer.indexOf(10, start);
      if (newline === -1) break;
      this.append(buffer.subarray(start, newline));
      const line = this.take();
      if (line) lines.push(line);
      start = newline + 1;
    }
    if (start < buffer.length) this.append(buffer.subarray(start));
    return lines;
  }

  /** Returns the last line when the stream ended without a newline. */
  end(): SplitLine | undefined {
    return this.take();
  }

  private append(part: Buffer): void {
    this.total += part.length;
    const room = this.maxLineBytes - this.kept;
    if (room <= 0 || part.length === 0) return;
    // Copy: the chunk's memory must not be pinned by a small view of it.
    const slice = Buffer.from(part.subarray(0, room));
    this.pieces.push(slice);
    this.kept += slice.length;
  }

  private take(): SplitLine | undefined {
    const bytes = this.total;
    const oversize = bytes > this.kept;
    const text = Buffer.concat(this.pieces, this.kept).toString("utf8").replace(/\r$/, "");
    this.pieces = [];
    this.kept = 0;
    this.total = 0;
    if (bytes === 0 || text.trim() === "") return undefined;
    return { text, bytes, oversize };
  }
}
