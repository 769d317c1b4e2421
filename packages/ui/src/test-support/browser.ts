// Helpers the page's tests share (the CLI's tests import them too). Not part of the package.
import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

/** Debian's chromium; the tests drive it with playwright-core and download no browser. */
export const chromiumPath = process.env.TASKLEDGER_CHROMIUM ?? "/usr/bin/chromium";

/** Under CI the browser tests always run, so a missing chromium fails them instead of hiding them. */
export const browserTests = existsSync(chromiumPath) || process.env.CI !== undefined;

if (!browserTests)
  console.warn(
    `browser tests skipped: no chromium at ${chromiumPath} (install it with: sudo apt-get install -y chromium)`,
  );

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, args: ["--no-sandbox"], headless: true });
}
