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

/**
 * Text a model or an agent wrote, made safe to print: without escape sequences and control
 * characters, which could clear the screen, retitle the window or draw a fake prompt. Our own
 * colours are added after. Tabs and newlines stay only with `multiline` (else each is a space),
 * since a line break in a one-line field could start a line that looks like ours.
 */
export function terminalText(text: string, options: { multiline?: boolean } = {}): string {
  const clean = text
    .replace(escapeSequence, "")
    .replace(/\r\n/g, "\n")
    .replace(controlCharacter, "");
  return options.multiline ? clean : clean.replace(/[\t\n]/g, " ");
}
