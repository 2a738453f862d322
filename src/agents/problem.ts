import type { HoconError } from "./hocon.js";

/** Something wrong with one manifest or network file: reported and logged, never fatal to the other networks. */
export interface RegistryProblem {
  file: string;
  /** Key path inside the file, e.g. `tools[2].name`. */
  key?: string;
  line?: number;
  reason: string;
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
