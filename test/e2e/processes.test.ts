import { once } from "node:events";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startAxonProcess, type AxonProcess } from "../support/axon-process.js";
import { ScriptedLlm } from "../support/scripted-llm/scripted-llm.js";
import { projectRoot } from "../support/server.js";

/** One ChatResponse's `response`, as the REST json-lines stream carries it. */
interface ChatMessageJson {
  type: string;
  text?: string;
  origin?: { tool: string; instantiation_index?: number }[];
  tool_result_origin?: { tool: string; instantiation_index?: number }[];
  sly_data?: Record<string, unknown>;
  chat_context?: ChatContextJson;
}

interface ChatContextJson {
  chat_histories: { origin: unknown[]; messages: { type: string; text?: string }[] }[];
}

const witnessToolPath = path.join(projectRoot, "test/fixtures/processes/coded_tools");

// Everything a test starts is stopped after it, whether or not it passed: CI starts from a clean slate.
const processes: AxonProcess[] = [];
const llms: ScriptedLlm[] = [];
const tempDirs: string[] = [];

afterEach(async () => {
  await Promise.all(processes.splice(0).map((axon) => axon.stop(2_000)));
  await Promise.all(llms.splice(0).map((llm) => llm.close()));
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function startLlm(): Promise<ScriptedLlm> {
  const llm = await ScriptedLlm.start("openai");
  llms.push(llm);
  return llm;
}

async function startAxon(env: Record<string, string>): Promise<AxonProcess> {
  const axon = await startAxonProcess(env);
  processes.push(axon);
  return axon;
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "axon-processes-"));
  tempDirs.push(dir);
  return dir;
}

/** Writes network files (name -> HOCON) and a manifest serving them all into `dir`; returns the manifest. */
async function writeRegistry(dir: string, networks: Record<string, string>): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const [name, hocon] of Object.entries(networks)) await writeFile(path.join(dir, `${name}.hocon`), hocon);
  const manifest = path.join(dir, "manifest.hocon");
  const entries = Object.keys(networks).map((name) => `  "${name}.hocon": true`);
  await writeFile(manifest, `{\n${entries.join("\n")}\n}\n`);
  return manifest;
}

/** A port nothing listens on: bound by the OS, then released. */
async function closedPort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, "close");
  return port;
}

