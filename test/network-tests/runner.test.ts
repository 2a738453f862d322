import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { LlmClient, LlmRequest } from "../../src/llm/llm.js";
import { runNetworkTestsCommand } from "../../src/network-tests/cli.js";
import { renderReport } from "../../src/network-tests/report.js";
import { InvalidTestFilesError, runNetworkTests, type ProgressEvent } from "../../src/network-tests/runner.js";
import { startFakeAgentServer, type FakeAgentServer } from "./fake-agent-server.js";

let server: FakeAgentServer;
const folder = mkdtempSync(path.join(tmpdir(), "axon-network-test-runs-"));
let fileCount = 0;

beforeAll(async () => {
  server = await startFakeAgentServer();
});
afterAll(() => server.close());

function caseFile(text: string): string {
  const file = path.join(folder, `case-${++fileCount}.hocon`);
  writeFileSync(file, text);
  return file;
}

/** A judge that says the answer conveys the gist when the answer contains the gist's last word. */
const judge: LlmClient = {
  description: "fake judge",
  async complete(request: LlmRequest) {
    const prompt = request.messages[1]?.content ?? "";
    const [, gist = "", answer = ""] = /^Gist:\n([\s\S]*)\n\nAnswer:\n([\s\S]*)$/.exec(prompt) ?? [];
    const lastWord = gist.split(/\s+/).at(-1) ?? "";
    const text = answer.includes(lastWord) ? "YES\nIt says so." : "No.\nIt does not.";
    return { text, toolCalls: [], usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0, cost: 0 }, model: "fake" };
  },
};

describe("running a case against a server", () => {
  it("sends each interaction as a streaming_chat and tests the final AGENT_FRAMEWORK message", async () => {
    const file = caseFile(`
      agent: echo
      metadata { user_id: tester }
      interactions: [{
        text: "hello"
        sly_data { city: "Lisbon" }
        response {
          text { keywords: "HELLO", not_keywords: "error", value: "echo: hello (turn 1)" }
          sly_data.city { value: "Lisbon" }
          sly_data.nested.depth.turn { value: "1", less: 2, not_greater: 1 }
          structure.turn { greater: 0, not_less: 1 }
        }
      }]`);
    const report = await runNetworkTests([file], { url: server.url });

    expect(report.passed).toBe(true);
    expect(report.totals).toMatchObject({ cases: 1, passedCases: 1, runs: 1, passedRuns: 1, assertions: { passed: 9, failed: 0, skipped: 0 } });
    const interaction = report.cases[0]?.runs[0]?.interactions[0];
    expect(interaction?.answer?.text).toBe("echo: hello (turn 1)");
    expect(interaction?.durationMs).toBeGreaterThan(0);

    const request = server.requests.at(-1);
    expect(request?.agent).toBe("echo");
    expect(request?.headers["user_id"]).toBe("tester");
    expect(request?.headers["content-type"]).toBe("application/json");
    expect(request?.body).toEqual({
      user_message: { text: "hello" },
      sly_data: { city: "Lisbon" },
      chat_filter: { chat_filter_type: "MINIMAL" },
    });
  });

  it("carries chat_context from one answer to the next while continue_conversation is true", async () => {
    const file = caseFile(`
      agent: echo
      interactions: [
        {text: "one", response.text.keywords: "turn 1"}
        {text: "two", continue_conversation: false, response.text.keywords: "turn 2"}
        {text: "three", response.text.keywords: "turn 1"}
        {text: "four", response.structure.turn.value: 2}
      ]`);
    const before = server.requests.length;
    const report = await runNetworkTests([file], { url: server.url });

    expect(report.passed).toBe(true);
    const sent = server.requests.slice(before).map((request) => request.body.chat_context?.chat_histories?.[0]?.messages?.length);
    // "two" continues "one"; "two" says not to go on, so "three" starts afresh and "four" continues it.
    expect(sent).toEqual([undefined, 2, undefined, 2]);
  });

  it("takes the answer without origin when MAXIMAL streams other messages first", async () => {
    const file = caseFile(`
      agent: echo
      interactions: [{text: "hi", chat_filter: MAXIMAL, response.text.value: "echo: hi (turn 1)"}]`);
    const report = await runNetworkTests([file], { url: server.url });
    expect(report.passed).toBe(true);
    expect(server.requests.at(-1)?.body.chat_filter).toEqual({ chat_filter_type: "MAXIMAL" });
  });

  it("reports each failed assertion with what was expected and what came back", async () => {
    const file = caseFile(`
      agent: echo
      interactions: [{
        text: "hello"
        response {
          text { keywords: ["hello", "goodbye"], not_value: "echo: hello (turn 1)" }
          sly_data.turn { greater: 5 }
          sly_data.absent { not_value: 1 }
        }
      }]`);
    const report = await runNetworkTests([file], { url: server.url });

    expect(report.passed).toBe(false);
    const results = report.cases[0]?.runs[0]?.interactions[0]?.assertions ?? [];
    expect(results.map(({ target, test, expected, status }) => [target, test, expected, status])).toEqual([
      ["text", "keywords", "hello", "passed"],
      ["text", "keywords", "goodbye", "failed"],
      ["text", "not_value", "echo: hello (turn 1)", "failed"],
      ["sly_data.turn", "greater", 5, "failed"],
      ["sly_data.absent", "not_value", 1, "failed"],
    ]);
    expect(results[3]).toMatchObject({ actual: 1, reason: "1 is not greater than 5" });
    expect(results[4]).toMatchObject({ reason: "missing from the answer" });
    expect(results[4]).not.toHaveProperty("actual");
    expect(report.totals.assertions).toEqual({ passed: 1, failed: 4, skipped: 0 });

    const text = renderReport(report);
    expect(text).toContain("FAIL text keywords \"goodbye\": keyword \"goodbye\" is absent");
    expect(text).toContain('actual: "echo: hello (turn 1)"');
    expect(text).toMatch(/FAIL 0\/1 cases passed; runs 0\/1; assertions 1 passed, 4 failed, 0 skipped/);
  });
});

