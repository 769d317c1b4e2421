/** A command of the project's own, found in its manifests: what it runs to test, typecheck or lint. */
export interface ProjectCommand {
  kind: "test" | "typecheck" | "lint";
  /** Run without a shell in the run's directory, as a check is. */
  argv: string[];
  /** Where it was found (`package.json` script `test`, say). */
  source: string;
}

/** What the planner is told of the project before it plans: made without a model, bounded. */
export interface ProjectDigest {
  /**
   * The text the planner and the replanner get, within its budget: the files, languages, the
   * manifests with their scripts and the dependencies they name, the notes for agents, the README.
   */
  text: string;
  /** The project's test, typecheck and lint commands found in its manifests. */
  commands: ProjectCommand[];
  /** The files the digest looked at (those git tracks, in a repository). */
  files: number;
  /** The tree state it describes: the same key, the same digest. */
  key: string;
}

/** Makes the digest of a run's directory (`@taskledger/git-workspace`'s `projectDigests`). */
export interface ProjectSource {
  digest(cwd: string, options: { abortSignal: AbortSignal }): Promise<ProjectDigest>;
}

/** Tokens a digest may take in a planning prompt (about 8,000 characters). */
export const projectDigestTokens = 2000;