async function streamingChat(
  url: string,
  network: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ status: number; messages: ChatMessageJson[]; final: ChatMessageJson }> {
  const response = await fetch(`${url}/api/v1/${network}/streaming_chat`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const lines = (await response.text()).split("\n").filter((line) => line.trim() !== "");
  const messages = lines.map((line) => (JSON.parse(line) as { response: ChatMessageJson }).response);
  const final = messages.at(-1)!;
  return { status: response.status, messages, final };
}

describe("Axon processes", () => {
  it("chat_context from one process continues on a second, fresh process", async () => {
    const llm = await startLlm();
    const first = await startAxon(llm.env);
    const turn1 = await streamingChat(first.url, "hello_world", { user_message: { text: "Say hello in Welsh" } });
    expect(turn1.status).toBe(200);
    expect(turn1.final.type).toBe("AGENT_FRAMEWORK");
    const answer1 = turn1.final.text!;
    expect(answer1).toMatch(/^Answer: /);
    expect(await first.stop()).toBe(0);

    const second = await startAxon(llm.env);
    expect(second.child.pid).not.toBe(first.child.pid);
    const turn2Start = llm.requests.length;
    const turn2 = await streamingChat(second.url, "hello_world", {
      user_message: { text: "And in Breton?" },
      chat_context: turn1.final.chat_context,
    });
    expect(turn2.status).toBe(200);
    expect(turn2.final.type).toBe("AGENT_FRAMEWORK");

    // The front man's first request of turn 2 rebuilds the conversation from the carried chat_context.
    const frontMansRequest = llm.requests.slice(turn2Start)[0]!.body as { messages: { role: string; content: unknown }[] };
    expect(frontMansRequest.messages).toMatchObject([
      { role: "system", content: expect.stringContaining("You are a warm, brief greeter.") },
      { role: "user", content: "Say hello in Welsh" },
      { role: "assistant", content: answer1 },
      { role: "user", content: "And in Breton?" },
    ]);
    expect(JSON.stringify(frontMansRequest.messages[0])).not.toContain("<redacted>");

    const histories = turn2.final.chat_context!.chat_histories;
    expect(histories).toHaveLength(1);
    expect(histories[0]!.messages.map(({ type, text }) => ({ type, text }))).toEqual([
      { type: "SYSTEM", text: "<redacted>" },
      { type: "HUMAN", text: "Say hello in Welsh" },
      { type: "AI", text: answer1 },
      { type: "HUMAN", text: "And in Breton?" },
      { type: "AI", text: turn2.final.text },
    ]);
  });

  it("external agent over HTTP between two Axon processes", async () => {
    const [callerLlm, calleeLlm] = await Promise.all([startLlm(), startLlm()]);
    const dir = await tempDir();
    const witnessFile = path.join(dir, "witness.json");

    const calleeManifest = await writeRegistry(path.join(dir, "callee"), {
      witness_net: `{
        llm_config { model_name: "gpt-4o-mini" }
        tools: [
          {
            name: "Witness"
            function {
              description: "Reports what the network was given."
              parameters { type: "object", properties { inquiry { type: "string" } }, required: ["inquiry"] }
            }
            instructions: "Ask the SlyWitness what it sees and report it."
            tools: ["SlyWitness"]
            allow { to_upstream { sly_data: ["result_key"] } }
          }
          {
            name: "SlyWitness"
            class: "sly_witness.SlyWitness"
            function {
              description: "Records what it was given."
              parameters { type: "object", properties { note { type: "string" } } }
            }
            args { witness_file: ${JSON.stringify(witnessFile)} }
          }
        ]
      }`,
    });
    const callee = await startAxon({ ...calleeLlm.env, AGENT_MANIFEST_FILE: calleeManifest, AGENT_TOOL_PATH: witnessToolPath });

    const remote = `http://127.0.0.1:${callee.port}/witness_net`;
    const callerManifest = await writeRegistry(path.join(dir, "caller"), {
      caller_net: `{
        llm_config { model_name: "gpt-4o-mini" }
        tools: [
          {
            name: "Caller"
            instructions: "Ask the remote network, then answer."
            tools: [${JSON.stringify(remote)}]
            allow {
              to_downstream { sly_data: ["visible"] }
              from_downstream { sly_data { result_key: "renamed" } }
              to_upstream { sly_data: true }
            }
          }
        ]
      }`,
    });
    const caller = await startAxon({ ...callerLlm.env, AGENT_MANIFEST_FILE: callerManifest });

    const chat = await streamingChat(
      caller.url,
      "caller_net",
      {
        user_message: { text: "What do you see?" },
        sly_data: { visible: "v", hidden: "h-secret" },
        chat_filter: { chat_filter_type: "MAXIMAL" },
      },
      { request_id: "req-processes-42", user_id: "user-7" },
    );
    expect(chat.status).toBe(200);
    expect(chat.final.type).toBe("AGENT_FRAMEWORK");

    // The call crossed to the other process: its LLM got the arguments as a JSON block, its coded tool ran.
    expect(calleeLlm.requests.length).toBeGreaterThan(0);
    expect(JSON.stringify(calleeLlm.requests[0]!.body)).toContain("What do you see?");
    const seen = JSON.parse(await readFile(witnessFile, "utf8")) as { sly_data: unknown; metadata: Record<string, string> };
    expect(seen.sly_data).toEqual({ visible: "v" });
    expect(seen.metadata).toMatchObject({ request_id: "req-processes-42", user_id: "user-7" });
    const toolResult = chat.messages.find((m) => m.type === "AGENT_TOOL_RESULT" && m.tool_result_origin?.at(-1)?.tool === remote);
    expect(toolResult?.text).toContain('"sly_data_keys":["visible"]');

    // What to_downstream kept back never reached the callee, in any form.
    for (const request of calleeLlm.requests) expect(JSON.stringify(request.body)).not.toContain("h-secret");
    expect(JSON.stringify(callee.logs)).not.toContain("h-secret");

    // from_downstream renamed the callee's key; to_upstream: true hands the caller's whole sly_data back.
    expect(chat.final.sly_data).toEqual({ visible: "v", hidden: "h-secret", renamed: "from-the-far-side" });
  });

  it("an unreachable external agent becomes a tool result, not a failure", async () => {
    const llm = await startLlm();
    const nowhere = `http://127.0.0.1:${await closedPort()}/nowhere`;
    const manifest = await writeRegistry(await tempDir(), {
      stranded: `{
        llm_config { model_name: "gpt-4o-mini" }
        tools: [
          {
            name: "Stranded"
            instructions: "Ask the remote network, then answer."
            tools: [${JSON.stringify(nowhere)}]
          }
        ]
      }`,
    });
    const axon = await startAxon({ ...llm.env, AGENT_MANIFEST_FILE: manifest });

    const chat = await streamingChat(axon.url, "stranded", {
      user_message: { text: "Anyone there?" },
      chat_filter: { chat_filter_type: "MAXIMAL" },
    });
    expect(chat.status).toBe(200);
    expect(chat.final.type).toBe("AGENT_FRAMEWORK");
    expect(chat.final.origin).toBeUndefined();
    const toolResult = chat.messages.find((m) => m.type === "AGENT_TOOL_RESULT");
    expect(toolResult).toMatchObject({
      origin: [{ tool: "Stranded", instantiation_index: 1 }],
      tool_result_origin: [
        { tool: "Stranded", instantiation_index: 1 },
        { tool: nowhere, instantiation_index: 1 },
      ],
    });
    expect(toolResult?.text).toMatch(/^Error: the agent network \S+\/nowhere could not answer/);
    // The front man carried on with the error as its tool result.
    expect(chat.final.text).toContain("could not answer");
  });
});
