import { Worker } from "node:worker_threads";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { symbols } from "pino";
import { AxonError, Code } from "../../errors.js";
import { ChatContextSchema, ChatMessageSchema, type ChatMessage } from "../../gen/neuro_san/api/grpc/chat_pb.js";
import { MimeDataSchema } from "../../gen/neuro_san/api/grpc/mime_data_pb.js";
import type { Config } from "../../config.js";
import type { Logger } from "../../logger.js";
import { threadEntryFile } from "../../project-root.js";
import { AsyncQueue } from "../async-queue.js";
import type { ChatRunner, ChatTurn } from "../chat-runner.js";
import type { DeployTemporaryNetworks, TemporaryNetworkSpec } from "../temporary-networks.js";
import { Batches } from "./batches.js";
import type { ChatThreadSettings, Instruction, Report, WireDecision } from "./protocol.js";
import type { HeldToolCall, ToolCallDecision, ToolCallHolds, ToolCallOutcome } from "../tool-call-holds.js";
import { fromWireError, toWireError } from "./wire-error.js";
import { traceCarrier } from "../../telemetry/thread-context.js";
import { reportLlmCall } from "../../telemetry/llm-calls.js";

const threadEntry = threadEntryFile("agents/chat-thread");
/** How long the thread may take to end its Python workers before it is terminated anyway. */
const closeGraceMs = 3000;

export interface ChatThreadOptions {
  config: Config;
  /** The server's environment: the thread's process.env, so network files, LLM keys and coded tools read the same. */
  env: NodeJS.ProcessEnv;
  /** The thread's records are written to this logger's destination, at its level. */
  logger: Logger;
  /** Where the thread's coded tools deploy temporary networks (the server's database); without it they cannot. */
  deployTemporaryNetworks?: DeployTemporaryNetworks;
}

/** What a held tool call's decision leaves on this side: the request to withdraw, the approval to finish. */
interface HeldCall {
  withdraw: AbortController;
  finish?: (outcome: ToolCallOutcome) => void;
}

/**
 * Runs chats on a worker thread of their own, so their CPU does not hold the loop that serves requests. The thread
 * starts with the first chat (never on the start-up path) and again with the first chat after it died; a chat the
 * thread took with it fails as CHAT_THREAD_ENDED. `start` keeps the ChatRunner contract: the thread says whether the
 * turn started or was refused before any message comes.
 */
export class ChatThread implements ChatRunner {
  private thread: Promise<RunningThread> | undefined;
  private holds: ToolCallHolds | undefined;
  /** The temporary networks the server serves: a thread started later gets them before its first chat. */
  private temporaryNetworks: TemporaryNetworkSpec[] = [];

  constructor(private readonly options: ChatThreadOptions) {}

  /** Where the thread's held tool calls are decided: the broker, which starts after the thread is made. */
  holdToolCallsWith(holds: ToolCallHolds): void {
    this.holds = holds;
  }

  async start(turn: ChatTurn): Promise<AsyncIterable<ChatMessage>> {
    const thread = await (this.thread ??= this.spawn());
    return thread.start(turn);
  }

  /** Serves these temporary networks in the thread too; posted before any chat started after this call. */
  setTemporaryNetworks(networks: TemporaryNetworkSpec[]): void {
    this.temporaryNetworks = networks;
    void this.thread?.then((thread) => thread.setTemporaryNetworks(networks), () => undefined);
  }

  /** Ends the thread; chats still running fail as CHAT_THREAD_ENDED. */
  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    await (await thread?.catch(() => undefined))?.close();
  }

  private spawn(): Promise<RunningThread> {
    const spawning = RunningThread.spawn(this.options, () => this.holds, () => {
      if (this.thread === spawning) this.thread = undefined;
    }).then((thread) => {
      thread.setTemporaryNetworks(this.temporaryNetworks);
      return thread;
    });
    spawning.catch(() => {
      if (this.thread === spawning) this.thread = undefined;
    });
    return spawning;
  }
}

interface RunningChat {
  /** Settles when the thread says the turn started or was refused. */
  started: { resolve(): void; reject(error: Error): void };
  messages: AsyncQueue<ChatMessage>;
  /** Stops forwarding the turn's cancellation. */
  detach(): void;
}

