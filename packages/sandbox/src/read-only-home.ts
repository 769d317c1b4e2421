/**
 * The runtime hides a denied directory under a tmpfs, which takes writes that never reach the host
 * and refuses none: a write to the hidden home would seem to succeed and be on no record. So the
 * home's tmpfs is remounted read-only once bubblewrap has bound back everything beneath it (the
 * last of its options, just before the `--` that ends them): a write there fails (`Read-only file
 * system`) and is recorded as before; the paths bound back beneath it keep their own modes.
 *
 * `command` is the runtime's bubblewrap command line (shell-quoted, as `sh -c` runs it). Undefined
 * when its end of options is not found: the home then stays a tmpfs whose writes go nowhere.
 */
export function withReadOnly(command: string, dir: string): string | undefined {
  const end = endOfOptions(command);
  if (end === undefined) return undefined;
  return `${command.slice(0, end)}--remount-ro ${shellQuote(dir)} ${command.slice(end)}`;
}

/** How many words follow each of bubblewrap's options whose value may be any text. */
const freeValues: Record<string, number> = { "--setenv": 2, "--unsetenv": 1 };

/** Where the `--` that ends bubblewrap's options starts in `command`. */
function endOfOptions(command: string): number | undefined {
  let skip = 0;
  for (const word of wordsOf(command)) {
    if (skip > 0) {
      skip--;
      continue;
    }
    if (word.text === "--") return word.start;
    skip = freeValues[word.text] ?? 0;
  }
  return undefined;
}

/** The words of a command line as `shell-quote` renders them, each with where it starts. */
function* wordsOf(command: string): Generator<{ text: string; start: number }> {
  let text = "";
  let start = -1;
  let quote: "'" | '"' | undefined;
  for (let at = 0; at < command.length; at++) {
    const char = command[at] as string;
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else text += char;
    } else if (quote === '"') {
      if (char === "\\") text += command[++at] ?? "";
      else if (char === '"') quote = undefined;
      else text += char;
    } else if (char === " " || char === "\n" || char === "\t") {
      if (start >= 0) yield { text, start };
      text = "";
      start = -1;
    } else {
      if (start < 0) start = at;
      if (char === "'" || char === '"') quote = char;
      else if (char === "\\") text += command[++at] ?? "";
      else text += char;
    }
  }
  if (start >= 0) yield { text, start };
}

function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}