describe("success_ratio", () => {
  // The counter agent answers 1, 2, 3, ... so "less than N" passes for a known number of runs.
  it("runs the case n times and passes when at least k runs pass", async () => {
    const start = await currentCount();
    const file = caseFile(`
      agent: counter
      success_ratio: "2/3"
      interactions: [{text: "count", response.text.less: ${start + 3}}]`);
    const progress: ProgressEvent[] = [];
    const report = await runNetworkTests([file], { url: server.url, onProgress: (event) => progress.push(event) });

    const testCase = report.cases[0];
    expect(testCase?.runs.map((run) => run.passed)).toEqual([true, true, false]);
    expect(testCase).toMatchObject({ passed: true, passedRuns: 2, requiredRuns: 2, successRatio: "2/3" });
    expect(report.passed).toBe(true);
    expect(progress.map((event) => (event.kind === "run-finished" ? `run ${event.run.run}/${event.runs}` : event.kind))).toEqual([
      "run 1/3",
      "run 2/3",
      "run 3/3",
      "case-finished",
    ]);
  });

  it("fails when fewer than k runs pass", async () => {
    const start = await currentCount();
    const file = caseFile(`
      agent: counter
      success_ratio: "3/3"
      interactions: [{text: "count", response.text.less: ${start + 3}}]`);
    const report = await runNetworkTests([file], { url: server.url });
    expect(report.cases[0]).toMatchObject({ passed: false, passedRuns: 2 });
    expect(renderReport(report)).toContain("2/3 runs passed, 3 needed [success_ratio 3/3]");
  });

  async function currentCount(): Promise<number> {
    const file = caseFile(`agent: counter, interactions: [{text: "peek"}]`);
    const report = await runNetworkTests([file], { url: server.url });
    return Number(report.cases[0]?.runs[0]?.interactions[0]?.answer?.text);
  }
});

