import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { demoReply } from "../support/scripted-llm/demo-script.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";
import { until } from "../support/wait.js";
import { runAxon } from "./run-axon.js";

type Json = Record<string, any>;

let llm: ScriptedLlm;
let server: TestServer;

beforeAll(async () => {
  llm = await ScriptedLlm.start("openai");
  llm.script(demoReply);
  server = await startTestServer({ env: llm.env });
});
afterAll(async () => {
  await server?.close();
  await llm?.close();
});

/** The answers of a chat, one per -m, through the real CLI. */
async function chat(network: string, ...messages: string[]): Promise<Json[]> {
  const run = await runAxon(["--json", "chat", network, ...messages.flatMap((message) => ["-m", message])], { AXON_URL: server.url });
  if (run.status !== 0) throw new Error(run.stderr);
  return JSON.parse(run.stdout) as Json[];
}

describe("the demo model", () => {
  it("has math_guy work out 6 × 7 = 42 with its Calculator, and go on from the answer", async () => {
    const [first, second] = await chat("math_guy", "What is 6 times 7?", "and plus 3?");
    expect(first!.text).toBe("6 × 7 = 42");
    // last_result is written by the coded tool, so the Calculator did the sum.
    expect(first!.sly_data).toEqual({ last_result: 42 });
    expect(second!.text).toBe("42 + 3 = 45");
    expect(second!.sly_data).toEqual({ last_result: 45 });
  });

  it("has hello_world greet cleanly in the language asked for, through its Phrasebook", async () => {
    const [welsh, none] = await chat("hello_world", "Welsh", "hello");
    expect(welsh!.text).toBe("Shwmae! (shoo-my) That is hello in Welsh.");
    expect(none!.text).toBe("Hello! Name a language (Welsh, Breton, Japanese, ...) and I will greet you in it.");
    const phrasebookCalls = llm.requests.filter((request) => request.request.system?.includes("single everyday greeting"));
    expect(phrasebookCalls.map((request) => request.request.messages.at(-1)?.content)).toEqual(["The language is Welsh."]);
  });

  it("keeps back_office's running total across turns in sly_data", async () => {
    const [lunch, coffee] = await chat("back_office", "I spent 12 on lunch", "and 8 on coffee");
    expect(lunch!.structure).toEqual({ total: 12, currency: "EUR" });
    expect(coffee!.text).toBe("Recorded 8 EUR; the running total is 20 EUR.");
    expect(coffee!.structure).toEqual({ total: 20, currency: "EUR" });
    expect(coffee!.sly_data).toEqual({ running_total: 20, currency: "EUR" });
  });

  it("never says it is a demo in an answer's text", async () => {
    for (const [network, message] of [["math_guy", "What is 6 times 7?"], ["hello_world", "Breton"], ["music_nerd", "Tell me about Abbey Road"], ["trip_planner", "Paris"]] as const) {
      const [answer] = await chat(network, message);
      expect(answer!.text).not.toMatch(/demo|scripted/i);
      expect(answer!.text).not.toMatch(/^Answer:/);
    }
  });
});

describe("npm run demo", () => {
  let demo: ChildProcess | undefined;
  afterAll(async () => {
    if (demo && demo.exitCode === null) {
      demo.kill("SIGTERM");
      await once(demo, "exit");
    }
  });

  it("says DEMO MODE as it starts, and answers 6 × 7 = 42", async () => {
    demo = spawn(process.execPath, ["--import", "tsx", "test/support/demo.ts"], {
      cwd: projectRoot,
      env: { PATH: process.env.PATH ?? "", AGENT_HTTP_PORT: "0", AXON_HOST: "127.0.0.1", LOG_LEVEL: "info", AXON_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), "axon-demo-")) },
      stdio: ["ignore", "pipe", "ignore"],
    });
    const lines: Json[] = [];
    createInterface({ input: demo.stdout! }).on("line", (line) => lines.push(JSON.parse(line) as Json));
    const started = await until(() => lines.find((line) => typeof line.url === "string"), "the demo to start");
    expect(started.llm).toMatch(/^DEMO MODE/);
    const port = new URL(String(started.url)).port;
    const run = await runAxon(["chat", "math_guy", "-m", "What is 6 times 7?"], { AXON_URL: `http://127.0.0.1:${port}` });
    expect(run).toEqual({ status: 0, stdout: "6 × 7 = 42\n", stderr: "" });
  });
});
