import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { processesWithEnv, signalTracked, type TrackedProcess } from "@taskledger/process";

/**
 * The environment entry that marks a confined launch's own processes: bubblewrap's outer process
 * and its pid 1 (in a session of its own), the runtime's proxy relays, the loopback forwarders and
 * the bridge inside. Its value is the launch's own directory, unique to the launch.
 */
export const launchMarkerName = "TASKLEDGER_SANDBOX_LAUNCH";

/** The file in a launch's own directory where its script writes its PID namespace (`pid:[…]`). */
export const pidNamespaceFile = "pidns";

/** How long a launch's processes have to end on their own once it ended, before they are killed. */
export const launchEndMs = 5000;

/**
 * Resolves once no process of the launch runs: none carries `marker`, and none is left in its PID
 * namespace (read from `nsFile`; its pid 1, still ending, no longer shows its environment). They
 * end on their own a moment after bubblewrap's outer process, which exits before its pid 1 has
 * ended the namespace. What still runs after `waitMs` is killed, and `onLeftover` told so.
 */
export async function endLaunch(
  marker: string,
  nsFile: string,
  onLeftover: (line: string) => void,
  waitMs = launchEndMs,
): Promise<void> {
  const namespace = readNamespace(nsFile);
  const look = () => launchProcesses(marker, namespace);
  let left = await gone(look, Date.now() + waitMs);
  if (left.length === 0) return;
  const pids = left.map((process) => process.pid).join(", ");
  // A relay may fork while it is killed: each look kills what is there then.
  left = await gone(look, Date.now() + 1000, (process) => signalTracked(process, "SIGKILL"));
  onLeftover(
    `taskledger: processes of a confined launch still ran ${waitMs / 1000} s after it ended (${pids}); killed them${left.length > 0 ? `, ${left.length} not gone yet` : ""}`,
  );
}

/** Looks every 10 ms until `look` finds none or `deadline` passes; what is left. */
async function gone(
  look: () => TrackedProcess[],
  deadline: number,
  each?: (process: TrackedProcess) => void,
): Promise<TrackedProcess[]> {
  for (;;) {
    const left = look();
    if (left.length === 0 || Date.now() >= deadline) return left;
    if (each) for (const process of left) each(process);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function readNamespace(file: string): string | undefined {
  try {
    const text = readFileSync(file, "utf8").trim();
    if (!/^pid:\[\d+\]$/.test(text)) return undefined;
    // A launch that got no namespace of its own wrote the host's: every process would be its.
    return text === readlinkSync("/proc/self/ns/pid") ? undefined : text;
  } catch {
    return undefined;
  }
}

/** Live processes (Linux) carrying `marker` or in PID namespace `namespace`; zombies do not count. */
function launchProcesses(marker: string, namespace: string | undefined): TrackedProcess[] {
  const found = processesWithEnv(marker);
  if (namespace === undefined || process.platform !== "linux") return found;
  const seen = new Set(found.map((entry) => entry.pid));
  let names: string[] = [];
  try {
    names = readdirSync("/proc");
  } catch {
    return found;
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid || seen.has(pid)) continue;
    try {
      if (readlinkSync(`/proc/${pid}/ns/pid`) !== namespace) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z") continue;
      found.push({ pid, startTime: fields[19] ?? "" });
    } catch {
      // Gone, or another user's.
    }
  }
  return found;
}
