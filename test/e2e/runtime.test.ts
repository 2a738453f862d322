import { readdirSync } from "node:fs";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentService } from "../../src/gen/neuro_san/api/grpc/agent_pb.js";
import { createLlmClient } from "../../src/llm/providers.js";
import { renderReport } from "../../src/network-tests/report.js";
import { runNetworkTests } from "../../src/network-tests/runner.js";
import { finalOf, maximal, messagesOf, protocols, restChat, type Json } from "../support/chat-protocols.js";
import { defaultReply, ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot, startTestServer, type TestServer } from "../support/server.js";

const frontMan = (tool: string) => ({ tool, instantiation_index: 1 });

/** What every chat must look like, whatever the network: one final message, last, with a chat_context. */
function expectWellFormedChat(lines: Json[], frontManName: string) {
  const messages = messagesOf(lines);
  expect(messages.filter((m) => m.type === "AGENT_FRAMEWORK")).toHaveLength(1);
  const final = messages.at(-1);
  expect(final.type).toBe("AGENT_FRAMEWORK");
  expect(final.origin).toBeUndefined();
  expect(final.text).toBeTruthy();
  expect(final.chat_context.chat_histories[0].messages[0]).toMatchObject({ type: "SYSTEM", text: "<redacted>" });
  for (const message of messages.slice(0, -1)) expect(message.origin[0]).toEqual(frontMan(frontManName));
  for (const result of messages.filter((m) => m.type === "AGENT_TOOL_RESULT")) {
    expect(result.tool_result_origin.slice(0, result.origin.length)).toEqual(result.origin);
    expect(result.tool_result_origin).toHaveLength(result.origin.length + 1);
  }
  const accounting = messages.find((m) => m.type === "AGENT" && m.structure?.total_tokens !== undefined);
  expect(accounting.structure).toMatchObject({ successful_requests: expect.any(Number), total_cost: expect.any(Number) });
  expect(accounting.structure.total_tokens).toBeGreaterThan(0);
  return final;
}

const secret = "sly-secret-never-for-an-llm";

describe.each(protocols)("the example networks over %s, against a scripted OpenAI-compatible LLM", (_name, chat) => {
  let llm: ScriptedLlm;
  let server: TestServer;
  beforeAll(async () => {
    llm = await ScriptedLlm.start("openai");
    server = await startTestServer({ env: llm.env });
  });
  afterAll(async () => {
    await server.close();
    await llm.close();
  });

  it("hello_world: the front man consults its LLM sub-agent", async () => {
    const lines = await chat(server, "hello_world", { user_message: { text: "Welsh" }, chat_filter: maximal, sly_data: { secret } });
    const final = expectWellFormedChat(lines, "Greeter");
    const phrasebook = messagesOf(lines).filter((m) => m.origin?.at(-1)?.tool === "Phrasebook");
    expect(phrasebook[0].origin).toEqual([frontMan("Greeter"), { tool: "Phrasebook", instantiation_index: 1 }]);
    expect(phrasebook.map((m) => m.type)).toEqual(["SYSTEM", "HUMAN", "AI"]);
    expect(phrasebook[1].text).toBe("The language is Welsh.");
    expect(final.sly_data).toBeUndefined(); // no to_upstream policy: nothing goes back
  });

  it("math_guy: the coded tool works on sly_data and returns its result through to_upstream", async () => {
    const lines = await chat(server, "math_guy", { user_message: { text: "What is 6 and 7?" }, chat_filter: maximal, sly_data: { secret } });
    const final = expectWellFormedChat(lines, "MathGuy");
    const calculator = [frontMan("MathGuy"), { tool: "Calculator", instantiation_index: 1 }];
    expect(messagesOf(lines).filter((m) => m.origin && JSON.stringify(m.origin) === JSON.stringify(calculator)).map((m) => m.type)).toEqual([
      "AGENT",
      "AGENT_PROGRESS",
      "AGENT",
    ]);
    expect(final.sly_data).toEqual({ last_result: 13 });
  });

  it("trip_planner: a network calls another network of this server", async () => {
    const lines = await chat(server, "trip_planner", { user_message: { text: "Cardiff" }, chat_filter: maximal });
    expectWellFormedChat(lines, "TripPlanner");
    const result = messagesOf(lines).find((m) => m.type === "AGENT_TOOL_RESULT");
    expect(result.tool_result_origin.at(-1)).toEqual({ tool: "/hello_world", instantiation_index: 1 });
    expect(result.text).toContain("Answer");
  });

  it("music_nerd: a cycle between sub-agents ends, bounded by max_steps", async () => {
    const lines = await chat(server, "music_nerd", { user_message: { text: "Who played on Revolver?" }, chat_filter: maximal });
    expectWellFormedChat(lines, "MusicNerd");
    const deepest = Math.max(...messagesOf(lines).map((m) => m.origin?.length ?? 0));
    expect(deepest).toBe(20); // music_nerd sets max_steps: 20
  });

  it("back_office: structure_formats and a running total that sly_data carries across turns", async () => {
    const first = finalOf(await chat(server, "back_office", { user_message: { text: "add 12" } }));
    expect(first.structure).toEqual({ running_total: 12, currency: "EUR" });
    expect(first.sly_data).toEqual({ running_total: 12, currency: "EUR" });
    const second = finalOf(
      await chat(server, "back_office", { user_message: { text: "add 5" }, sly_data: first.sly_data, chat_context: first.chat_context }),
    );
    expect(second.sly_data).toEqual({ running_total: 17, currency: "EUR" });
    expect(second.chat_context.chat_histories[0].messages.map((m: Json) => m.type)).toEqual(["SYSTEM", "HUMAN", "AI", "HUMAN", "AI"]);
  });

  it("MINIMAL sends the final message alone", async () => {
    const lines = await chat(server, "hello_world", { user_message: { text: "Welsh" } });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.response.type).toBe("AGENT_FRAMEWORK");
  });

  it("the scripted LLM never saw a sly_data value", () => {
    expect(llm.requests.length).toBeGreaterThan(10);
    expect(JSON.stringify(llm.requests)).not.toContain(secret);
  });
});

