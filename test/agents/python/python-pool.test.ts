import { existsSync, mkdirSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { JsonObject } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createLogger } from "../../../src/logger.js";
import { PythonPool, type PythonChat } from "../../../src/agents/python/python-pool.js";
import { PythonToolError, type CallbackHandlers } from "../../../src/agents/python/python-worker.js";
import { AxonError, Code } from "../../../src/errors.js";
import { projectRoot } from "../../support/server.js";
import { until, within } from "../../support/wait.js";

const fixtures = path.join(projectRoot, "test/fixtures/python");
// A signal of its own for each call, as each request has: one signal shared by every pool would gather a listener per pool.
const never = (): AbortSignal => new AbortController().signal;

/** The Python worker pool on its own, calling the fixture tools of network python_tools as the activation does. */
describe("Python workers", () => {
  let pool: PythonPool;
  let chat: PythonChat;
  let markers: string;
  const progress: JsonObject[] = [];

  // The chat's own sly_data dict, as a session holds it: the worker keeps private values per dict.
  let slyData: JsonObject;
  const call = (module: string, className: string, args: JsonObject = {}, signal = never()) =>
    chat.call(
      slyData,
      { module: `coded_tools.python_tools.${module}`, file: path.join(fixtures, "coded_tools/python_tools", `${module}.py`), className, args },
      (structure) => progress.push(structure),
      signal,
    );

  // One pool for the file, as a server keeps one: each test is a chat of its own.
  beforeAll(() => {
    pool = new PythonPool({ command: "python3", workers: 2, cancelGraceMs: 300, importRoots: [fixtures] }, createLogger("silent"));
  });
  afterAll(() => pool.close());
  beforeEach(() => {
    chat = pool.chat();
    markers = mkdtempSync(path.join(os.tmpdir(), "python-markers-"));
    progress.length = 0;
    slyData = {};
  });
  afterEach(() => chat.close());

  it("runs a synchronous invoke() and renders a dict result as neuro-san does, with str()", async () => {
    slyData = { calls: 1 };
    const answer = await call("calculator", "Adder", { x: 2, y: 3 });
    expect(answer.result).toBe("{'total': 5}");
    expect(answer.slyData).toEqual({ set: { last_total: 5, calls: 2 }, delete: [] });
  });

  it("prefers async_invoke() and gives the tool origin_str from its origin", async () => {
    const origin = [
      { tool: "Front", instantiation_index: 1 },
      { tool: "Echo", instantiation_index: 2 },
    ];
    expect((await call("calculator", "AsyncEcho", { origin, text: "hi" })).result).toBe("Front.Echo-02 said hi");
  });

  it("streams what the tool reports through progress_reporter", async () => {
    expect((await call("calculator", "Progress")).result).toBe("reported");
    expect(progress).toEqual([{ step: "halfway" }]);
  });

  it("reports deleted keys and changes inside nested values", async () => {
    slyData = { secret: "s", nested: { kept: 1 } };
    const answer = await call("calculator", "Forgetter");
    expect(answer).toEqual({ result: "None", slyData: { set: { nested: { kept: 1, seen: true } }, delete: ["secret"] } });
  });

  it("keeps what a tool prints out of the protocol", async () => {
    expect((await call("calculator", "Printer")).result).toBe("printed");
  });

  it("refuses a class that is not a CodedTool, as neuro-san does", async () => {
    await expect(call("calculator", "NotATool")).rejects.toThrow("TypeError: coded_tools.python_tools.calculator.NotATool is not a CodedTool");
  });

  it("turns an exception into a tool error with its type and message, the traceback apart, sly_data written before it kept", async () => {
    const error = (await call("failures", "Raiser").catch((caught: unknown) => caught)) as PythonToolError;
    expect(error).toBeInstanceOf(PythonToolError);
    expect(error.message).toBe("ValueError: the input was bad");
    expect(error.traceback).toContain('raise ValueError("the input was bad")');
    expect(error.slyData).toEqual({ set: { written_before_raising: true }, delete: [] });
  });

  it("names the module and the interpreter when a tool cannot be imported", async () => {
    const missing = chat.call({}, { module: "coded_tools.python_tools.absent", file: path.join(fixtures, "absent.py"), className: "Absent", args: {} }, () => {}, never());
    await expect(missing).rejects.toThrow(/FileNotFoundError/);
    await expect(call("broken", "Broken")).rejects.toThrow(/SyntaxError: .*broken\.py, line 5/);
  });

  it("keeps values JSON cannot carry in the worker for later tools of the chat, and closes them when the chat ends", async () => {
    const marker = path.join(markers, "connection");
    const opened = await call("resources", "Opener", { marker });
    // Only what JSON can carry comes back.
    expect(opened.slyData).toEqual({ set: { opened: true, worker_pid: expect.any(Number) }, delete: [] });
    expect((await call("resources", "User")).result).toBe("connection is Connection");
    // Another chat does not see them.
    const other = pool.chat();
    const elsewhere = await other.call({}, { module: "coded_tools.python_tools.resources", file: path.join(fixtures, "coded_tools/python_tools/resources.py"), className: "User", args: {} }, () => {}, never());
    expect(elsewhere.result).toBe("connection is NoneType");
    other.close();
    expect(existsSync(marker)).toBe(false);
    chat.close();
    await until(() => existsSync(marker) && readFileSync(marker, "utf8") === "closed", "the connection closed");
  });

  it("runs invoke() on a thread: a blocked synchronous tool holds up no other call", async () => {
    const answers = await within(8000, Promise.all([call("resources", "Waiter"), call("resources", "Setter")]), "both calls");
    expect(answers.map((answer) => answer.result)).toEqual(["flag set", "set"]);
  });

  it("fails only the calls of a worker that dies, and the chat's next call gets a fresh worker", async () => {
    const slow = call("failures", "Sleeper", { marker: path.join(markers, "unused") });
    await expect(call("failures", "Killer")).rejects.toThrow("the Python worker exited (code 3) before the tool answered");
    await expect(slow).rejects.toThrow("the Python worker exited (code 3)");
    expect((await call("calculator", "Adder", { x: 1, y: 1 })).result).toBe("{'total': 2}");
  });

  it("cancels the tool's asyncio task: CancelledError reaches async_invoke", async () => {
    const marker = path.join(markers, "sleeper");
    const cancel = new AbortController();
    const sleeping = call("failures", "Sleeper", { marker }, cancel.signal);
    await until(() => progress.length === 1, "the tool sleeping");
    cancel.abort(new Error("the chat was cancelled"));
    await expect(sleeping).rejects.toThrow("the chat was cancelled");
    await until(() => existsSync(marker) && readFileSync(marker, "utf8") === "cancelled", "CancelledError in the tool");
    // The worker lives on.
    expect((await call("calculator", "Adder", { x: 1, y: 1 })).result).toBe("{'total': 2}");
  });

  it("kills a worker whose tool ignores its cancellation once the grace period is over", async () => {
    const cancel = new AbortController();
    const stubborn = call("failures", "Stubborn", {}, cancel.signal);
    await until(() => progress.length === 1, "the tool sleeping");
    const worker = pool["workers"].find((candidate) => candidate.load === 1);
    cancel.abort(new Error("cancelled"));
    await expect(stubborn).rejects.toThrow("cancelled");
    await within(5000, worker!.exited, "the stubborn worker killed");
    expect(worker!.alive).toBe(false);
    expect((await call("calculator", "Adder", { x: 1, y: 1 })).result).toBe("{'total': 2}");
  });

  it("imports a tool again once its file changed, without a new worker", async () => {
    const folder = mkdtempSync(path.join(os.tmpdir(), "python-root-"));
    mkdirSync(path.join(folder, "edited"));
    const file = path.join(folder, "edited", "version.py");
    const edition = (n: number) => {
      writeFileSync(file, `from neuro_san.interfaces.coded_tool import CodedTool\nclass Version(CodedTool):\n    def invoke(self, args, sly_data):\n        return "edition ${n}"\n`);
      // The worker compares modification times: make the second edition's differ, however fast it is written.
      utimesSync(file, n * 1000, n * 1000);
    };
    const edited = new PythonPool({ command: "python3", workers: 1, cancelGraceMs: 300, importRoots: [folder] }, createLogger("silent"));
    const versionChat = edited.chat();
    const version = () => versionChat.call({}, { module: "edited.version", file, className: "Version", args: {} }, () => {}, never());
    edition(1);
    expect((await version()).result).toBe("edition 1");
    edition(2);
    expect((await version()).result).toBe("edition 2");
    expect(edited["workers"]).toHaveLength(1);
    versionChat.close();
    await edited.close();
  });

  it("lets an installed neuro-san win over Axon's stand-in", async () => {
    const site = mkdtempSync(path.join(os.tmpdir(), "python-site-"));
    const write = (file: string, text: string) => {
      mkdirSync(path.dirname(path.join(site, file)), { recursive: true });
      writeFileSync(path.join(site, file), text);
    };
    write("neuro_san/__init__.py", "");
    write("neuro_san/interfaces/__init__.py", "");
    write(
      "neuro_san/interfaces/coded_tool.py",
      'class CodedTool:\n    ORIGIN = "installed"\n    async def async_invoke(self, args, sly_data):\n        raise NotImplementedError\n',
    );
    write("tools/which.py", "from neuro_san.interfaces.coded_tool import CodedTool\nclass Which(CodedTool):\n    def invoke(self, args, sly_data):\n        return CodedTool.ORIGIN\n");
    const installed = new PythonPool({ command: "python3", workers: 1, cancelGraceMs: 300, importRoots: [site] }, createLogger("silent"));
    const which = installed.chat();
    const answer = await which.call({}, { module: "tools.which", file: path.join(site, "tools/which.py"), className: "Which", args: {} }, () => {}, never());
    expect(answer.result).toBe("installed");
    which.close();
    await installed.close();
  });

  it("spreads chats over its workers, up to its size", async () => {
    const chats = [chat, pool.chat(), pool.chat()];
    await Promise.all(chats.map((each) => each.call({}, { module: "coded_tools.python_tools.calculator", file: path.join(fixtures, "coded_tools/python_tools/calculator.py"), className: "Adder", args: { x: 0, y: 0 } }, () => {}, never())));
    expect(pool["workers"].filter((worker) => worker.chats > 0)).toHaveLength(2);
    for (const each of chats.slice(1)) each.close();
  });

  it("sends no end_chat for a chat whose calls left nothing in the worker, and ends one that left a value", async () => {
    // The interpreter behind a tee: what the worker read stays on record.
    const folder = mkdtempSync(path.join(os.tmpdir(), "python-stdin-"));
    const read = path.join(folder, "stdin.jsonl");
    const command = path.join(folder, "python3-teed");
    writeFileSync(command, `#!/bin/sh\ntee "${read}" | exec python3 "$@"\n`, { mode: 0o755 });
    const teed = new PythonPool({ command, workers: 1, cancelGraceMs: 300, importRoots: [fixtures] }, createLogger("silent"));
    const resources = (className: string, args: JsonObject = {}) => ({ module: "coded_tools.python_tools.resources", file: path.join(fixtures, "coded_tools/python_tools/resources.py"), className, args });
    const plain = teed.chat();
    expect((await plain.call({}, resources("User"), () => {}, never())).result).toBe("connection is NoneType");
    plain.close();
    const keeping = teed.chat();
    const marker = path.join(markers, "connection");
    await keeping.call({}, resources("Opener", { marker }), () => {}, never());
    keeping.close();
    // The second chat's end was read once its connection is closed: the first chat's would have been read before it.
    await until(() => existsSync(marker) && readFileSync(marker, "utf8") === "closed", "the connection closed");
    const lines = readFileSync(read, "utf8").trim().split("\n").map((line) => JSON.parse(line) as JsonObject);
    const chatOf = (className: string) => lines.find((line) => line.class === className)!.chat;
    expect(lines.filter((line) => "end_chat" in line)).toEqual([{ end_chat: chatOf("Opener") }]);
    expect(chatOf("User")).not.toBe(chatOf("Opener"));
    await teed.close();
  });

  it("a missing interpreter fails the call with a clear error", async () => {
    const nowhere = new PythonPool({ command: "/nonexistent/python", workers: 1, cancelGraceMs: 100, importRoots: [fixtures] }, createLogger("silent"));
    const failing = nowhere.chat().call({}, { module: "m", file: "f", className: "C", args: {} }, () => {}, never());
    await expect(failing).rejects.toThrow("the Python worker could not be started with /nonexistent/python (spawn /nonexistent/python ENOENT)");
    await nowhere.close();
  });
});