describe("gist", () => {
  const file = () =>
    caseFile(`
      agent: echo
      interactions: [{text: "the Beatles", response.text { gist: "It names the Beatles", not_gist: "It names the Stones" }}]`);

  it("asks the judge and passes when it agrees", async () => {
    const report = await runNetworkTests([file()], { url: server.url, judge });
    expect(report.passed).toBe(true);
    expect(report.totals.assertions).toEqual({ passed: 2, failed: 0, skipped: 0 });
  });

  it("is skipped, not passed, without a judge, and says why", async () => {
    const report = await runNetworkTests([file()], { url: server.url });
    const results = report.cases[0]?.runs[0]?.interactions[0]?.assertions;
    expect(results?.map((result) => result.status)).toEqual(["skipped", "skipped"]);
    expect(results?.[0]?.reason).toBe("no LLM is configured to judge gist tests");
    expect(report.totals.assertions).toEqual({ passed: 0, failed: 0, skipped: 2 });
    expect(renderReport(report)).toContain("(2 assertions skipped)");
    expect(renderReport(report)).toContain("skip text gist");
  });

  it("fails when the judge answers neither yes nor no", async () => {
    const confused: LlmClient = { ...judge, complete: async (request) => ({ ...(await judge.complete(request)), text: "Perhaps." }) };
    const report = await runNetworkTests([file()], { url: server.url, judge: confused });
    const result = report.cases[0]?.runs[0]?.interactions[0]?.assertions[0];
    expect(result).toMatchObject({ status: "failed" });
    expect(result?.reason).toMatch(/the gist judge failed: .*neither yes nor no: Perhaps/);
  });
});

describe("errors from the server", () => {
  it("reports a google.rpc.Status line in the stream and does not send the rest of the conversation", async () => {
    const file = caseFile(`agent: broken, interactions: [{text: "a"}, {text: "b"}]`);
    const before = server.requests.length;
    const report = await runNetworkTests([file], { url: server.url });

    const [first, second] = report.cases[0]?.runs[0]?.interactions ?? [];
    expect(first).toMatchObject({ passed: false, error: "UNAVAILABLE (14): the network failed midway [reason NETWORK_FAILED]" });
    expect(second).toMatchObject({ passed: false, notRun: "interaction #1 failed with an error" });
    expect(server.requests.length - before).toBe(1);
    expect(renderReport(report)).toContain("#2 \"b\": not run (interaction #1 failed with an error)");
  });

  it("reports a non-2xx google.rpc.Status body with its code, message, reason and HTTP status", async () => {
    const report = await runNetworkTests([caseFile(`agent: nobody, interactions: [{text: "a"}]`)], { url: server.url });
    expect(report.cases[0]?.runs[0]?.interactions[0]?.error).toBe(
      "NOT_FOUND (5): No agent named nobody [reason AGENT_NOT_FOUND] (HTTP 404)",
    );
  });

  it("reports a non-2xx answer that is not a Status by its HTTP status and body", async () => {
    const report = await runNetworkTests([caseFile(`agent: teapot, interactions: [{text: "a"}]`)], { url: server.url });
    expect(report.cases[0]?.runs[0]?.interactions[0]?.error).toBe("HTTP 500 Internal Server Error: boom");
  });

  it("reports a stream without a final answer", async () => {
    const report = await runNetworkTests([caseFile(`agent: silent, interactions: [{text: "a"}]`)], { url: server.url });
    expect(report.cases[0]?.runs[0]?.interactions[0]?.error).toBe("the stream ended without a final AGENT_FRAMEWORK message");
  });

  it("reports a server that cannot be reached", async () => {
    const gone = await startFakeAgentServer();
    await gone.close();
    const report = await runNetworkTests([caseFile(`agent: echo, interactions: [{text: "a"}]`)], { url: gone.url });
    expect(report.cases[0]?.runs[0]?.interactions[0]?.error).toMatch(`cannot reach ${gone.url}: connect ECONNREFUSED`);
  });
});

