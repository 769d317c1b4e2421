import { describe, expect, it } from "vitest";
import { withReadOnly } from "./read-only-home.js";

describe("withReadOnly", () => {
  it("remounts the directory read-only as bubblewrap's last option, before its command", () => {
    const command =
      "bwrap --ro-bind / / --tmpfs /home/me --dev /dev -- /usr/bin/bash -c 'echo -- x'";
    expect(withReadOnly(command, "/home/me")).toBe(
      "bwrap --ro-bind / / --tmpfs /home/me --dev /dev --remount-ro '/home/me' -- /usr/bin/bash -c 'echo -- x'",
    );
  });

  it("reads quoted words whole: a value of -- is no end of options, a quote in the path is kept", () => {
    const command = `bwrap --setenv A -- --setenv B 'x -- y' --unsetenv -- --bind "/a b" "/a b" -- sh -c true`;
    const at = command.lastIndexOf("-- sh");
    expect(withReadOnly(command, "/home/o'k")).toBe(
      `${command.slice(0, at)}--remount-ro '/home/o'\\''k' ${command.slice(at)}`,
    );
  });

  it("finds the end of options when the mounts come through a file", () => {
    const command = `/bin/sh -c 'exec 3<"$1" && shift && exec "$@"' srt-args /proc/self/fd/9 bwrap --new-session --args 3 --unshare-pid -- /usr/bin/bash -c true`;
    expect(withReadOnly(command, "/h")).toContain(
      "--unshare-pid --remount-ro '/h' -- /usr/bin/bash",
    );
  });

  it("leaves a command without an end of options alone", () => {
    expect(withReadOnly("bwrap --setenv X --", "/h")).toBeUndefined();
  });
});
