import { spawn } from "node:child_process";
import type { ProcessIdentity } from "./process-identity.js";

/**
 * The watchdog, in POSIX sh (a shell starts in a millisecond, Node in tens): it waits on a pipe
 * from the host; `release` on it means the host let go; end of input without it means the host
 * died (even by `kill -9`), so it SIGTERMs each process that is still the same one (pid and start
 * time, `pid:start` arguments), waits up to 2 s for them and SIGKILLs what is left.
 */
const watchdog = `trap '' INT HUP
read -r word
[ "$word" = release ] && exit 0
same() {
  want=$2
  if [ -r "/proc/$1/stat" ]; then
    read -r s < "/proc/$1/stat" || return 1
    s=\${s##*) }
    set -- $s
    [ "$1" != Z ] && [ "\${20}" = "$want" ]
  else
    [ "$(ps -o lstart= -p "$1" 2>/dev/null | sed 's/^ *//;s/ *$//')" = "$want" ]
  fi
}
signal() {
  sig=$1; shift
  for e in "$@"; do same "\${e%%:*}" "\${e#*:}" && kill -"$sig" "\${e%%:*}" 2>/dev/null; done
  return 0
}
any() {
  for e in "$@"; do same "\${e%%:*}" "\${e#*:}" && return 0; done
  return 1
}
signal TERM "$@"
i=0
while [ "$i" -lt 20 ] && any "$@"; do sleep 0.1; i=$((i + 1)); done
signal KILL "$@"`;

/** Lets go of processes bound to the host: they may then outlive it (or are already gone). */
export interface HostBinding {
  release(): void;
}

/**
 * Ties processes this host started, which would otherwise be re-parented and live on (a helper
 * such as a socket bridge), to the host's life: a detached watchdog kills them when the host ends
 * by any means, `kill -9` included. Call `release` once they are stopped. None on Windows.
 */
export function bindToHost(processes: readonly Required<ProcessIdentity>[]): HostBinding {
  if (processes.length === 0 || process.platform === "win32") return { release: () => {} };
  const targets = processes.map(({ pid, startTime }) => `${pid}:${startTime}`);
  const child = spawn("/bin/sh", ["-c", watchdog, "taskledger-host-watchdog", ...targets], {
    // Its own session: a signal to the host's terminal or process group must not reach it.
    detached: true,
    stdio: ["pipe", "ignore", "ignore"],
  });
  child.on("error", () => {
    // No shell: the host's own exit handlers are all that is left.
  });
  child.stdin?.on("error", () => {
    // The watchdog is gone already.
  });
  // The watchdog never keeps its host alive.
  child.unref();
  (child.stdin as { unref?: () => void } | null)?.unref?.();
  let released = false;
  return {
    release: () => {
      if (released) return;
      released = true;
      child.stdin?.end("release\n");
    },
  };
}