class RunningThread {
  private readonly chats = new Map<number, RunningChat>();
  private readonly held = new Map<number, HeldCall>();
  private readonly instructions = new Batches<Instruction>((batch) => {
    if (!this.ended) this.worker.postMessage(batch);
  });
  private lastId = 0;
  private ended = false;

  static async spawn(options: ChatThreadOptions, holds: () => ToolCallHolds | undefined, onEnd: () => void): Promise<RunningThread> {
    const { config, env, logger } = options;
    const settings: ChatThreadSettings = { config, logLevel: logger.level };
    const worker = new Worker(threadEntry, { workerData: settings, env });
    // The destination the server logger writes to: the thread's records, serialized there, join the same stream.
    const log = (logger as unknown as Record<symbol, { write(record: string): unknown }>)[symbols.streamSym]!;
    const thread = new RunningThread(worker, log, logger, holds, onEnd, options.deployTemporaryNetworks);
    try {
      await thread.ready;
    } catch (error) {
      await worker.terminate();
      throw error;
    }
    return thread;
  }

  private readonly ready: Promise<void>;
  private closedReport!: () => void;
  private readonly closed = new Promise<void>((resolve) => (this.closedReport = resolve));

  private constructor(
    private readonly worker: Worker,
    log: { write(record: string): unknown },
    private readonly logger: Logger,
    private readonly holds: () => ToolCallHolds | undefined,
    onEnd: () => void,
    private readonly deployTemporaryNetworks: DeployTemporaryNetworks | undefined,
  ) {
    let crash: Error | undefined;
    let readied: { resolve(): void; reject(error: Error): void };
    this.ready = new Promise((resolve, reject) => (readied = { resolve, reject }));
    worker.on("message", (reports: Report[]) => {
      for (const report of reports) {
        if (report.kind === "log") log.write(report.record);
        else if (report.kind === "llm-call") reportLlmCall(report.record);
        else if (report.kind === "ready") readied.resolve();
        else if (report.kind === "unready") readied.reject(fromWireError(report.error));
        else if (report.kind === "closed") this.closedReport();
        else if (report.kind === "hold") this.hold(report.hold, report.call);
        else if (report.kind === "withdraw") this.held.get(report.hold)?.withdraw.abort(new Error("the chat was cancelled"));
        else if (report.kind === "hold-finished") this.finishHeld(report.hold, report.outcome);
        else if (report.kind === "deploy-temporary-networks") this.deploy(report);
        else this.settle(report);
      }
    });
    worker.on("error", (error) => (crash = error));
    worker.on("exit", (code) => {
      this.ended = true;
      onEnd();
      const cause = crash ?? new Error(`the chat thread exited with code ${code}`);
      readied.reject(cause);
      if (this.chats.size > 0) logger.error({ err: cause, chats: this.chats.size }, "the chat thread ended with chats running");
      for (const [id, chat] of this.chats) this.finish(id, chat, chatThreadEnded(cause));
      // Held calls end with the thread: a waiting request is withdrawn, an approved call that ran is failed.
      for (const call of this.held.values()) {
        if (call.finish) call.finish({ ok: false, message: "the chat thread ended before the tool call finished" });
        else call.withdraw.abort(cause);
      }
      this.held.clear();
    });
    // Idle, the thread does not keep the process alive; a chat in flight does.
    worker.unref();
  }

  async start(turn: ChatTurn): Promise<AsyncIterable<ChatMessage>> {
    if (this.ended) throw chatThreadEnded();
    const id = ++this.lastId;
    const cancel = () => this.instructions.push({ kind: "cancel", id });
    // The execution worker hands all its executions one signal: a listener per chat would pile up on it (and warn
    // past ten), while a signal of the chat's own, following it, holds its one listener.
    const signal = AbortSignal.any([turn.signal]);
    const messages = new AsyncQueue<ChatMessage>();
    const started = new Promise<void>((resolve, reject) => {
      this.chats.set(id, { started: { resolve, reject }, messages, detach: () => signal.removeEventListener("abort", cancel) });
    });
    if (this.chats.size === 1) this.worker.ref();
    this.instructions.push({
      kind: "start",
      id,
      network: turn.network.name,
      text: turn.text,
      mimeData: turn.mimeData.map((mime) => toBinary(MimeDataSchema, mime)),
      slyData: turn.slyData,
      chatContext: turn.chatContext && toBinary(ChatContextSchema, turn.chatContext),
      metadata: turn.metadata,
      trace: traceCarrier(),
      clientId: turn.clientId,
      filter: turn.filter,
    });
    if (signal.aborted) cancel();
    else signal.addEventListener("abort", cancel, { once: true });
    await started;
    return messages;
  }

