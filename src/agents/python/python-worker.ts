import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { AxonError, Code } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { projectRoot } from "../../project-root.js";

/** runner.py stays a source file: found from the checkout, whether Axon runs from src/ or from dist/. */
export const runnerFile = path.join(projectRoot, "src", "agents", "python", "runner.py");

export interface PythonSettings {
  /** `AXON_PYTHON`: a command on PATH or a virtualenv's `bin/python`. */
  command: string;
  /** Where tools are imported from, first on the worker's sys.path. */
  importRoots: string[];
  /** How long a cancelled call may take to end before its worker is killed. */
  cancelGraceMs: number;
}

/** What one Python call runs: a coded tool, a toolbox library tool's LangChain class, or a hook of a network's middleware. */
export type PythonTarget = ({ args: JsonObject } & (CodedToolTarget | LibraryToolTarget)) | MiddlewareTarget;

/**
 * One hook of an AgentMiddleware instance (runner.py's protocol says which hooks and what each answers); `reservations`
 * is the entry's `allow.reservations`.
 */
export interface MiddlewareTarget {
  middleware: { class: string; args: JsonObject; instance: string; origin: JsonObject[]; reservations: boolean };
  hook: string;
  payload: JsonObject;
}

export interface CodedToolTarget {
  module: string;
  file: string;
  className: string;
  /** The agent spec of the tool, as its network file has it: neuro-san's `agent_tool_spec`. */
  spec?: JsonObject;
}

export interface LibraryToolTarget {
  /** `pkg.module.Class`, imported from the interpreter's sys.path. */
  library: string;
  /** The constructor's keyword arguments: the entry's `args` with the agent's over them. */
  settings: JsonObject;
  /** A toolkit's tool, by its own name; absent, the class's only tool. */
  tool?: string;
  /** Answers the tools' descriptions as JSON (see DescribedLibraryTools) instead of calling one. */
  describe?: true;
}

/** One call as runner.py's protocol carries it. */
export type PythonCall = PythonTarget & {
  /** The chat whose values JSON cannot carry the worker keeps between calls. */
  chat: string;
  /** Sent to a coded tool only: neuro-san gives a library tool no sly_data. */
  slyData: JsonObject;
};

/** What a tool changed in sly_data: applied to the chat's own dict, whether the tool answered or raised. */
export interface SlyDataChanges {
  set: JsonObject;
  delete: string[];
}

/** Applies what Python code changed to the chat's own dict. */
export function applySlyDataChanges(slyData: JsonObject, changes: SlyDataChanges): void {
  for (const key of changes.delete) delete slyData[key];
  Object.assign(slyData, changes.set);
}

export interface PythonAnswer {
  result: string;
  slyData: SlyDataChanges;
}

/** What of a failed callback crosses to Python: an AxonError's reason, else the error's name; and its message. */
function callbackError(error: unknown): JsonObject {
  if (error instanceof AxonError) return { type: error.reason, message: error.message };
  if (error instanceof Error) return { type: error.name, message: error.message };
  return { type: "Error", message: String(error) };
}

/** The tool raised: its exception's type and message for the chat; its traceback for the log only. */
export class PythonToolError extends AxonError {
  constructor(
    readonly type: string,
    message: string,
    readonly traceback: string,
    readonly slyData: SlyDataChanges,
  ) {
    super(Code.Unknown, "CODED_TOOL_RAISED", `${type}: ${message}`);
  }
}

/**
 * What Python code running for one call may ask of Axon, by name: JSON arguments in, JSON out (or a thrown error, which
 * the Python side raises as AxonCallbackError with its reason and message). `signal` aborts when the Python side stops
 * waiting (its task was cancelled) or the call ends.
 */
export type CallbackHandlers = Readonly<Record<string, (args: JsonObject, signal: AbortSignal) => Promise<JsonValue>>>;

interface PendingCall {
  chat: string;
  /** Set once its chat was ended while it ran: what it leaves of the chat is ended when it answers. */
  chatEnded?: true;
  signal: AbortSignal;
  resolve(answer: PythonAnswer): void;
  reject(error: Error): void;
  progress(structure: JsonObject): void;
  callbacks: CallbackHandlers;
  /** The call's callback requests Axon is still answering, by request id. */
  requests: Map<number, AbortController>;
  /** Set once the call was cancelled: the caller has moved on, and the worker has `cancelGraceMs` to end it. */
  graceTimer?: NodeJS.Timeout;
}

