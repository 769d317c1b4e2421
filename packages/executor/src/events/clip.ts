import { truncateToTokens } from "@taskledger/core";

/** Cuts text to about `maxChars` characters with core's truncation (which says what it cut). */
export function clip(text: string, maxChars: number): string {
  return truncateToTokens(text, Math.floor(maxChars / 4));
}

/** Text as it should be kept: strings as they are, anything else as JSON. */
export function stringify(value: unknown): string {
  if (value === undefined || value === null) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
