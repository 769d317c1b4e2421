/** Keeps the last `maxChars` characters written to it, and how many were dropped. */
export class BoundedTail {
  private text = "";
  dropped = 0;

  constructor(private readonly maxChars: number) {}

  write(chunk: Buffer | string): void {
    this.text += typeof chunk === "string" ? chunk : chunk.toString("utf8");
    // Trim only once the text is twice the limit, so writes stay amortised O(1).
    if (this.text.length > this.maxChars * 2) this.trim();
  }

  toString(): string {
    this.trim();
    return this.dropped > 0 ? `[… ${this.dropped} characters dropped]\n${this.text}` : this.text;
  }

  private trim(): void {
    const excess = this.text.length - this.maxChars;
    if (excess <= 0) return;
    this.text = this.text.slice(excess);
    this.dropped += excess;
  }
}
