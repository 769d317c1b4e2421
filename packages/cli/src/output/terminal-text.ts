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
