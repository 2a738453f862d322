import { performance } from "node:perf_hooks";
import type { JsonValue } from "../agents/hocon.js";
import type { LlmClient } from "../llm/llm.js";
import { checkAssertion, selectActual, type FinalAnswer } from "./assertions.js";
import { judgeGist } from "./gist-judge.js";
import { streamingChat } from "./http-chat-client.js";
import {
  addCounts,
  countAssertions,
  type AssertionResult,
  type CaseReport,
  type InteractionReport,
  type NetworkTestReport,
  type RunReport,
} from "./report.js";
import { loadTestCase, TestCaseError, type Assertion, type Interaction, type NetworkTestCase } from "./test-case.js";

export interface NetworkTestOptions {
  /** The server to test, e.g. http://localhost:8080 (Axon or neuro-san). */
  url: string;
  /** Judges `gist` tests; without it they are reported as skipped. */
  judge?: LlmClient;
  /** For interactions whose file gives no timeout_in_seconds. */
  timeoutSeconds?: number;
  onProgress?: (event: ProgressEvent) => void;
  /** Where case files may `include` from besides their own folder. */
  projectRoot?: string;
}

export type ProgressEvent =
  | { kind: "run-finished"; file: string; agent: string; run: RunReport; runs: number }
  | { kind: "case-finished"; report: CaseReport };

/** Every invalid case file, found before anything is sent: a typo should not cost a round of LLM calls. */
export class InvalidTestFilesError extends Error {
  override readonly name = "InvalidTestFilesError";
  constructor(readonly errors: TestCaseError[]) {
    super(errors.map((error) => error.message).join("\n"));
  }
}

/** Longer than a network's default max_execution_seconds (120), so the server's own limit reports first. */
export const DEFAULT_INTERACTION_TIMEOUT_SECONDS = 180;

export async function runNetworkTests(files: string[], options: NetworkTestOptions): Promise<NetworkTestReport> {
  const started = performance.now();
  const cases = await loadTestCases(files, options.projectRoot);
  const reports: CaseReport[] = [];
  for (const testCase of cases) {
    const report = await runTestCase(testCase, options);
    options.onProgress?.({ kind: "case-finished", report });
    reports.push(report);
  }
  return {
    passed: reports.every((report) => report.passed),
    cases: reports,
    totals: {
      cases: reports.length,
      passedCases: reports.filter((report) => report.passed).length,
      runs: reports.reduce((sum, report) => sum + report.runs.length, 0),
      passedRuns: reports.reduce((sum, report) => sum + report.passedRuns, 0),
      assertions: reports.reduce((sum, report) => addCounts(sum, report.assertions), { passed: 0, failed: 0, skipped: 0 }),
    },
    durationMs: performance.now() - started,
  };
}

export async function loadTestCases(files: string[], projectRoot = process.cwd()): Promise<NetworkTestCase[]> {
  const cases: NetworkTestCase[] = [];
  const errors: TestCaseError[] = [];
  for (const file of files) {
    try {
      cases.push(await loadTestCase(file, { projectRoot }));
    } catch (error) {
      if (!(error instanceof TestCaseError)) throw error;
      errors.push(error);
    }
  }
  if (errors.length > 0) throw new InvalidTestFilesError(errors);
  return cases;
}

/** Runs the case success_ratio's n times; it passes when at least k runs pass. */
export async function runTestCase(testCase: NetworkTestCase, options: NetworkTestOptions): Promise<CaseReport> {
  const started = performance.now();
  const deadline = timeoutSignal(testCase.timeoutSeconds, "the test case");
  const runs: RunReport[] = [];
  try {
    for (let run = 1; run <= testCase.successRatio.runs; run++) {
      const report = await runConversation(testCase, run, deadline.signal, options);
      options.onProgress?.({ kind: "run-finished", file: testCase.file, agent: testCase.agent, run: report, runs: testCase.successRatio.runs });
      runs.push(report);
    }
  } finally {
    deadline.clear();
  }
  const passedRuns = runs.filter((run) => run.passed).length;
  const { required, runs: runCount } = testCase.successRatio;
  return {
    file: testCase.file,
    agent: testCase.agent,
    passed: passedRuns >= required,
    successRatio: `${required}/${runCount}`,
    requiredRuns: required,
    passedRuns,
    runs,
    assertions: runs
      .flatMap((run) => run.interactions)
      .reduce((sum, interaction) => addCounts(sum, countAssertions(interaction.assertions)), { passed: 0, failed: 0, skipped: 0 }),
    durationMs: performance.now() - started,
  };
}