describe("the runtime against scripted LLM servers", () => {
  let openai: ScriptedLlm;
  let anthropic: ScriptedLlm;
  let server: TestServer;
  const fixtures = {
    AGENT_MANIFEST_FILE: "test/fixtures/runtime/manifest.hocon",
    AGENT_TOOL_PATH: "test/fixtures/runtime/coded_tools",
  };
  beforeAll(async () => {
    openai = await ScriptedLlm.start("openai");
    anthropic = await ScriptedLlm.start("anthropic");
    server = await startTestServer({ env: { ...openai.env, ...anthropic.env, ...fixtures, AGENT_STREAM_KEEP_ALIVE_WITH_PROGRESS_INTERVAL_SECONDS: "1" } });
  });
  afterAll(async () => {
    await server.close();
    await openai.close();
    await anthropic.close();
  });
  beforeEach(() => {
    openai.reset();
    anthropic.reset();
  });

  it("drives an Anthropic model with tool use", async () => {
    const lines = await restChat(server, "claude_greeter", { user_message: { text: "Hello" }, chat_filter: maximal });
    expectWellFormedChat(lines, "Host");
    expect(anthropic.requests.length).toBe(3);
    expect(anthropic.requests[0]!.path).toBe("/v1/messages");
    expect(messagesOf(lines).some((m) => m.origin?.at(-1)?.tool === "Doorman")).toBe(true);
    expect(openai.requests).toHaveLength(0);
  });

  it("allow.from_downstream.messages forwards a called network's messages to the client; without it they stay inside", async () => {
    const origins = (lines: Json[]) => messagesOf(lines).flatMap((message) => (message.origin ?? []).map((origin: Json) => origin.tool));
    const forwarded = await restChat(server, "passthrough", { user_message: { text: "Hello" }, chat_filter: maximal });
    expect(finalOf(forwarded)).toMatchObject({ type: "AGENT_FRAMEWORK" });
    expect(origins(forwarded)).toContain("Host");
    const kept = await restChat(server, "quiet_relay", { user_message: { text: "Hello" }, chat_filter: maximal });
    expect(finalOf(kept)).toMatchObject({ type: "AGENT_FRAMEWORK" });
    expect(origins(kept)).not.toContain("Host");
  });

  it("filters sly_data to the client by to_upstream: kept, renamed and dropped keys", async () => {
    const lines = await restChat(server, "toolbox", {
      user_message: { text: "note this" },
      sly_data: { visible: "v", hidden: "h", other: secret },
      chat_filter: maximal,
    });
    const final = expectWellFormedChat(lines, "Foreman");
    expect(final.sly_data).toEqual({ visible: "v", exposed: "written by the tool" });
    expect(final.structure).toEqual({ seen: expect.any(Object), answer: { total: 3 } });
    const seen = JSON.parse(messagesOf(lines).find((m) => m.type === "AGENT_TOOL_RESULT").text).seen;
    // Coded tools share the request's sly_data; static args override the LLM's.
    expect(seen.sly_data_keys).toEqual(["hidden", "other", "visible"]);
    expect(seen.args).toEqual({ note: "note this", mode: "static" });
    expect(JSON.stringify(openai.requests)).not.toContain(secret);
  });

  it("a failing coded tool becomes a tool result shaped by error_formatter", async () => {
    openai.script((request) =>
      request.messages.at(-1)?.role === "user" ? { toolCalls: [{ name: "Breaker", arguments: { why: "test" } }] } : defaultReply(request),
    );
    const lines = await restChat(server, "toolbox", { user_message: { text: "break it" }, chat_filter: maximal });
    expectWellFormedChat(lines, "Foreman");
    const result = messagesOf(lines).find((m) => m.type === "AGENT_TOOL_RESULT");
    expect(JSON.parse(result.text)).toEqual({ error: "the breaker always breaks", tool: "Breaker" });
  });

  it("closing the client connection aborts the request the LLM server is holding", async () => {
    openai.hold();
    const abort = new AbortController();
    const response = await fetch(`${server.url}/api/v1/toolbox/streaming_chat`, {
      method: "POST",
      body: JSON.stringify({ user_message: { text: "wait" }, chat_filter: maximal }),
      signal: abort.signal,
    });
    expect(response.status).toBe(200);
    await openai.whenReceived(1);
    abort.abort();
    const held = await openai.whenAborted(1);
    expect(held.aborted).toBe(true);
  });

  it("a gRPC cancel aborts the LLM request too", async () => {
    openai.hold();
    const abort = new AbortController();
    const client = createClient(AgentService, createGrpcTransport({ baseUrl: server.url }));
    const stream = client.streamingChat({ agentName: "toolbox", userMessage: { text: "wait" } }, { signal: abort.signal });
    const consumed = (async () => {
      for await (const _ of stream);
    })().catch(() => {});
    await openai.whenReceived(1);
    abort.abort();
    await openai.whenAborted(1);
    await consumed;
  });

  it("max_execution_seconds ends the chat with DEADLINE_EXCEEDED and aborts the LLM request", async () => {
    openai.hold();
    const lines = await restChat(server, "slow", { user_message: { text: "hurry" } });
    expect(lines.at(-1)).toMatchObject({
      code: 4,
      details: [expect.objectContaining({ reason: "MAX_EXECUTION_SECONDS", metadata: { category: "timeout", max_execution_seconds: "1" } })],
    });
    await openai.whenAborted(1);
  });

  it("an LLM that keeps failing ends the stream with UNAVAILABLE and no provider text", async () => {
    openai.failNext(500, 50);
    const lines = await restChat(server, "slow", { user_message: { text: "fail" }, chat_filter: maximal });
    const status = lines.at(-1)!;
    expect(status).toMatchObject({ code: 14, details: [expect.objectContaining({ reason: "LLM_UNAVAILABLE" })] });
    // max_attempts (3 by default) runs the agent again after a server error: each run one try and three retries.
    expect(openai.requests).toHaveLength(12);
  });

  it.each([
    ["MINIMAL", {}],
    ["MAXIMAL", { chat_filter: maximal }],
  ])("keeps an idle %s stream alive with empty AGENT_PROGRESS messages until the answer", async (_filter, filter) => {
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    anthropic.script(async (request) => {
      await answered;
      return { text: `Answer: ${request.messages.length}` };
    });
    const response = await fetch(`${server.url}/api/v1/claude_greeter/streaming_chat`, {
      method: "POST",
      body: JSON.stringify({ user_message: { text: "pause" }, ...filter }),
    });
    const lines: Json[] = [];
    let pending = "";
    const decoder = new TextDecoder();
    for await (const chunk of response.body!) {
      pending += decoder.decode(chunk, { stream: true });
      const complete = pending.split("\n");
      pending = complete.pop()!;
      for (const line of complete.filter(Boolean)) lines.push(JSON.parse(line) as Json);
      // The model answers only once a keep-alive went out while it was silent.
      if (messagesOf(lines).some((message) => message.type === "AGENT_PROGRESS")) answer();
    }
    const keepAlives = messagesOf(lines).filter((message) => message.type === "AGENT_PROGRESS" && !message.text && !message.structure);
    expect(keepAlives[0]).toEqual({ type: "AGENT_PROGRESS" });
    expect(finalOf(lines)).toMatchObject({ type: "AGENT_FRAMEWORK", text: expect.stringContaining("Answer") });
  });
});

