import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ScriptedChats } from "../support/scripted-chat.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { runAxon, runAxonOnTerminal } from "./run-axon.js";

type Json = Record<string, any>;

let llm: ScriptedLlm;
/** The runtime's fixture networks on the scripted LLM: `toolbox` reports the sly_data keys its coded tool saw. */
let toolbox: TestServer;
/** A test-only message source that echoes each turn and records what it was sent. */
let echo: TestServer;
const chats = new ScriptedChats();

beforeAll(async () => {
  llm = await ScriptedLlm.start("openai");
  [toolbox, echo] = await Promise.all([
    startTestServer({ env: { ...llm.env, AGENT_MANIFEST_FILE: "test/fixtures/runtime/manifest.hocon", AGENT_TOOL_PATH: "test/fixtures/runtime/coded_tools" } }),
    startTestServer({ chats }),
  ]);
});
afterAll(async () => {
  await Promise.all([toolbox?.close(), echo?.close()]);
  await llm?.close();
});

describe("axon chat", () => {
  it("keeps the user's sly_data on every turn, beside what the network returned", async () => {
    const run = await runAxon(["--json", "chat", "toolbox", "--sly-data", '{"user": "ada"}', "-m", "first", "-m", "second"], { AXON_URL: toolbox.url });
    expect(run.stderr).toBe("");
    const finals = JSON.parse(run.stdout) as Json[];
    // The coded tool reports the sly_data keys it was given: the user's key, and from turn two what turn one returned.
    expect(JSON.stringify(finals[0])).toContain('"sly_data_keys":["user"]');
    expect(finals[0]!.sly_data).toEqual({ exposed: "written by the tool" });
    expect(JSON.stringify(finals[1])).toContain('"sly_data_keys":["exposed","user"]');
  });

  it("--json still prints the answers of the turns before a failed one, and exits with the failure's status", async () => {
    const run = await runAxon(["--json", "chat", "hello_world", "-m", "hello", "-m", "refuse"], { AXON_URL: echo.url });
    expect(JSON.parse(run.stdout)).toEqual([expect.objectContaining({ type: "AGENT_FRAMEWORK", text: "echo hello (turn 1)" })]);
    expect(run.stderr).toBe("axon: the scripted network refuses this turn (SCRIPTED_REFUSAL, FAILED_PRECONDITION)\n");
    expect(run.status).toBe(7);
  });

  it("ends an interactive chat at quit or exit, without sending either", async () => {
    const before = chats.turns.length;
    const run = await runAxon(["chat", "hello_world"], { AXON_URL: echo.url }, { input: "hello\n  QUIT \nnever sent\n" });
    expect(run.status).toBe(0);
    expect(run.stdout).toBe("echo hello (turn 1)\n");
    expect(chats.turns.slice(before).map((turn) => turn.text)).toEqual(["hello"]);
    const exit = await runAxon(["chat", "hello_world"], { AXON_URL: echo.url }, { input: "exit\n" });
    expect(exit.stdout).toBe("");
    expect(chats.turns).toHaveLength(before + 1);
  });

  it("shows that the network is thinking on a terminal, and nothing of it on a pipe", async () => {
    const onTerminal = await runAxonOnTerminal(["chat", "hello_world", "-m", "slow 3"], { AXON_URL: echo.url });
    expect(onTerminal.status).toBe(0);
    expect(onTerminal.stdout).toContain("hello_world is thinking");
    expect(onTerminal.stdout).toContain("echo slow 3 (turn 1)");
    const onPipe = await runAxon(["chat", "hello_world", "-m", "slow 3"], { AXON_URL: echo.url });
    expect(onPipe).toEqual({ status: 0, stdout: "echo slow 3 (turn 1)\n", stderr: "" });
  });
});
