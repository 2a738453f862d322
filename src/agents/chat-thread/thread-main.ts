import os from "node:os";
import { parentPort, workerData } from "node:worker_threads";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ChatContextSchema, ChatMessageSchema } from "../../gen/neuro_san/api/grpc/chat_pb.js";
import { MimeDataSchema } from "../../gen/neuro_san/api/grpc/mime_data_pb.js";
import { agentNotFound } from "../../errors.js";
import { createLogger } from "../../logger.js";
import { createAgentRuntime, type ConfiguredRuntime } from "../configured-runtime.js";
import { AgentRegistry } from "../registry.js";
import { filterChatMessages } from "../filters.js";
import type { AgentNetwork } from "../agent-network.js";
import { Batches } from "./batches.js";
import { ThreadHolds } from "./thread-holds.js";
import type { ChatThreadSettings, Instruction, Report } from "./protocol.js";
import { fromWireError, toWireError } from "./wire-error.js";
import type { DeployedNetwork, TemporaryDeployment } from "../temporary-networks.js";
import { startTracing } from "../../telemetry/start.js";
import { flushTraces } from "../../telemetry/tracing.js";
import { runInCarriedTrace } from "../../telemetry/thread-context.js";
import { onLlmCall } from "../../telemetry/llm-calls.js";

/*
 * The chat thread: StreamingChat and agent.chat operations run their turns here, on the same agent runtime the server
 * builds, so their CPU (the runtime, the LLM SDKs, protobuf) is not spent on the loop that serves requests. It keeps
 * its own registry of the same manifest, reloaded as the server's is; its environment is the server's (the Worker's
 * `env`).
 */

const { config, logLevel } = workerData as ChatThreadSettings;
// Chats take the CPU the serving loop leaves: a core both want goes to the loop first, so List, submits and health
// checks answer while agents work. Only on Linux is a thread's priority its own (elsewhere this would be the process's).
if (process.platform === "linux") os.setPriority(5);
const port = parentPort!;
const reports = new Batches<Report>((batch) => port.postMessage(batch));
const send = (report: Report) => reports.push(report);
// One log stream: records go to the server's logger, which writes them where it writes its own.
const logger = createLogger(logLevel, { write: (record: string) => send({ kind: "log", record }) });
// The server's /metrics counts the model calls made here: a count rides with the chat's next messages rather than
// waking the serving loop on its own.
onLlmCall((record) => reports.pushLate({ kind: "llm-call", record }));

// The thread exports its own spans (the SDK is per thread), under the trace each chat's start carries.
await startTracing(process.env);

const { manifestFile, projectRoot, toolPath, toolboxInfoFile, mcpInfoFile, llmInfoFile } = config;
const chats = new Map<number, AbortController>();
let registry: AgentRegistry;
let runtime: ConfiguredRuntime;
try {
  // No logger: the server's registry already reports the same files' problems.
  registry = await AgentRegistry.load({
    ...{ manifestFile, projectRoot, toolPath, toolboxInfoFile, mcpInfoFile, llmInfoFile, environment: process.env },
    // The server judges the temporary networks' expiry, by its own clock, before a chat reaches this thread: here one
    // is served until the server's next set leaves it out.
    clock: { now: () => new Date(0) },
  });
  if (config.manifestUpdatePeriodSeconds > 0) registry.watch(config.manifestUpdatePeriodSeconds);
  const holds = new ThreadHolds(send);
  runtime = createAgentRuntime(config, registry, process.env, logger, holds, deployOnTheServer);
  port.on("message", (instructions: Instruction[]) => {
    for (const instruction of instructions) {
      if (instruction.kind === "start") void runInCarriedTrace(instruction.trace, () => run(instruction));
      else if (instruction.kind === "temporary-networks-deployed") deployments.get(instruction.request)?.resolve(instruction.networks);
      else if (instruction.kind === "temporary-networks-refused") deployments.get(instruction.request)?.reject(fromWireError(instruction.error));
      else if (instruction.kind === "cancel") chats.get(instruction.id)?.abort();
      else if (instruction.kind === "hold-pending" || instruction.kind === "held") holds.answer(instruction);
      else if (instruction.kind === "temporary-networks") registry.setTemporaryNetworks(instruction.networks);
      else void runtime.close().finally(() => send({ kind: "closed" }));
    }
  });
  send({ kind: "ready" });
} catch (error) {
  send({ kind: "unready", error: toWireError(error) });
  reports.flush();
  port.close(); // nothing else keeps the thread: it ends
}

/** A coded tool's Reservationist deploys on the server, which keeps temporary networks in its database. */
const deployments = new Map<number, { resolve(networks: DeployedNetwork[]): void; reject(error: Error): void }>();
let lastDeployment = 0;
function deployOnTheServer(owner: string, networks: TemporaryDeployment[]): Promise<DeployedNetwork[]> {
  const request = ++lastDeployment;
  return new Promise<DeployedNetwork[]>((resolve, reject) => {
    deployments.set(request, { resolve, reject });
    send({ kind: "deploy-temporary-networks", request, owner, deployments: networks });
  }).finally(() => deployments.delete(request));
}

async function run(turn: Extract<Instruction, { kind: "start" }>): Promise<void> {
  const { id } = turn;
  const cancel = new AbortController();
  chats.set(id, cancel);
  try {
    let messages;
    try {
      messages = await runtime.start({
        network: await servedNetwork(turn.network),
        text: turn.text,
        mimeData: turn.mimeData.map((bytes) => fromBinary(MimeDataSchema, bytes)),
        slyData: turn.slyData,
        chatContext: turn.chatContext && fromBinary(ChatContextSchema, turn.chatContext),
        metadata: turn.metadata,
        signal: cancel.signal,
        ...(turn.clientId === undefined ? {} : { clientId: turn.clientId }),
      });
    } catch (error) {
      return send({ kind: "refused", id, error: toWireError(error) });
    }
    send({ kind: "started", id });
    try {
      const passed = turn.filter === undefined ? messages : filterChatMessages(messages, turn.filter);
      for await (const message of passed) send({ kind: "message", id, message: toBinary(ChatMessageSchema, message) });
      send({ kind: "ended", id });
    } catch (error) {
      send({ kind: "failed", id, error: toWireError(error) });
    }
  } finally {
    chats.delete(id);
    // The thread may be ended at any moment: a finished chat's spans leave now.
    void flushTraces();
  }
}

/** The server found the network in its registry; if this one has not reloaded yet, it catches up once. */
async function servedNetwork(name: string): Promise<AgentNetwork> {
  const network = registry.get(name) ?? ((await registry.reloadIfChanged()) ? registry.get(name) : undefined);
  if (network === undefined) throw agentNotFound(name);
  return network;
}
