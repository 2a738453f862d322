import type { HoconError, MissingInclude } from "./hocon.js";

/** Something wrong with one manifest or network file: reported and logged, never fatal to the other networks. */
export interface RegistryProblem {
  file: string;
  /** Key path inside the file, e.g. `tools[2].name`. */
  key?: string;
  line?: number;
  reason: string;
  /** A warning leaves the network served (a tool that will fail when called, a key that is ignored). */
  severity?: "warning";
}

export class RegistryProblemsError extends Error {
  override readonly name = "RegistryProblemsError";
  constructor(readonly problems: RegistryProblem[]) {
    super(problems.map(describeProblem).join("; "));
  }
}

export function describeProblem(problem: RegistryProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}`;
  return problem.key === undefined ? `${where}: ${problem.reason}` : `${where}: ${problem.key}: ${problem.reason}`;
}

export function problemOfHoconError(error: HoconError): RegistryProblem {
  return { file: error.file, ...(error.line === undefined ? {} : { line: error.line }), reason: error.reason };
}

/** HOCON skips a missing include; what it should have defined usually fails later, so say where it was looked for. */
export function problemsOfMissingIncludes(missing: readonly MissingInclude[]): RegistryProblem[] {
  return missing.map(({ include, from, tried }) => ({
    file: from,
    reason: `include ${JSON.stringify(include)} was not found; looked for ${tried.join(", ")}`,
    severity: "warning",
  }));
}