/** Toolbox library tools whose class runs in Python: a package shaped as LangChain's, on the worker's path. */
describe("library tools in the Python workers", () => {
  const packages = path.join(projectRoot, "test/fixtures/python-packages");
  let pool: PythonPool;
  let chat: PythonChat;
  const run = (library: string, settings: JsonObject, args: JsonObject = {}, more: { tool?: string; signal?: AbortSignal } = {}) =>
    chat.call({}, { library, settings, args, ...(more.tool === undefined ? {} : { tool: more.tool }) }, () => {}, more.signal ?? never());
  const describeTools = async (library: string, settings: JsonObject) => JSON.parse((await chat.call({}, { library, settings, describe: true, args: {} }, () => {}, never())).result) as JsonObject;

  beforeAll(() => {
    pool = new PythonPool({ command: "python3", workers: 1, cancelGraceMs: 300, importRoots: [packages] }, createLogger("silent"));
  });
  afterAll(() => pool.close());
  beforeEach(() => {
    chat = pool.chat();
  });
  afterEach(() => chat.close());

  it("describes a tool by its own name, description and argument schema, and a toolkit by each of its tools", async () => {
    expect(await describeTools("fakechain.tools.Shout", {})).toEqual({
      toolkit: false,
      tools: [
        {
          name: "shout",
          description: "Says the text back in capitals.",
          parameters: { type: "object", properties: { text: { type: "string", description: "What to shout." } }, required: ["text"] },
        },
      ],
    });
    expect(await describeTools("fakechain.tools.DictionaryToolkit", { words: {} })).toEqual({
      toolkit: true,
      tools: [
        { name: "lookup", description: "Looks a word up in the dictionary.", parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] } },
        { name: "count", description: "Counts the words of the dictionary.", parameters: { type: "object", properties: {} } },
      ],
    });
  });

  it("makes the class with its settings, calls it with the arguments, and renders what is not a string as JSON", async () => {
    const answer = await run("fakechain.tools.Shout", { prefix: "> ", times: 2 }, { text: "hi" });
    expect(JSON.parse(answer.result)).toEqual({ shouted: "> HI HI", made_with: { prefix: "> ", times: 2 } });
    expect(answer.slyData).toEqual({ set: {}, delete: [] });
  });

  it("calls a toolkit's tool by its name, invoke() on a thread when it has no ainvoke()", async () => {
    const words = { axon: "a nerve fibre" };
    expect((await run("fakechain.tools.DictionaryToolkit", { words }, { word: "axon" }, { tool: "lookup" })).result).toBe("a nerve fibre");
    expect((await run("fakechain.tools.DictionaryToolkit", { words }, {}, { tool: "count" })).result).toBe("1");
    await expect(run("fakechain.tools.DictionaryToolkit", { words }, {})).rejects.toThrow(
      "ValueError: fakechain.tools.DictionaryToolkit is a toolkit of 2 tools (lookup, count): an agent with a function block stands for one tool",
    );
  });

  it("turns an exception into a tool error with its type and message, as a coded tool's", async () => {
    const error = (await run("fakechain.tools.Grumpy", {}).catch((caught: unknown) => caught)) as PythonToolError;
    expect(error).toBeInstanceOf(PythonToolError);
    expect(error.message).toBe("RuntimeError: the service said no");
    expect(error.traceback).toContain('raise RuntimeError("the service said no")');
  });

  it("names the missing module, the interpreter and the fix when the package is not installed", async () => {
    await expect(run("absent_chain.tools.Search", {})).rejects.toThrow(
      /^ModuleNotFoundError: No module named 'absent_chain' \(Python .*python.*: install the package there, or set AXON_PYTHON to an interpreter that has it\)$/,
    );
  });

  it("cancels the tool's asyncio task: CancelledError reaches ainvoke()", async () => {
    const marker = path.join(mkdtempSync(path.join(os.tmpdir(), "python-markers-")), "sleeper");
    const cancel = new AbortController();
    const sleeping = run("fakechain.tools.Sleeper", { marker }, {}, { signal: cancel.signal });
    await until(() => existsSync(marker), "the tool sleeping");
    cancel.abort(new Error("the chat was cancelled"));
    await expect(sleeping).rejects.toThrow("the chat was cancelled");
    await until(() => readFileSync(marker, "utf8") === "cancelled", "CancelledError in the tool");
  });
});