describe("refusals before a chat starts", () => {
  it("no LLM key: FAILED_PRECONDITION naming the variable, before any message and any LLM request", async () => {
    const llm = await ScriptedLlm.start("openai");
    const server = await startTestServer({ env: { OPENAI_BASE_URL_UNUSED: llm.baseUrl } });
    try {
      const [error] = await restChat(server, "hello_world", { user_message: { text: "hi" } });
      expect(error).toMatchObject({
        http_status: 400,
        code: 9,
        details: [expect.objectContaining({ reason: "LLM_NOT_CONFIGURED", metadata: expect.objectContaining({ variable: "OPENAI_API_KEY" }) })],
      });
      expect(error?.message).toContain("OPENAI_API_KEY");
      expect(error?.message).toContain("OLLAMA_HOST");
      expect(llm.requests).toHaveLength(0);
      // Everything but chat still works.
      expect((await fetch(`${server.url}/api/v1/list`)).status).toBe(200);
    } finally {
      await server.close();
      await llm.close();
    }
  });

  it("AGENT_MAX_CONCURRENT_REQUESTS answers RESOURCE_EXHAUSTED beyond the limit", async () => {
    const llm = await ScriptedLlm.start("openai");
    const server = await startTestServer({ env: { ...llm.env, AGENT_MAX_CONCURRENT_REQUESTS: "1" } });
    try {
      llm.hold();
      const abort = new AbortController();
      const first = fetch(`${server.url}/api/v1/hello_world/streaming_chat`, {
        method: "POST",
        body: JSON.stringify({ user_message: { text: "one" } }),
        signal: abort.signal,
      }).catch(() => undefined);
      await llm.whenReceived(1);
      const [refused] = await restChat(server, "hello_world", { user_message: { text: "two" } });
      expect(refused).toMatchObject({ http_status: 429, code: 8, details: [expect.objectContaining({ reason: "TOO_MANY_CHATS" })] });
      abort.abort();
      await first;
      await llm.whenAborted(1);
    } finally {
      await server.close();
      await llm.close();
    }
  });
});

