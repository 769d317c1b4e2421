import { InvalidConfigError } from "../errors/errors.js";

/** What a value is, for a message that says what was given: `string "3"`, `number 3`, `an object`. */
export function describeGiven(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === "string") return `string ${JSON.stringify(value.slice(0, 60))}`;
  if (typeof value === "function") return "a function";
  if (typeof value === "object") return "an object";
  return `${typeof value} ${String(value)}`;
}

/**
 * Refuses keys of `given` that `known` does not list, by name (and the nearest known key when one
 * is a typo away), as `taskledger.json` does: a misspelt option is never silently ignored.
 */
export function refuseUnknownKeys(
  given: object,
  known: Readonly<Record<string, unknown>>,
  where: string,
): void {
  const names = Object.keys(known);
  const unknown = Object.keys(given).filter((key) => !Object.hasOwn(known, key));
  if (unknown.length === 0) return;
  const described = unknown.map((key) => {
    const near = nearest(key, names);
    return near ? `"${key}" (did you mean "${near}"?)` : `"${key}"`;
  });
  throw new InvalidConfigError(
    `${where}: unknown option${unknown.length > 1 ? "s" : ""} ${described.join(", ")}; known: ${names.join(", ")}.`,
  );
}

/** An object, or a typed error naming `field` and saying what was given instead. */
export function checkObject(field: string, value: unknown): asserts value is object {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new InvalidConfigError(`\`${field}\` must be an object; got ${describeGiven(value)}.`);
  }
}

/**
 * A part the host plugs in (a model, an evaluator, a store): an object with these methods, checked
 * when the manager is made so a wrong one fails before any run starts, naming the field.
 */
export function checkPart(field: string, value: unknown, methods: readonly string[]): void {
  if (value === undefined) return;
  checkObject(field, value);
  for (const method of methods) {
    const member = (value as Record<string, unknown>)[method];
    if (typeof member !== "function") {
      throw new InvalidConfigError(
        `\`${field}.${method}\` must be a function; got ${describeGiven(member)}.`,
      );
    }
  }
}

/** A function option (`reviewPlan`, `createRunId`), when given. */
export function checkFunction(field: string, value: unknown): void {
  if (value !== undefined && typeof value !== "function") {
    throw new InvalidConfigError(`\`${field}\` must be a function; got ${describeGiven(value)}.`);
  }
}

/** The known name a few edits from `key` (a typo) or beginning with it (cut short), if one is. */
function nearest(key: string, names: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of names) {
    const [a, b] = [key.toLowerCase(), name.toLowerCase()];
    const distance = a.length >= 4 && b.startsWith(a) ? 1 : editDistance(a, b);
    const close = distance <= (a.length >= 8 ? 3 : 2);
    if (close && (!best || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitute = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitute));
    }
    previous = current;
  }
  return previous[b.length]!;
}
