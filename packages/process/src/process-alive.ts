import { readFileSync } from "node:fs";

/**
 * True while process `pid` runs (as any user); this process counts as running. A zombie (killed,
 * not yet reaped by its parent) holds nothing any more and counts as gone.
 */
export function isProcessAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it runs, as another user.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  if (process.platform !== "linux") return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const end = stat.lastIndexOf(")");
    return stat.slice(end + 2, end + 3) === "Z";
  } catch (error) {
    // Gone between the two looks.
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}