  setTemporaryNetworks(networks: TemporaryNetworkSpec[]): void {
    if (!this.ended) this.instructions.push({ kind: "temporary-networks", networks });
  }

  /** The thread first ends its Python workers: processes, which a terminated thread would leave running. */
  async close(): Promise<void> {
    if (this.ended) return;
    this.instructions.push({ kind: "close" });
    this.instructions.flush();
    const timer = setTimeout(() => this.closedReport(), closeGraceMs);
    await this.closed;
    clearTimeout(timer);
    await this.worker.terminate();
  }

  /** Deploys what a tool of the thread reserved, and answers the thread once they are served (or with why not). */
  private deploy({ request, owner, deployments }: Extract<Report, { kind: "deploy-temporary-networks" }>): void {
    const deploy = this.deployTemporaryNetworks ?? (() => Promise.reject(new AxonError(Code.FailedPrecondition, "RESERVATIONS_UNAVAILABLE", "this process keeps no temporary networks")));
    void deploy(owner, deployments).then(
      (networks) => this.instructions.push({ kind: "temporary-networks-deployed", request, networks }),
      (error: unknown) => {
        // What the tool is told goes on to an LLM: a storage failure's own words stay in the log.
        if (!(error instanceof AxonError)) this.logger.error({ err: error, owner }, "temporary networks could not be deployed");
        const refusal = error instanceof AxonError ? error : new AxonError(Code.Unavailable, "TEMPORARY_NETWORKS_UNAVAILABLE", "the temporary networks could not be stored");
        this.instructions.push({ kind: "temporary-networks-refused", request, error: toWireError(refusal) });
      },
    );
  }

  /** A tool call the thread holds: decided here, where the broker is; no broker, no approval. */
  private hold(hold: number, call: HeldToolCall): void {
    const entry: HeldCall = { withdraw: new AbortController() };
    this.held.set(hold, entry);
    const holds = this.holds();
    const decided = holds === undefined
      ? Promise.resolve<ToolCallDecision>({ approved: false, code: "operation_unavailable", message: "no operator can approve tool calls on this server" })
      : holds.hold(call, entry.withdraw.signal, (requestId) => this.instructions.push({ kind: "hold-pending", hold, requestId }));
    void decided
      .catch((error: unknown): ToolCallDecision => ({
        approved: false,
        code: error instanceof AxonError ? error.reason.toLowerCase() : "operation_unavailable",
        message: error instanceof Error ? error.message : String(error),
      }))
      .then((decision) => {
        if (decision.approved) entry.finish = decision.finish;
        else this.held.delete(hold);
        const wire: WireDecision = decision.approved ? { approved: true, arguments: decision.arguments } : decision;
        this.instructions.push({ kind: "held", hold, decision: wire });
      });
  }

  private finishHeld(hold: number, outcome: ToolCallOutcome): void {
    this.held.get(hold)?.finish?.(outcome);
    this.held.delete(hold);
  }

  private settle(report: Exclude<Report, { kind: "log" | "llm-call" | "ready" | "unready" | "closed" | "deploy-temporary-networks" | "hold" | "withdraw" | "hold-finished" }>): void {
    const chat = this.chats.get(report.id);
    if (chat === undefined) return;
    switch (report.kind) {
      case "started":
        return chat.started.resolve();
      case "message":
        return chat.messages.push(fromBinary(ChatMessageSchema, report.message));
      case "ended":
        return this.finish(report.id, chat);
      case "refused":
      case "failed":
        return this.finish(report.id, chat, fromWireError(report.error));
    }
  }

  /** The chat's last word: its messages end (or fail), and a turn still waiting to start is refused. */
  private finish(id: number, chat: RunningChat, error?: Error): void {
    this.chats.delete(id);
    if (this.chats.size === 0) this.worker.unref();
    chat.detach();
    if (error === undefined) return chat.messages.end();
    chat.started.reject(error);
    chat.messages.fail(error);
  }
}

function chatThreadEnded(cause?: Error): AxonError {
  return new AxonError(Code.Unavailable, "CHAT_THREAD_ENDED", "the chat thread ended before the chat finished", { cause });
}