describe("data-driven network tests (test/networks) against the examples and a scripted LLM", () => {
  const folder = path.join(projectRoot, "test/networks");
  const files = readdirSync(folder).map((file) => path.join(folder, file));

  it("every case passes; gist assertions are skipped without a judge", async () => {
    const llm = await ScriptedLlm.start("openai");
    const server = await startTestServer({ env: llm.env });
    try {
      const report = await runNetworkTests(files, { url: server.url, projectRoot });
      expect(report.passed, renderReport(report)).toBe(true);
      expect(report.totals.cases).toBe(files.length);
      expect(report.totals.assertions.skipped).toBeGreaterThan(0);
    } finally {
      await server.close();
      await llm.close();
    }
  });

  it("gist assertions go to an LLM judge when one is given", async () => {
    const llm = await ScriptedLlm.start("openai");
    const server = await startTestServer({ env: llm.env });
    // The judge is asked on the same scripted server; it says yes to every gist.
    llm.script((request) => (request.system?.startsWith("You check answers") ? { text: "YES\nIt does." } : defaultReply(request)));
    try {
      const judge = createLlmClient({ model_name: "gpt-4o-mini" }, llm.env);
      const report = await runNetworkTests(files, { url: server.url, projectRoot, judge });
      expect(report.passed, renderReport(report)).toBe(true);
      expect(report.totals.assertions.skipped).toBe(0);
      expect(llm.requests.some((request) => JSON.stringify(request.body).includes("Gist:"))).toBe(true);
    } finally {
      await server.close();
      await llm.close();
    }
  });
});