/** The callback requests: Python code of a call asks Axon by name, on the same pipes, while the call runs. */
describe("callback requests from Python", () => {
  let pool: PythonPool;
  let chat: PythonChat;
  const progress: JsonObject[] = [];
  const waits: AbortSignal[] = [];
  const handlers: CallbackHandlers = {
    echo: async (args) => ({ echoed: String(args["text"]).toUpperCase() }),
    fail: async () => {
      throw new AxonError(Code.FailedPrecondition, "TOOL_FAILED", "the tool could not run");
    },
    wait: (_args, signal) => {
      waits.push(signal);
      return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason as Error), { once: true }));
    },
  };
  const call = (className: string, args: JsonObject = {}, signal = never()) =>
    chat.call(
      {},
      { module: "coded_tools.python_tools.callbacks", file: path.join(fixtures, "coded_tools/python_tools/callbacks.py"), className, args },
      (structure) => progress.push(structure),
      signal,
      handlers,
    );

  beforeAll(() => {
    pool = new PythonPool({ command: "python3", workers: 1, cancelGraceMs: 300, importRoots: [fixtures] }, createLogger("silent"));
  });
  afterAll(() => pool.close());
  beforeEach(() => {
    chat = pool.chat();
    progress.length = 0;
    waits.length = 0;
  });
  afterEach(() => chat.close());

  it("answers a named request with JSON, which the Python code awaits", async () => {
    expect((await call("Asker", { text: "hello" })).result).toBe("HELLO");
  });

  it("answers several requests of one call in flight at once, and of calls in flight together", async () => {
    const [crowd, single] = await Promise.all([call("Crowd", { texts: ["a", "b", "c"] }), call("Asker", { text: "d" })]);
    expect(crowd.result).toBe("A B C");
    expect(single.result).toBe("D");
  });

  it("raises a name Axon does not answer, and a handler's failure, as AxonCallbackError with the reason", async () => {
    expect((await call("Refused")).result).toBe("UNKNOWN_REQUEST: Axon answers no request named no_such_request here | TOOL_FAILED: the tool could not run");
  });

  it("aborts the handler's signal when the Python side stops waiting, and the call goes on", async () => {
    expect((await call("Impatient")).result).toBe("gave up");
    expect(waits).toHaveLength(1);
    await until(() => waits[0]!.aborted, "the wait handler aborted");
  });

  it("aborts a request's handler when its call is cancelled", async () => {
    const cancel = new AbortController();
    const waiting = call("Waiter", {}, cancel.signal);
    await until(() => waits.length === 1, "the request reaching its handler");
    cancel.abort(new Error("the chat was cancelled"));
    await expect(waiting).rejects.toThrow("the chat was cancelled");
    expect(waits[0]!.aborted).toBe(true);
    expect((await call("Asker", { text: "after" })).result).toBe("AFTER");
  });

  it("answers no request of a call that was given no handlers", async () => {
    const answer = await chat.call(
      {},
      { module: "coded_tools.python_tools.callbacks", file: path.join(fixtures, "coded_tools/python_tools/callbacks.py"), className: "Refused", args: {} },
      () => {},
      never(),
    );
    expect(answer.result).toBe("UNKNOWN_REQUEST: Axon answers no request named no_such_request here | UNKNOWN_REQUEST: Axon answers no request named fail here");
  });
});
