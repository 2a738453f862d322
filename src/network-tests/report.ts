import path from "node:path";
import type { JsonValue } from "../agents/hocon.js";
import { show, type FinalAnswer } from "./assertions.js";
import type { TestName } from "./test-case.js";

/** What a run of case files found. Plain JSON: `--json` prints it as is. */
export interface NetworkTestReport {
  passed: boolean;
  cases: CaseReport[];
  totals: {
    cases: number;
    passedCases: number;
    runs: number;
    passedRuns: number;
    assertions: AssertionCounts;
  };
  durationMs: number;
}

export interface AssertionCounts {
  passed: number;
  failed: number;
  /** Gist tests without a judge: neither passed nor failed. */
  skipped: number;
}

export interface CaseReport {
  file: string;
  agent: string;
  passed: boolean;
  /** As written: "k/n". */
  successRatio: string;
  requiredRuns: number;
  passedRuns: number;
  runs: RunReport[];
  assertions: AssertionCounts;
  durationMs: number;
}

export interface RunReport {
  run: number;
  passed: boolean;
  interactions: InteractionReport[];
  durationMs: number;
}

export interface InteractionReport {
  index: number;
  text: string;
  passed: boolean;
  /** The chat failed (server error, timeout, unreachable): its assertions were not evaluated. */
  error?: string;
  /** Not sent, because an earlier interaction of this run failed with an error. */
  notRun?: string;
  answer?: FinalAnswer;
  assertions: AssertionResult[];
  /** The chat round trip. */
  durationMs: number;
}

export interface AssertionResult {
  target: string;
  test: TestName;
  expected: JsonValue;
  actual?: JsonValue;
  status: "passed" | "failed" | "skipped";
  reason?: string;
}

export function countAssertions(results: AssertionResult[]): AssertionCounts {
  return {
    passed: results.filter((result) => result.status === "passed").length,
    failed: results.filter((result) => result.status === "failed").length,
    skipped: results.filter((result) => result.status === "skipped").length,
  };
}

export function addCounts(a: AssertionCounts, b: AssertionCounts): AssertionCounts {
  return { passed: a.passed + b.passed, failed: a.failed + b.failed, skipped: a.skipped + b.skipped };
}

/** The human-readable report: a line per case, run and interaction; details for what did not pass. */
export function renderReport(report: NetworkTestReport, cwd = process.cwd()): string {
  const lines: string[] = [];
  for (const testCase of report.cases) {
    lines.push(
      `${verdict(testCase.passed)} ${path.relative(cwd, testCase.file) || testCase.file} (agent ${testCase.agent}): ` +
        `${testCase.passedRuns}/${testCase.runs.length} runs passed, ${testCase.requiredRuns} needed ` +
        `[success_ratio ${testCase.successRatio}] ${seconds(testCase.durationMs)}${skippedNote(testCase.assertions)}`,
    );
    for (const run of testCase.runs) {
      lines.push(`  run ${run.run}: ${verdict(run.passed)} ${seconds(run.durationMs)}`);
      for (const interaction of run.interactions) renderInteraction(interaction, lines);
    }
  }
  const { totals } = report;
  lines.push(
    "",
    `${verdict(report.passed)} ${totals.passedCases}/${totals.cases} cases passed; ` +
      `runs ${totals.passedRuns}/${totals.runs}; assertions ${totals.assertions.passed} passed, ` +
      `${totals.assertions.failed} failed, ${totals.assertions.skipped} skipped; ${seconds(report.durationMs)}`,
  );
  return lines.join("\n");
}

function renderInteraction(interaction: InteractionReport, lines: string[]): void {
  const label = `    #${interaction.index + 1} ${show(interaction.text, 60)}`;
  if (interaction.notRun !== undefined) {
    lines.push(`${label}: not run (${interaction.notRun})`);
    return;
  }
  lines.push(`${label}: ${verdict(interaction.passed)} ${seconds(interaction.durationMs)}`);
  if (interaction.error !== undefined) lines.push(`      error: ${interaction.error}`);
  for (const result of interaction.assertions) {
    const mark = result.status === "passed" ? "ok  " : result.status === "failed" ? "FAIL" : "skip";
    const detail = result.status === "passed" ? "" : `: ${result.reason ?? ""}`;
    lines.push(`      ${mark} ${result.target} ${result.test} ${show(result.expected, 80)}${detail}`);
    if (result.status === "failed") lines.push(`           actual: ${show(result.actual, 300)}`);
  }
}

function verdict(passed: boolean): string {
  return passed ? "PASS" : "FAIL";
}

function skippedNote(counts: AssertionCounts): string {
  return counts.skipped === 0 ? "" : ` (${counts.skipped} assertion${counts.skipped === 1 ? "" : "s"} skipped)`;
}

function seconds(milliseconds: number): string {
  return `${(milliseconds / 1000).toFixed(2)}s`;
}
