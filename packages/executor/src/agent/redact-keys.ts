// Shapes of provider keys and tokens (as @taskledger/llm masks them), masked in what an agent
// quotes from its provider: a gateway may echo a key back, and the text is logged and shown.
const keyShapes = [
  /\bsk-ant-[A-Za-z0-9_-]{8,}/g,
  /\bsk-[A-Za-z0-9_-]{8,}/g,
  /\bxai-[A-Za-z0-9_-]{8,}/g,
  /\bAIza[A-Za-z0-9_-]{20,}/g,
  /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi,
  /([?&](?:key|api[_-]?key|access[_-]?token|token)=)[^&\s"']+/gi,
];

/** `text` with anything shaped like a provider key or token replaced by `[redacted]`. */
export function redactKeys(text: string): string {
  let out = text;
  for (const shape of keyShapes) {
    out = out.replace(shape, (match, prefix: unknown) =>
      typeof prefix === "string" && /^[?&]/.test(prefix)
        ? `${prefix}[redacted]`
        : /^(Bearer|Basic)/i.test(match)
          ? `${match.split(/\s+/)[0]} [redacted]`
          : "[redacted]",
    );
  }
  return out;
}
