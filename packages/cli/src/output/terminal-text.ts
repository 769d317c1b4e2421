import { stripControl } from "@taskledger/core";

/**
 * Text a model or an agent wrote, made safe to print: without escape sequences and control
 * characters, which could clear the screen, retitle the window or draw a fake prompt. Our own
 * colours are added after. Tabs and newlines stay only with `multiline` (else each is a space),
 * since a line break in a one-line field could start a line that looks like ours.
 */
export function terminalText(text: string, options: { multiline?: boolean } = {}): string {
  const clean = stripControl(text);
  return options.multiline ? clean : clean.replace(/[\t\n]/g, " ");
}

/** A duration as the terminal shows it: `850ms`, `12.0s`, `3m05s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(1)}s`;
  return `${Math.floor(seconds / 60)}m${Math.round(seconds % 60)
    .toString()
    .padStart(2, "0")}s`;
}
