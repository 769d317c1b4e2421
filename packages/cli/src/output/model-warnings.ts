import type { ModelWarning } from "@taskledger/llm";
import type { Colors } from "picocolors/types.js";

/**
 * Prints what the manager's provider SDK warns about as one `warning:` line on stderr, once per
 * message, through `aside` so a live progress view is not torn by it.
 */
export function createModelWarningPrinter(
  stderr: { write(text: string): unknown },
  c: Colors,
  aside: (write: () => void) => void,
): (warning: ModelWarning) => void {
  const printed = new Set<string>();
  return (warning) => {
    const line = warning.deprecated
      ? `${c.yellow("warning:")} model ${warning.modelId} is deprecated: ${warning.message}`
      : `${c.yellow("warning:")} model ${warning.modelId}: ${warning.message}`;
    if (printed.has(line)) return;
    printed.add(line);
    aside(() => stderr.write(`${line}\n`));
  };
}
