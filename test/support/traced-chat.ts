import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startAxonProcess, type AxonProcess } from "./axon-process.js";
import { OtlpReceiver } from "./otlp-receiver.js";
import { defaultReply, ScriptedLlm, type Reply } from "./scripted-llm/scripted-llm.js";
import { projectRoot } from "./server.js";
import { until } from "./wait.js";

const witnessToolPath = path.join(projectRoot, "test/fixtures/processes/coded_tools");

/** The name of the server span of every StreamingChat call. */
export const streamingChatSpan = "dev.cognizant_ai.neuro_san.api.grpc.agent.AgentService/StreamingChat";

/** Writes network files (name -> HOCON) and a manifest serving them all into a fresh directory; returns the manifest. */
export async function writeRegistry(networks: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "axon-tracing-"));
  for (const [name, hocon] of Object.entries(networks)) await writeFile(path.join(dir, `${name}.hocon`), hocon);
  const manifest = path.join(dir, "manifest.hocon");
  await writeFile(manifest, `{\n${Object.keys(networks).map((name) => `  "${name}.hocon": true`).join("\n")}\n}\n`);
  return manifest;
}

/** One chat across two traced Axon processes, and what it ran on. */
export interface TracedChat {
  receiver: OtlpReceiver;
  caller: AxonProcess;
  callee: AxonProcess;
  callerLlm: ScriptedLlm;
  /** The callee's network as the caller names it: the external agent's tool name. */
  remote: string;
  /** Stops the processes and servers and removes the files. */
  close(): Promise<void>;
}

/**
 * A caller network whose front man asks, in one round, a coded tool, a sub-agent and a network on a second Axon
 * process; both processes export to one receiver, the caller over http/json, the callee over http/protobuf. Resolves
 * once every span of the chat has arrived. `headers` go with the StreamingChat request (a client's traceparent).
 */
export async function chatAcrossTwoProcesses(extraEnv: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<TracedChat> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => void (await Promise.all(closers.splice(0).map((closeOne) => closeOne())));
  try {
    const receiver = await OtlpReceiver.start();
    closers.push(() => receiver.close());
    const [callerLlm, calleeLlm] = await Promise.all([ScriptedLlm.start("openai"), ScriptedLlm.start("openai")]);
    closers.push(() => callerLlm.close(), () => calleeLlm.close());
    const witnessFile = path.join(os.tmpdir(), `axon-tracing-witness-${process.pid}-${Date.now()}.json`);
    closers.push(() => rm(witnessFile, { force: true }));
    const calleeManifest = await writeRegistry({
      far_net: `{ llm_config { model_name: "gpt-4o-mini" }, tools: [ { name: "Far", instructions: "Answer from afar." } ] }`,
    });
    closers.push(() => rm(path.dirname(calleeManifest), { recursive: true, force: true }));
    const callee = await startAxonProcess({ ...calleeLlm.env, ...receiver.env("http/protobuf"), ...extraEnv, OTEL_SERVICE_NAME: "callee", AGENT_MANIFEST_FILE: calleeManifest });
    closers.push(() => callee.stop());
    const remote = `http://127.0.0.1:${callee.port}/far_net`;
    const callerManifest = await writeRegistry({
      near_net: `{
        llm_config { model_name: "gpt-4o-mini" }
        tools: [
          { name: "Near", instructions: "Ask everyone.", tools: ["SlyWitness", "Helper", ${JSON.stringify(remote)}] }
          {
            name: "SlyWitness"
            class: "sly_witness.SlyWitness"
            function { description: "Records what it was given.", parameters { type: "object", properties { note { type: "string" } } } }
            args { witness_file: ${JSON.stringify(witnessFile)} }
          }
          {
            name: "Helper"
            function { description: "Helps.", parameters { type: "object", properties { inquiry { type: "string" } } } }
            instructions: "You help."
          }
        ]
      }`,
    });
    closers.push(() => rm(path.dirname(callerManifest), { recursive: true, force: true }));
    // The front man calls all three tools at once, then answers from their results.
    // Answered by a dated snapshot of the model asked for, as OpenAI answers.
    const askEveryone: Reply = {
      model: "gpt-4o-mini-2024-07-18",
      toolCalls: [
        { name: "SlyWitness", arguments: { note: "secret-note" } },
        { name: "Helper", arguments: { inquiry: "help me" } },
        { name: "far_net", arguments: { inquiry: "far away" } },
      ],
    };
    callerLlm.script((request) => (request.system === "Ask everyone." && request.messages.at(-1)?.role === "user" ? askEveryone : defaultReply(request)));
    const caller = await startAxonProcess({
      ...callerLlm.env,
      ...receiver.env("http/json"),
      ...extraEnv,
      OTEL_SERVICE_NAME: "caller",
      AGENT_MANIFEST_FILE: callerManifest,
      AGENT_TOOL_PATH: witnessToolPath,
    });
    closers.push(() => caller.stop());
    await sendChat(caller, headers);
    // Every span of the chat has arrived: both processes' server spans and the far side's model call.
    const bySpan = (name: string, service: string) => () => receiver.spans.find((span) => span.name === name && span.service === service);
    await until(bySpan(streamingChatSpan, "caller"), "the caller's server span");
    await until(bySpan("invoke_agent near_net", "caller"), "the caller's chat span");
    await until(bySpan("invoke_agent far_net", "callee"), "the callee's chat span");
    await until(() => receiver.spans.filter((span) => span.name === "chat gpt-4o-mini").length >= 4 || undefined, "every model call's span");
    return { receiver, caller, callee, callerLlm, remote, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** One StreamingChat (REST) to the caller's near_net, with `headers` beside its own; rejects unless it is answered. */
export async function sendChat(caller: AxonProcess, headers: Record<string, string> = {}): Promise<void> {
  const response = await fetch(`${caller.url}/api/v1/near_net/streaming_chat`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ user_message: { text: "What do you see?" }, sly_data: { password: "sly-hunter2" } }),
  });
  const body = await response.text();
  if (response.status !== 200 || !body.includes("AGENT_FRAMEWORK")) throw new Error(`the chat did not answer: ${response.status} ${body}`);
}