type WorkerLine =
  | { ready: true; python: string; neuro_san: string }
  | { progress: number; structure: JsonObject }
  | { done: number; result: string; sly_data: SlyDataChanges; chat_kept?: boolean }
  | { failed: number; type: string; message: string; traceback: string; sly_data: SlyDataChanges; chat_kept?: boolean }
  | { cancelled: number }
  | { request: number; call: number; name: string; args: JsonObject }
  | { cancel_request: number };

/**
 * One long-lived Python process running runner.py, many calls in flight over its pipes (one JSON line per message).
 * When it ends, for any reason, only the calls it held fail; the pool starts another for the next call.
 */
export class PythonWorker {
  private readonly calls = new Map<number, PendingCall>();
  /** The chats whose last call answered that the process still holds something of them (see `endChat`). */
  private readonly keptChats = new Set<string>();
  private lastId = 0;
  private pending = "";
  private outgoing: string[] = [];
  private ended: Error | undefined;
  /** Resolves once the process has exited. */
  readonly exited: Promise<void>;
  /** Chats bound to this worker (the pool balances on it). */
  chats = 0;

  constructor(
    private readonly settings: PythonSettings,
    private readonly logger: Logger,
  ) {
    const child: ChildProcess = spawn(settings.command, [runnerFile, "serve", ...settings.importRoots], { stdio: ["pipe", "pipe", "pipe"] });
    this.child = child;
    child.stdin!.on("error", () => {}); // a worker that died: its exit says so
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => this.read(chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      for (const line of chunk.split("\n")) if (line.trim() !== "") logger.info({ pythonWorker: child.pid, line }, "python worker output");
    });
    let startError: Error | undefined;
    child.on("error", (error) => (startError = error));
    this.exited = new Promise((resolve) =>
      child.on("close", (code, signal) => {
        const how = startError
          ? `could not be started with ${settings.command} (${startError.message})`
          : `exited (${signal ?? `code ${code}`})`;
        this.end(new AxonError(Code.Unavailable, "PYTHON_WORKER_ENDED", `the Python worker ${how} before the tool answered`));
        resolve();
      }),
    );
    // An idle worker does not keep Axon running; a call in flight does.
    this.unref();
  }

  private readonly child: ChildProcess;

  get alive(): boolean {
    return this.ended === undefined;
  }

  /** Calls in flight. */
  get load(): number {
    return this.calls.size;
  }

  call(call: PythonCall, progress: (structure: JsonObject) => void, signal: AbortSignal, callbacks: CallbackHandlers = {}): Promise<PythonAnswer> {
    if (this.ended) return Promise.reject(this.ended);
    signal.throwIfAborted();
    const id = ++this.lastId;
    const { chat } = call;
    const answer = new Promise<PythonAnswer>((resolve, reject) => this.calls.set(id, { chat, signal, resolve, reject, progress, callbacks, requests: new Map() }));
    if (this.calls.size === 1) this.ref();
    const target: JsonObject =
      "middleware" in call
        ? { middleware: call.middleware, hook: call.hook, payload: call.payload, sly_data: call.slyData }
        : "library" in call
          ? { library: call.library, settings: call.settings, ...(call.tool === undefined ? {} : { tool: call.tool }), ...(call.describe ? { describe: true } : {}), args: call.args }
          : { module: call.module, file: call.file, class: call.className, sly_data: call.slyData, ...(call.spec === undefined ? {} : { spec: call.spec }), args: call.args };
    this.send({ call: id, chat, ...target });
    return answer;
  }

  /** Cancels the calls in flight under `signal` (the chat's: one listener for all its calls, see PythonChat). */
  cancelCalls(signal: AbortSignal): void {
    for (const [id, call] of this.calls) if (call.signal === signal) this.cancel(id, signal.reason);
  }

  /**
   * Ends a chat the process may still hold something of: one whose every call answered that the worker kept nothing of
   * it (runner.py's `chat_kept`) was forgotten there already, and costs the process no wake-up more.
   */
  endChat(chat: string): void {
    const running = [...this.calls.values()].filter((call) => call.chat === chat);
    for (const call of running) call.chatEnded = true;
    if ((this.keptChats.delete(chat) || running.length > 0) && !this.ended) this.send({ end_chat: chat });
  }

  /** Ends the process: closing its stdin lets it exit by itself; `kill` does not wait. */
  async close(graceMs: number): Promise<void> {
    this.child.stdin!.end();
    const timer = setTimeout(() => this.kill(), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }

  /** The caller moves on at once; a worker that does not end the call within the grace period is killed. */
  private cancel(id: number, reason: unknown): void {
    const call = this.calls.get(id);
    if (call === undefined || call.graceTimer !== undefined) return;
    this.send({ cancel: id });
    call.reject(reason instanceof Error ? reason : new Error(String(reason)));
    call.graceTimer = setTimeout(() => {
      this.logger.warn({ pythonWorker: this.child.pid, graceMs: this.settings.cancelGraceMs }, "a Python coded tool ignored its cancellation: killing its worker");
      this.kill();
    }, this.settings.cancelGraceMs);
  }

  /** Lines sent in one turn of the event loop leave in one write: a burst of calls costs one system call. */
  private send(message: JsonObject): void {
    if (this.outgoing.push(JSON.stringify(message)) > 1) return;
    queueMicrotask(() => {
      this.child.stdin!.write(`${this.outgoing.join("\n")}\n`);
      this.outgoing = [];
    });
  }

  private read(chunk: string): void {
    const lines = (this.pending + chunk).split("\n");
    this.pending = lines.pop()!;
    for (const line of lines) this.settle(JSON.parse(line) as WorkerLine);
  }

  private settle(line: WorkerLine): void {
    if ("ready" in line) {
      this.logger.debug({ pythonWorker: this.child.pid, python: line.python, neuroSan: line.neuro_san }, "python worker ready");
      return;
    }
    if ("progress" in line) return this.calls.get(line.progress)?.progress(line.structure);
    if ("request" in line) return this.answer(line);
    if ("cancel_request" in line) {
      for (const call of this.calls.values()) call.requests.get(line.cancel_request)?.abort(new Error("the Python side stopped waiting"));
      return;
    }
    const id = "done" in line ? line.done : "failed" in line ? line.failed : line.cancelled;
    const call = this.calls.get(id);
    if (call === undefined) return;
    this.calls.delete(id);
    // A cancelled call may have left something of its chat behind: only an answer says what the worker kept.
    const kept = "cancelled" in line || line.chat_kept !== false;
    if (call.chatEnded) {
      if (kept) this.send({ end_chat: call.chat });
    } else if (kept) this.keptChats.add(call.chat);
    else this.keptChats.delete(call.chat);
    clearTimeout(call.graceTimer);
    for (const request of call.requests.values()) request.abort(new Error("the Python call ended"));
    if (this.calls.size === 0) this.unref();
    if ("done" in line) call.resolve({ result: line.result, slyData: line.sly_data });
    else if ("failed" in line) call.reject(new PythonToolError(line.type, line.message, line.traceback, line.sly_data));
    // A cancelled call was rejected when it was cancelled.
  }

  /**
   * A callback request of a call in flight, answered on the same pipes: `{"response": id, "result": ...}`, or
   * `{"response": id, "error": {"type", "message"}}` when the handler failed, is unknown, or the call has ended. A
   * request the Python side cancelled gets no answer.
   */
  private answer(line: { request: number; call: number; name: string; args: JsonObject }): void {
    const call = this.calls.get(line.call);
    const handler = call !== undefined && Object.hasOwn(call.callbacks, line.name) ? call.callbacks[line.name] : undefined;
    if (call === undefined || call.graceTimer !== undefined || handler === undefined) {
      const message = call === undefined || call.graceTimer !== undefined ? "the call has ended" : `Axon answers no request named ${line.name} here`;
      this.send({ response: line.request, error: { type: "UNKNOWN_REQUEST", message } });
      return;
    }
    const request = new AbortController();
    call.requests.set(line.request, request);
    const signal = AbortSignal.any([call.signal, request.signal]);
    void Promise.resolve()
      .then(() => handler(line.args, signal))
      .then(
        (result) => ({ response: line.request, result }),
        (error: unknown) => ({ response: line.request, error: callbackError(error) }),
      )
      .then((reply: JsonObject) => {
        if (call.requests.delete(line.request) && !request.signal.aborted && !this.ended) this.send(reply);
      });
  }

  private end(error: Error): void {
    this.ended = error;
    for (const call of this.calls.values()) {
      clearTimeout(call.graceTimer);
      for (const request of call.requests.values()) request.abort(error);
      call.reject(error);
    }
    this.calls.clear();
  }

  private ref(): void {
    for (const handle of [this.child, this.child.stdout, this.child.stderr] as { ref?(): void }[]) handle.ref?.();
  }

  private unref(): void {
    for (const handle of [this.child, this.child.stdout, this.child.stderr] as { unref?(): void }[]) handle.unref?.();
  }
}
