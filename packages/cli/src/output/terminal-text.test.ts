import { describe, expect, it } from "vitest";
import { terminalText } from "./terminal-text.js";

describe("terminalText", () => {
  it.each([
    ["plain text", "Write greet.js", "Write greet.js"],
    ["a window title (OSC ended by BEL)", "a\u001b]0;pwned\u0007b", "ab"],
    ["a hyperlink (OSC ended by ST)", "\u001b]8;;http://x\u001b\\link\u001b]8;;\u001b\\", "link"],
    ["an OSC cut short", "a\u001b]0;pwn", "a"],
    ["clear screen and home", "a\u001b[2J\u001b[Hb", "ab"],
    ["cursor up and erase line", "a\u001b[1A\u001b[2Kb", "ab"],
    ["private modes", "\u001b[?25l\u001b[?1049hx", "x"],
    ["colours", "\u001b[31mred\u001b[0m", "red"],
    ["a CSI cut short", "a\u001b[12", "a"],
    ["reset (ESC c) and charset (ESC ( B)", "a\u001bcb\u001b(Bc", "abc"],
    ["a lone ESC", "a\u001b", "a"],
    ["8-bit CSI", "a\u009b2Jb", "ab"],
    ["8-bit DCS to ST", "a\u0090payload\u009cb", "ab"],
    ["bell, backspace, carriage return, DEL", "a\u0007\b\rb\u007fc", "abc"],
    ["other C1", "a\u0085\u008db", "ab"],
    ["tabs and newlines on one line", "a\tb\nc\r\nd", "a b c d"],
    ["text in other scripts", "naïve 日本 ✔", "naïve 日本 ✔"],
    ["bidi embeddings and overrides", "a\u202a\u202b\u202c\u202d\u202eevil\u202cb", "aevilb"],
    ["bidi isolates and marks", "a\u2066\u2067\u2068\u2069\u200e\u200f\u061cb", "ab"],
    ["zero-width and other invisible format characters", "a\u200b\u2060\ufeff\u00adb", "ab"],
    ["an emoji joined by ZWJ", "👩\u200d💻", "👩\u200d💻"],
  ])("%s", (_, input, expected) => {
    expect(terminalText(input)).toBe(expected);
  });

  it("keeps tabs and newlines where text has lines, and a CRLF is one newline", () => {
    expect(terminalText("a\tb\r\nc\u001b[2J\nd\r", { multiline: true })).toBe("a\tb\nc\nd");
  });
});
