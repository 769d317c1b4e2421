// Environment variables whose values are credentials.
const secretName = /(api[-_]?key|token|secret|password|passwd|authorization|credential|cookie)/i;

/** The values of the environment's credential variables, long enough to be worth hiding. */
export function secretsOf(env: Readonly<Record<string, string | undefined>>): string[] {
  return Object.entries(env)
    .filter(([name, value]) => secretName.test(name) && value !== undefined && value.length >= 8)
    .map(([, value]) => value as string);
}

/** `value` with every secret in its strings replaced: no key reaches a result. */
export function redact<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  if (typeof value === "string") {
    let text: string = value;
    for (const secret of secrets) text = text.split(secret).join("[redacted]");
    return text as T;
  }
  if (Array.isArray(value)) return value.map((v) => redact(v, secrets)) as T;
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [key, redact(inner, secrets)]),
    ) as T;
  return value;
}
