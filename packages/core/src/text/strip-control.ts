// Whole escape sequences, leftmost first, so a sequence's parameters go with its ESC:
// - OSC, DCS, SOS, PM and APC strings (7- and 8-bit introducers), up to BEL or ST, or to the end;
// - CSI (ESC [ or 0x9b), its parameters and its final byte (absent when the text was cut short);
// - any other ESC with its intermediates and final byte (ESC c resets the terminal).
const escapeSequence =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
  /(?:\u001b[\]PX^_]|[\u0090\u0098\u009d\u009e\u009f])[\s\S]*?(?:\u0007|\u001b\\|\u009c|$)|(?:\u001b\[|\u009b)[\u0030-\u003f]*[\u0020-\u002f]*[\u0040-\u007e]?|\u001b[\u0020-\u002f]*[\u0030-\u007e]?/g;
// C0 but tab and newline, DEL and C1.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const controlCharacter = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

// Invisible format characters (Unicode Cf): bidirectional overrides and isolates (U+202A–U+202E,
// U+2066–U+2069) reorder what a reader sees ("Trojan Source"), zero-width ones hide text. The
// zero-width joiner stays: emoji sequences need it and it reorders nothing.
const formatCharacter = /(?!\u200d)\p{Cf}/gu;

/**
 * Text written by a model, an agent or a tool without terminal escape sequences and control
 * characters (tabs and newlines kept, CRLF made a newline) and without invisible format characters
 * such as bidirectional overrides: safe to print or to keep as a line.
 */
export function stripControl(text: string): string {
  return text
    .replace(escapeSequence, "")
    .replace(/\r\n/g, "\n")
    .replace(controlCharacter, "")
    .replace(formatCharacter, "");
}