describe("timeouts", () => {
  it("abandons an interaction after its timeout_in_seconds and closes the request", async () => {
    const closedBefore = server.closedHangs;
    const report = await runNetworkTests(
      [caseFile(`agent: hang, interactions: [{text: "a", timeout_in_seconds: 0.2}]`)],
      { url: server.url, timeoutSeconds: 60 },
    );
    const interaction = report.cases[0]?.runs[0]?.interactions[0];
    expect(interaction?.error).toBe("the interaction took longer than 0.2s");
    expect(interaction?.durationMs).toBeGreaterThanOrEqual(150);
    await vi.waitFor(() => expect(server.closedHangs).toBe(closedBefore + 1));
  });

  it("uses the runner's timeout for interactions without one", async () => {
    const report = await runNetworkTests([caseFile(`agent: hang, interactions: [{text: "a"}]`)], {
      url: server.url,
      timeoutSeconds: 0.1,
    });
    expect(report.cases[0]?.runs[0]?.interactions[0]?.error).toBe("the interaction took longer than 0.1s");
  });

  it("holds the whole case, every run included, to the case's timeout_in_seconds", async () => {
    const report = await runNetworkTests(
      [caseFile(`agent: hang, success_ratio: "1/2", timeout_in_seconds: 0.2, interactions: [{text: "a"}]`)],
      { url: server.url, timeoutSeconds: 60 },
    );
    expect(report.cases[0]?.runs.map((run) => run.interactions[0]?.error)).toEqual([
      "the test case took longer than 0.2s",
      "the test case took longer than 0.2s",
    ]);
    expect(report.cases[0]?.durationMs).toBeLessThan(5_000);
  });
});

describe("invalid files", () => {
  it("are all reported before anything is sent", async () => {
    const bad = [caseFile(`interactions: [{text: "a"}]`), caseFile(`agent: echo, interactions: [{text: 1}]`)];
    const good = caseFile(`agent: echo, interactions: [{text: "a"}]`);
    const before = server.requests.length;
    const error = await runNetworkTests([good, ...bad], { url: server.url }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(InvalidTestFilesError);
    expect((error as InvalidTestFilesError).errors.map((each) => [each.file, each.key])).toEqual([
      [bad[0], "agent"],
      [bad[1], "interactions[0].text"],
    ]);
    expect(server.requests.length).toBe(before);
  });
});

describe("the command", () => {
  async function run(args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
    const stdout: string[] = [];
    const stderr: string[] = [];
    const log = vi.spyOn(console, "log").mockImplementation((...parts: unknown[]) => void stdout.push(parts.join(" ")));
    const error = vi.spyOn(console, "error").mockImplementation((...parts: unknown[]) => void stderr.push(parts.join(" ")));
    try {
      const status = await runNetworkTestsCommand(args);
      return { status, stdout: stdout.join("\n"), stderr: stderr.join("\n") };
    } finally {
      log.mockRestore();
      error.mockRestore();
    }
  }

  it("exits 0 when every case passes and prints the text report", async () => {
    const file = caseFile(`agent: echo, interactions: [{text: "a", response.text.keywords: "echo"}]`);
    const result = await run(["--url", server.url, file]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("PASS 1/1 cases passed");
    expect(result.stderr).toContain("echo run 1/1: passed");
  });

  it("exits 1 when a case fails and prints JSON with --json", async () => {
    const file = caseFile(`agent: echo, interactions: [{text: "a", response.text.keywords: "nope"}]`);
    const result = await run(["--url", server.url, "--json", file]);
    expect(result.status).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ passed: false, totals: { cases: 1, passedCases: 0 } });
  });

  it("exits 2 on an invalid file or bad usage", async () => {
    const invalid = await run(["--url", server.url, caseFile(`agent: echo`)]);
    expect(invalid.status).toBe(2);
    expect(invalid.stderr).toMatch(/Invalid test case file:\n.*: interactions: required/);
    expect((await run([])).status).toBe(2);
    expect((await run(["--timeout", "soon", "x.hocon"])).status).toBe(2);
  });

  it("runs the .hocon files of a folder", async () => {
    const examples = mkdtempSync(path.join(tmpdir(), "axon-network-test-folder-"));
    writeFileSync(path.join(examples, "b.hocon"), `agent: echo, interactions: [{text: "b"}]`);
    writeFileSync(path.join(examples, "a.hocon"), `agent: echo, interactions: [{text: "a"}]`);
    writeFileSync(path.join(examples, "notes.txt"), "not a case");
    const result = await run(["--url", server.url, "--json", examples]);
    expect(result.status).toBe(0);
    expect((JSON.parse(result.stdout) as { cases: { file: string }[] }).cases.map((each) => path.basename(each.file))).toEqual([
      "a.hocon",
      "b.hocon",
    ]);
  });
});
