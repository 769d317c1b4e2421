import { clipMiddle } from "@taskledger/core";

/** How much of each text the page is sent, so a huge log never makes a huge page. */
export const textLimits = {
  text: 8000,
  short: 200,
  tool: 2000,
  diff: 100_000,
  items: 100,
  request: 4000,
} as const;

export function clip(text: string | undefined, max: number = textLimits.text): string {
  return clipMiddle(String(text ?? ""), max);
}