/** One run: the interactions in order as one conversation; an error ends it, since nothing after can continue it. */
async function runConversation(
  testCase: NetworkTestCase,
  run: number,
  deadline: AbortSignal,
  options: NetworkTestOptions,
): Promise<RunReport> {
  const started = performance.now();
  const interactions: InteractionReport[] = [];
  let chatContext: JsonValue | undefined;
  let failedWithError: number | undefined;
  for (const [index, interaction] of testCase.interactions.entries()) {
    if (failedWithError !== undefined) {
      interactions.push({
        index,
        text: interaction.text,
        passed: false,
        notRun: `interaction #${failedWithError + 1} failed with an error`,
        assertions: [],
        durationMs: 0,
      });
      continue;
    }
    const { report, nextChatContext } = await runInteraction(testCase, interaction, index, chatContext, deadline, options);
    interactions.push(report);
    chatContext = interaction.continueConversation ? nextChatContext : undefined;
    if (report.error !== undefined) failedWithError = index;
  }
  return {
    run,
    passed: interactions.every((interaction) => interaction.passed),
    interactions,
    durationMs: performance.now() - started,
  };
}

async function runInteraction(
  testCase: NetworkTestCase,
  interaction: Interaction,
  index: number,
  chatContext: JsonValue | undefined,
  deadline: AbortSignal,
  options: NetworkTestOptions,
): Promise<{ report: InteractionReport; nextChatContext: JsonValue | undefined }> {
  const timeoutSeconds = interaction.timeoutSeconds ?? options.timeoutSeconds ?? DEFAULT_INTERACTION_TIMEOUT_SECONDS;
  const timeout = timeoutSignal(timeoutSeconds, "the interaction");
  const signal = AbortSignal.any([deadline, timeout.signal]);
  const base = { index, text: interaction.text };
  const started = performance.now();
  try {
    const answer = await streamingChat(options.url, {
      agent: testCase.agent,
      text: interaction.text,
      slyData: interaction.slyData,
      chatFilter: interaction.chatFilter,
      chatContext,
      headers: testCase.metadata,
      signal,
    });
    const durationMs = performance.now() - started;
    const assertions: AssertionResult[] = [];
    for (const assertion of interaction.assertions) {
      assertions.push(await evaluate(assertion, answer, deadline, options.judge));
    }
    const { chatContext: nextChatContext, ...finalAnswer } = answer;
    return {
      report: {
        ...base,
        passed: assertions.every((result) => result.status !== "failed"),
        answer: finalAnswer,
        assertions,
        durationMs,
      },
      nextChatContext,
    };
  } catch (error) {
    const message = signal.aborted ? describe(signal.reason) : describe(error);
    return {
      report: { ...base, passed: false, error: message, assertions: [], durationMs: performance.now() - started },
      nextChatContext: undefined,
    };
  } finally {
    timeout.clear();
  }
}

async function evaluate(
  assertion: Assertion,
  answer: FinalAnswer,
  signal: AbortSignal,
  judge: LlmClient | undefined,
): Promise<AssertionResult> {
  const actual = selectActual(answer, assertion);
  const result: Omit<AssertionResult, "status"> = {
    target: assertion.target,
    test: assertion.test,
    expected: assertion.expected,
    ...(actual === undefined ? {} : { actual }),
  };

  if (assertion.test !== "gist" && assertion.test !== "not_gist") {
    const check = checkAssertion(assertion.test, assertion.expected, actual);
    return check.passed ? { ...result, status: "passed" } : { ...result, status: "failed", reason: check.reason };
  }
  if (judge === undefined) {
    return { ...result, status: "skipped", reason: "no LLM is configured to judge gist tests" };
  }
  if (actual === undefined) return { ...result, status: "failed", reason: "missing from the answer" };
  try {
    const answerText = typeof actual === "string" ? actual : JSON.stringify(actual);
    const verdict = await judgeGist(judge, answerText, String(assertion.expected), signal);
    const passed = verdict.conveys === (assertion.test === "gist");
    return { ...result, status: passed ? "passed" : "failed", reason: verdict.explanation };
  } catch (error) {
    return { ...result, status: "failed", reason: `the gist judge failed: ${describe(signal.aborted ? signal.reason : error)}` };
  }
}

/** A signal that aborts after `seconds` with a reason saying what took too long; never aborts without seconds. */
function timeoutSignal(seconds: number | undefined, what: string): { signal: AbortSignal; clear: () => void } {
  const controller = new AbortController();
  if (seconds === undefined) return { signal: controller.signal, clear: () => {} };
  const timer = setTimeout(() => controller.abort(new Error(`${what} took longer than ${seconds}s`)), seconds * 1000);
  return { signal: controller.signal, clear: () => clearTimeout(timer) };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
