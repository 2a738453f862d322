"""
Axon's Python worker: runs neuro-san coded tools, and the LangChain classes of toolbox library tools, for the
TypeScript server that started it. Standard library only.

    python3 runner.py serve <import root>...   one long-lived worker, many calls in flight
    python3 runner.py check                    reads {"files": [...], "modules": [...]} on stdin, answers one line:
                                               {"problems": [{"file"|"module", "line"?, "message"}]}

The import roots go first on sys.path (the folder holding AGENT_TOOL_PATH, so `coded_tools.math_guy.calculator`
imports as under neuro-san); a stand-in `neuro_san.interfaces.coded_tool` goes last, so an installed neuro-san wins.

The line protocol of `serve`: one JSON object per line each way, UTF-8, over the worker's stdin and stdout (what a
tool prints goes to stderr, never into the protocol).

  server -> worker
    {"call": id, "chat": c, "module": "coded_tools.x.y", "file": "/abs/y.py", "class": "Y", "args": {}, "sly_data": {},
     "spec": {}}               a coded tool; `spec` is its agent spec (what a BranchActivation is made with)
    {"call": id, "chat": c, "library": "pkg.mod.Tool", "settings": {}, "tool"?: "name", "args": {}}
                              a toolbox library tool: `Tool(**settings)` (a toolkit: the one of its get_tools() named
                              `tool`) made once per chat, `await tool.ainvoke(args)`; it never sees sly_data
    {"call": id, "chat": c, "library": "pkg.mod.Tool", "settings": {}, "describe": true, "args": {}}
                              answers, as `result`, the JSON {"toolkit": bool, "tools": [{name, description, parameters}]}
    {"call": id, "chat": c, "middleware": {"class": "pkg.mod.M", "args": {}, "instance": k, "origin": [],
     "reservations": false}, "hook": h, "payload": {}, "sly_data": {}}
                              a network's own AgentMiddleware (LangChain's): made once per instance key `k` with its
                              args, special args filled in (`reservations`: its entry's allow.reservations); `h` is
                              "make" (payload {"chat_history"}; answers its hooks and tools), a hook
                              (abefore_agent, abefore_model, aafter_model, aafter_agent: payload {"state"}, answers
                              {"messages"?, "jump_to"?}; awrap_model_call: payload {"request"}, answers {"message",
                              "request"}, its handler asks `model_call`; awrap_tool_call: payload {"request"}, answers
                              {"content"}, its handler asks `tool_call`) or "tool" (payload {"name", "args"}: one of
                              its own tools). Messages cross as {"role", "content", "id", "tool_calls"?, "tool_call_id"?};
                              `result` is the answer as JSON text
    {"cancel": id}            cancels the call's asyncio task (CancelledError inside async_invoke)
    {"response": r, "result": <JSON>}                                  answers a callback request (below)
    {"response": r, "error": {"type": "TOOL_FAILED", "message": "..."}}  its handler failed, is unknown, or the call ended
    {"end_chat": c}           the chat is over: its values JSON cannot carry are close()d and forgotten
  worker -> server
    {"ready": true, "python": "3.11.7", "neuro_san": "installed" | "stand-in"}      first line
    {"progress": id, "structure": {}, "content": ""}                               a tool's async_report_progress
    {"done": id, "result": "text", "sly_data": {"set": {}, "delete": []}, "chat_kept": false}
    {"failed": id, "type": "ValueError", "message": "...", "traceback": "...", "sly_data": {...}, "chat_kept": false}
                              `chat_kept`: whether the worker still holds something of the chat for end_chat to end
                              (a value JSON cannot carry, a library tool or middleware made for it, another of its
                              calls running); false, it has forgotten the chat, and a chat whose calls all answered so
                              needs no end_chat
    {"cancelled": id}
    {"request": r, "call": id, "name": "model_call", "args": {}}      a callback request (below)
    {"cancel_request": r}                                           its awaiting task was cancelled: no answer follows

Callback requests: code running for a call asks Axon something by name with JSON arguments and awaits the JSON answer,
on the same pipes, several at once (`r` counts per worker), while the call goes on: `await axon_request(name, args)`,
importable as `axon_runner.axon_request` by code the call runs. Which names Axon answers is up to each call (what a
middleware's handler or a tool may ask); an unknown name, or a failure, raises AxonCallbackError(type, message). A
cancelled call's pending requests are abandoned on both sides.

A coded tool deriving from neuro-san's BranchActivation (the installed one, or the stand-in) is made as neuro-san makes
it, `Tool(run_context, factory, args, agent_tool_spec, sly_data)`, and its `await self.use_tool(name, args, sly_data)`
is the callback request `use_tool` {"tool", "args", "sly_data"} answered {"text", "sly_data"}: Axon runs the tool of
the network, and the dict passed is updated with the sly_data it left. With the installed neuro-san, its
BranchActivation's constructor and use_tool are Axon's in this process: its own need a neuro-san server around them.

A coded tool whose spec says `allow.reservations: true`, and a middleware whose entry says so, gets neuro-san's
`reservationist` special arg (a middleware whose entry does not gets None): its deploy, on leaving `async with`, is the
callback request `deploy_reservations` {"deployments": [{"name", "lifetime_seconds",
"spec"}]} answered {"networks": [{"name", "expires_at"}]} (seconds since the epoch).

Calls of one chat come to one worker: the chat's sly_data values that JSON cannot carry (clients, connections) stay
here, keyed by the chat, and later tools of the chat get them back in their sly_data.
"""
import asyncio
import contextvars
import importlib
import importlib.util
import inspect
import json
import os
import sys
import threading
import time
import traceback
import types
import uuid
from concurrent.futures import ThreadPoolExecutor

STAND_IN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stand-in")
INSTANTIATION_START = 1
MIDDLEWARE_HOOKS = ("abefore_agent", "abefore_model", "aafter_model", "aafter_agent", "awrap_model_call", "awrap_tool_call")
SPECIAL_ARGS = ("chat_history", "origin", "origin_str", "progress_reporter", "reservationist", "sly_data")
# The worker and call id of the call the running code belongs to (each call's task has its own).
CURRENT_CALL = contextvars.ContextVar("axon_call")
# Held while a library tool or a middleware is made on a thread: two threads importing a package whose modules import
# each other can fail with _DeadlockError (as a network's two middleware made at once did with LangChain's).
MAKING = threading.Lock()


class AxonCallbackError(Exception):
    """Axon could not answer a callback request: `type` says why (an Axon reason such as TOOL_FAILED), `message` how."""

    def __init__(self, type_, message):
        super().__init__(f"{type_}: {message}")
        self.type = type_
        self.message = message


async def axon_request(name, args):
    """Asks Axon `name` with JSON `args` for the call this code runs in; returns Axon's JSON answer."""
    current = CURRENT_CALL.get(None)
    if current is None:
        raise LookupError("axon_request is only answered inside a call Axon made")
    worker, call_id = current
    return await worker.request(call_id, name, args)


def set_paths(roots):
    # The runner's own folder (sys.path[0]) is no place to import tools from.
    del sys.path[0]
    sys.path[0:0] = roots
    sys.path.append(STAND_IN)


def interpreter():
    # Empty when Python cannot tell, as when started without PATH.
    return f"Python {sys.executable}" if sys.executable else "the Python AXON_PYTHON names"


def origin_str(origin):
    """neuro-san's full name of an origin: tool names joined by dots, an index past the first as -NN."""
    parts = []
    for step in origin:
        index = step.get("instantiation_index", INSTANTIATION_START)
        parts.append(step["tool"] + (f"-{index:02d}" if index > INSTANTIATION_START else ""))
    return ".".join(parts).replace("./", "/")


def is_json(value):
    try:
        json.dumps(value, allow_nan=False)
        return True
    except (TypeError, ValueError, RecursionError):
        return False


def same(before, after):
    return type(before) is type(after) and before == after


def sly_data_changes(sent, after, private):
    """What the tool changed in sly_data, as the server applies it; values JSON cannot carry go to `private`."""
    changes = {"set": {}, "delete": [key for key in sent if key not in after]}
    for key in [key for key in private if key not in after]:
        del private[key]
    for key, value in after.items():
        if key in private and private[key] is value:
            continue
        if is_json(value):
            private.pop(key, None)
            if key not in sent or not same(sent[key], value):
                changes["set"][key] = value
        else:
            private[key] = value
            if key in sent:
                changes["delete"].append(key)
    return changes


def new_instance(class_name, args):
    """`pkg.mod.Class(**args)`, the module imported from sys.path; an arg written {"class", "args"} (an API wrapper,
    say) is made first, as neuro-san makes it."""
    module_name, _, name = class_name.rpartition(".")
    module = importlib.import_module(module_name)
    if not hasattr(module, name):
        raise AttributeError(f"module {module_name} has no class {name}")
    made = {
        key: new_instance(value["class"], value.get("args") or {}) if isinstance(value, dict) and isinstance(value.get("class"), str) else value
        for key, value in args.items()
    }
    return getattr(module, name)(**made)


def library_tools(class_name, settings):
    """(whether it is a toolkit, its tools, the instance made): a toolkit is what has get_tools()."""
    with MAKING:
        instance = new_instance(class_name, settings)
    get_tools = getattr(instance, "get_tools", None)
    return (True, list(get_tools()), instance) if callable(get_tools) else (False, [instance], instance)


def chosen_tool(class_name, tools, name):
    if name is None:
        if len(tools) == 1:
            return tools[0]
        names = ", ".join(tool.name for tool in tools)
        raise ValueError(f"{class_name} is a toolkit of {len(tools)} tools ({names}): an agent with a function block stands for one tool")
    for tool in tools:
        if tool.name == name:
            return tool
    raise ValueError(f"{class_name} has no tool named {name}")


def describe_tool(tool):
    """What the LLM is told of a LangChain tool: its own name, description and argument schema."""
    return {"name": tool.name, "description": getattr(tool, "description", "") or tool.name, "parameters": parameters_of(tool)}


def parameters_of(tool):
    """The JSON schema LangChain itself gives the LLM (convert_to_openai_function) when the tool is a LangChain tool;
    else its args_schema (a JSON schema, or a pydantic model's), else its `args` as the properties."""
    langchain = sys.modules.get("langchain_core.tools")
    if langchain is not None and isinstance(tool, langchain.BaseTool):
        from langchain_core.utils.function_calling import convert_to_openai_function  # pylint: disable=import-outside-toplevel

        return convert_to_openai_function(tool)["parameters"]
    schema = getattr(tool, "args_schema", None)
    if isinstance(schema, dict):
        return schema
    if callable(getattr(schema, "model_json_schema", None)):
        return schema.model_json_schema()
    return {"type": "object", "properties": dict(getattr(tool, "args", None) or {})}


def as_text(output):
    """A LangChain tool's output as LangChain puts it in the tool message: a string as is, anything else as JSON
    (str() when JSON cannot carry it)."""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(output)


class ProgressReporter:
    """What neuro-san hands a coded tool as args["progress_reporter"]: progress streamed as AGENT_PROGRESS."""

    def __init__(self, worker, call_id=None):
        self._worker = worker
        self._call_id = call_id

    async def async_report_progress(self, structure, content=""):
        if structure is None:
            return
        if not isinstance(structure, dict):
            raise ValueError(f"Expected dictionary, got {type(structure)}")
        # A middleware's reporter outlives a call: it reports into the call running now.
        call_id = self._call_id if self._call_id is not None else CURRENT_CALL.get((None, None))[1]
        self._worker.send({"progress": call_id, "structure": structure, "content": content or ""})


async def use_tool(tool_name, tool_args, sly_data):
    """Runs `tool_name` of the calling tool's network through Axon; `sly_data` is updated as the tool left it."""
    if sly_data is None:
        sly_data = {}
    sent = {key: value for key, value in sly_data.items() if is_json(value)}
    answer = await axon_request("use_tool", {"tool": tool_name, "args": tool_args or {}, "sly_data": sent})
    left = answer.get("sly_data") or {}
    for key in [key for key in sent if key not in left]:
        del sly_data[key]
    sly_data.update(left)
    return answer.get("text", "")


class AxonRunContext:
    """What a BranchActivation is made with as its parent run context: where in the network the call runs."""

    def __init__(self, origin):
        self._origin = origin

    def get_origin(self):
        return self._origin

    def get_invocation_context(self):
        return None


class AxonToolAnswer:
    """The message a tool activation builds: its `content` is the answer text."""

    def __init__(self, content):
        self.content = content


class AxonToolActivation:
    """What AxonToolFactory makes: `await activation.build()` runs the tool through Axon."""

    def __init__(self, tool_name, tool_args, sly_data):
        self.tool_name = tool_name
        self.tool_args = tool_args
        self.sly_data = sly_data if sly_data is not None else {}

    async def build(self):
        return AxonToolAnswer(await use_tool(self.tool_name, self.tool_args, self.sly_data))


class AxonToolFactory:
    """neuro-san's AgentToolFactory as a BranchActivation uses it: the activations it makes run through Axon."""

    def get_config(self):
        return {}

    def create_agent_activation(self, run_context, agent_spec, tool_name, sly_data, tool_args=None, *more, **named):
        _ = (run_context, agent_spec, more, named)
        return AxonToolActivation(tool_name, tool_args, sly_data)


class AxonBranchActivation:
    """neuro-san's BranchActivation as Axon runs it: made with the five arguments neuro-san gives it, its use_tool
    (and use_reservation, for `/<reservation id>`) answered by Axon."""

    # pylint: disable=too-many-arguments,too-many-positional-arguments
    def __init__(self, parent_run_context, factory, arguments, agent_tool_spec, sly_data):
        self.run_context = parent_run_context
        self.factory = factory
        self.arguments = arguments
        self.agent_tool_spec = agent_tool_spec
        self.sly_data = sly_data

    def get_agent_tool_spec(self):
        return self.agent_tool_spec

    def get_name(self):
        return self.agent_tool_spec.get("name")

    def get_origin(self):
        return self.run_context.get_origin()

    async def use_tool(self, tool_name, tool_args, sly_data):
        return await use_tool(tool_name, tool_args, sly_data)

    async def use_reservation(self, reservation_id, args, sly_data):
        return await self.use_tool(f"/{reservation_id}", args, sly_data)


class AxonReservation:
    """neuro-san's Reservation of a temporary network's name: `<prefix>-<uuid4>`, made where it is asked for."""

    def __init__(self, lifetime_in_seconds, prefix=""):
        self.id = str(uuid.uuid4())
        self.prefix = f"{prefix}-" if prefix else ""
        self.lifetime_in_seconds = lifetime_in_seconds
        self.expiration_time_in_seconds = 0.0

    def get_reservation_id(self):
        return f"{self.prefix}{self.id}"

    def get_prefix(self):
        return self.prefix

    def get_lifetime_in_seconds(self):
        return self.lifetime_in_seconds

    def get_expiration_time_in_seconds(self):
        return self.expiration_time_in_seconds

    def is_expired(self):
        return time.time() > self.expiration_time_in_seconds

    def get_url(self):
        return self.get_reservation_id()


class AxonReservationist:
    """The `reservationist` special arg of a coded tool whose spec allows reservations, as neuro-san's: reserve() names,
    deploy() inside `async with` gathers network specs, and leaving the block deploys them all (or raises ValueError
    saying why none was): served by every replica, until they expire, by the time the block is left."""

    DEFAULT_LIFETIME = 24 * 60 * 60

    def __init__(self):
        self._deployments = []
        self._events = []

    async def reserve(self, lifetime_in_seconds=DEFAULT_LIFETIME, prefix=""):
        prefix = prefix or ""
        if any(char in prefix for char in "/: "):
            raise ValueError(f"Reservation id {prefix} cannot contain any of these characters: '/: '")
        return AxonReservation(lifetime_in_seconds, prefix)

    def validate_with(self, external_networks=None, mcp_servers=None):
        _ = (external_networks, mcp_servers)
        return self

    async def __aenter__(self):
        self._deployments = []
        self._events = []
        return self

    async def deploy(self, deployment_dict, confirmation=False):
        if not deployment_dict:
            return None
        self._deployments.extend(deployment_dict.items())
        if not confirmation:
            return None
        event = asyncio.Event()
        self._events.append(event)
        return event

    async def deploy_one(self, reservation, deployment, confirmation=False):
        return await self.deploy({reservation: deployment}, confirmation=confirmation)

    async def __aexit__(self, exc_type, exc_val, exc_tb):
        deployments, events = self._deployments, self._events
        self._deployments, self._events = [], []
        if exc_type is not None or not deployments:
            return
        request = [
            {"name": reservation.get_reservation_id(), "lifetime_seconds": reservation.get_lifetime_in_seconds(), "spec": spec}
            for reservation, spec in deployments
        ]
        try:
            answer = await axon_request("deploy_reservations", {"deployments": request})
        except AxonCallbackError as error:
            raise ValueError(f"the reservations were not deployed: {error.message}") from error
        expiries = {network["name"]: network["expires_at"] for network in answer.get("networks", [])}
        for reservation, _ in deployments:
            reservation.expiration_time_in_seconds = expiries.get(reservation.get_reservation_id(), 0.0)
        for event in events:
            event.set()


BRANCH_ACTIVATION_MODULE = "neuro_san.internals.graph.activations.branch_activation"


def branch_activation_base(tool_class):
    """The BranchActivation a tool class derives from, made Axon's if it is the installed neuro-san's; else None."""
    for base in tool_class.__mro__:
        if base.__module__ == BRANCH_ACTIVATION_MODULE and base.__name__ == "BranchActivation":
            if not issubclass(base, AxonBranchActivation) and not getattr(base, "_axon_runs_it", False):
                for name in ("__init__", "get_agent_tool_spec", "get_name", "get_origin", "use_tool", "use_reservation"):
                    setattr(base, name, AxonBranchActivation.__dict__[name])
                base._axon_runs_it = True  # pylint: disable=protected-access
            return base
    return None


class Worker:
    def __init__(self, out):
        self.out = out
        self.tasks = {}
        self.chats = {}
        self.modules = {}
        self.libraries = {}
        self.requests = {}
        self.last_request = 0
        self.middleware = {}
        self.middleware_sly_data = {}
        self.sly_baselines = {}
        self.running = {}
        self.flushing = False
        self.executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="coded-tool")
        from neuro_san.interfaces.coded_tool import CodedTool

        self.coded_tool = CodedTool

    def send(self, message):
        # Lines written in one turn of the loop leave together: one write for a burst of answers.
        self.out.write(json.dumps(message, default=str).encode("utf-8") + b"\n")
        if not self.flushing:
            self.flushing = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self):
        self.flushing = False
        self.out.flush()

    async def serve(self, reader):
        while True:
            line = await reader.readline()
            if not line:
                break
            message = json.loads(line)
            if "call" in message:
                task = asyncio.ensure_future(self.call(message))
                self.tasks[message["call"]] = task
                task.add_done_callback(lambda _, call_id=message["call"]: self.finished(call_id))
            elif "cancel" in message:
                task = self.tasks.get(message["cancel"])
                if task is not None:
                    task.cancel()
            elif "response" in message:
                self.answered(message)
            elif "end_chat" in message:
                self.end_chat(message["end_chat"])
        # The server is gone: nothing will read an answer.
        os._exit(0)

    async def request(self, call_id, name, args):
        self.last_request += 1
        request_id = self.last_request
        answer = asyncio.get_running_loop().create_future()
        self.requests[request_id] = answer
        self.send({"request": request_id, "call": call_id, "name": name, "args": args})
        try:
            return await answer
        except asyncio.CancelledError:
            if self.requests.pop(request_id, None) is not None:
                self.send({"cancel_request": request_id})
            raise

    def answered(self, message):
        answer = self.requests.pop(message["response"], None)
        if answer is None or answer.done():
            return
        if "error" in message:
            answer.set_exception(AxonCallbackError(message["error"].get("type", "Error"), message["error"].get("message", "")))
        else:
            answer.set_result(message.get("result"))

    async def call(self, message):
        chat = message["chat"]
        self.running[chat] = self.running.get(chat, 0) + 1
        try:
            await self.run_call(message)
        finally:
            self.running[chat] -= 1
            if self.running[chat] == 0:
                del self.running[chat]

    async def run_call(self, message):
        call_id = message["call"]
        CURRENT_CALL.set((self, call_id))
        private = self.chats.setdefault(message["chat"], {})
        sent = message.get("sly_data", {})
        # A middleware keeps the dict it was made with: the chat's sly_data is refreshed into it at each hook.
        sly_data = self.middleware_sly_data.setdefault(message["chat"], {}) if "middleware" in message else {}
        sly_data.clear()
        sly_data.update(json.loads(json.dumps(sent)))
        sly_data.update(private)
        # What Axon's side holds of the dict now: a middleware's handler brings both sides level (see level_sly_data).
        self.sly_baselines[call_id] = (sent, sly_data, private)
        try:
            if "library" in message:
                result = await self.run_library_tool(message)
            elif "middleware" in message:
                result = json.dumps(await self.run_middleware(message, sly_data))
            else:
                result = await self.run_coded_tool(message, call_id, sly_data)
        except (Exception, SystemExit) as error:
            sent = self.sly_baselines.pop(call_id)[0]
            self.send({
                "failed": call_id,
                "type": type(error).__name__,
                "message": self.describe(error),
                "traceback": traceback.format_exc(),
                "sly_data": sly_data_changes(sent, sly_data, private),
                "chat_kept": self.chat_kept(message["chat"]),
            })
            return
        sent = self.sly_baselines.pop(call_id)[0]
        # neuro-san renders any result with f"{result}": a string as is, a dict as Python prints it.
        changes = sly_data_changes(sent, sly_data, private)
        self.send({"done": call_id, "result": f"{result}", "sly_data": changes, "chat_kept": self.chat_kept(message["chat"])})

    async def run_coded_tool(self, message, call_id, sly_data):
        tool_class = self.tool_class(message)
        args = message["args"]
        args.setdefault("origin_str", origin_str(args.get("origin") or []))
        if args.get("progress_reporter") is None:
            args["progress_reporter"] = ProgressReporter(self, call_id)
        spec = message.get("spec") or {}
        allow = spec.get("allow") if isinstance(spec.get("allow"), dict) else {}
        if args.get("reservationist") is None and allow.get("reservations") is True:
            args["reservationist"] = AxonReservationist()
        if branch_activation_base(tool_class) is not None:
            tool = tool_class(AxonRunContext(args.get("origin") or []), AxonToolFactory(), args, spec, sly_data)
        else:
            tool = tool_class()
        if not isinstance(tool, self.coded_tool):
            raise TypeError(f"{message['module']}.{message['class']} is not a CodedTool")
        try:
            return await tool.async_invoke(args, sly_data)
        except NotImplementedError:
            return await asyncio.get_running_loop().run_in_executor(self.executor, tool.invoke, args, sly_data)

    async def run_library_tool(self, message):
        toolkit, tools, _ = await self.library_tools(message)
        if message.get("describe"):
            return json.dumps({"toolkit": toolkit, "tools": [describe_tool(tool) for tool in tools]})
        tool = chosen_tool(message["library"], tools, message.get("tool"))
        if callable(getattr(tool, "ainvoke", None)):
            return as_text(await tool.ainvoke(message["args"]))
        return as_text(await asyncio.get_running_loop().run_in_executor(self.executor, tool.invoke, message["args"]))

    async def library_tools(self, message):
        """The entry's tool, or its toolkit's tools, made once per chat as neuro-san makes them once per agent session:
        on a thread, since importing and making a LangChain tool can take seconds the worker's other calls go on in. A
        making that failed is tried again by the next call."""
        made = self.libraries.setdefault(message["chat"], {})
        key = (message["library"], json.dumps(message["settings"], sort_keys=True))
        if key not in made:
            made[key] = asyncio.get_running_loop().run_in_executor(self.executor, library_tools, message["library"], message["settings"])
        try:
            # Shielded: a cancelled call must not cancel the making other calls of the chat wait for.
            return await asyncio.shield(made[key])
        except Exception:
            if made.get(key) is not None and made[key].done():
                made.pop(key)
            raise

    async def level_sly_data(self, name, args):
        """A callback request of the running call that carries what it changed in sly_data so far, and takes back the
        chat's dict as Axon has it once answered: nested hooks of one chat see each other's changes."""
        _, call_id = CURRENT_CALL.get()
        sent, sly_data, private = self.sly_baselines[call_id]
        answer = await self.request(call_id, name, {**args, "sly_data": sly_data_changes(sent, sly_data, private)})
        fresh = answer.pop("sly_data", {})
        sly_data.clear()
        sly_data.update(json.loads(json.dumps(fresh)))
        sly_data.update(private)
        self.sly_baselines[call_id] = (fresh, sly_data, private)
        return answer

    async def run_middleware(self, message, sly_data):
        spec, hook, payload = message["middleware"], message["hook"], message.get("payload", {})
        key = (message["chat"], spec["instance"])
        if key not in self.middleware:
            self.middleware[key] = await asyncio.get_running_loop().run_in_executor(self.executor, Middleware, self, spec, sly_data, ProgressReporter(self), payload.get("chat_history", []))
        return await self.middleware[key].run(hook, payload)

    def finished(self, call_id):
        # A task cancelled before it even started never ran its own code: this says so in every case.
        if self.tasks.pop(call_id).cancelled():
            self.send({"cancelled": call_id})

    def describe(self, error):
        if isinstance(error, ImportError):
            return f"{error} ({interpreter()}: install the package there, or set AXON_PYTHON to an interpreter that has it)"
        # pydantic's ValidationError (how LangChain classes check their settings) prints the input, keys among it.
        errors = getattr(error, "errors", None)
        if callable(errors):
            try:
                return "; ".join(f"{'.'.join(map(str, item.get('loc', ())))}: {item['msg']}" for item in errors(include_input=False, include_url=False))
            except (TypeError, KeyError):
                pass
        return str(error)

    def tool_class(self, message):
        """Imported on first call, as neuro-san imports lazily; imported again when its file changed."""
        name = message["module"]
        changed = os.stat(message["file"]).st_mtime_ns
        known = self.modules.get(name)
        if known is None or known[0] != changed:
            module = importlib.reload(sys.modules[name]) if known is not None and name in sys.modules else importlib.import_module(name)
            self.modules[name] = (changed, module)
        module = self.modules[name][1]
        if not hasattr(module, message["class"]):
            raise AttributeError(f"module {name} has no class {message['class']}")
        return getattr(module, message["class"])

    def chat_kept(self, chat):
        """Whether something of the chat stays for end_chat, asked as one of its calls answers; if nothing does, the chat
        is forgotten now, and Axon sends no end_chat for it (a wake-up of this process less per chat)."""
        if self.running[chat] > 1 or self.chats.get(chat) or self.libraries.get(chat) or chat in self.middleware_sly_data:
            return True
        self.chats.pop(chat, None)
        self.libraries.pop(chat, None)
        return False

    def end_chat(self, chat):
        for key in [key for key in self.middleware if key[0] == chat]:
            del self.middleware[key]
        self.middleware_sly_data.pop(chat, None)
        made = [future.result()[2] for future in self.libraries.pop(chat, {}).values() if future.done() and not future.cancelled() and future.exception() is None]
        for value in [*self.chats.pop(chat, {}).values(), *made]:
            close = getattr(value, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # pylint: disable=broad-exception-caught
                    traceback.print_exc()


class Middleware:
    """One AgentMiddleware instance of an agent activation, its hooks called with LangChain's own types."""

    def __init__(self, worker, spec, sly_data, reporter, history=()):
        with MAKING:
            self.worker = worker
            try:
                from langchain_core import messages, tools  # pylint: disable=import-outside-toplevel
            except ImportError as error:
                raise ImportError(f"{spec['class']} is LangChain middleware, and LangChain is not installed: {error}") from error
            self.lc, self.lc_tools, self.known = messages, tools, {}
            module_name, _, name = spec["class"].rpartition(".")
            cls = getattr(importlib.import_module(module_name), name)
            origin = spec.get("origin") or []
            special = {
                "chat_history": [self.to_lc(message) for message in history],
                "origin": origin,
                "origin_str": origin_str(origin),
                "progress_reporter": reporter,
                "reservationist": AxonReservationist() if spec.get("reservations") else None,
                "sly_data": sly_data,
            }
            takes = inspect.signature(cls).parameters
            args = dict(spec.get("args") or {})
            for key in SPECIAL_ARGS:
                if key in args and key in takes:
                    args[key] = special[key]
            self.instance = cls(**args)
            self.name = spec["class"]
            self.state = {}

    def hooks(self):
        """The hooks the class itself defines (AgentMiddleware's own do nothing), sync ones under their async names."""
        defined = []
        for hook in MIDDLEWARE_HOOKS:
            for candidate in (hook, hook[1:]):
                owner = next((klass for klass in type(self.instance).__mro__ if candidate in vars(klass)), None)
                if owner is not None and owner.__name__ != "AgentMiddleware":
                    defined.append(hook)
                    break
        return defined

    async def call_hook(self, hook, *args):
        method = getattr(self.instance, hook)
        owner = next(klass for klass in type(self.instance).__mro__ if hook in vars(klass))
        if owner.__name__ == "AgentMiddleware" and hook != "awrap_model_call" and hook != "awrap_tool_call":
            return await asyncio.get_running_loop().run_in_executor(None, getattr(self.instance, hook[1:]), *args)
        return await method(*args)

    async def run(self, hook, payload):
        if hook == "make":
            return {"hooks": self.hooks(), "tools": [describe_tool(tool) for tool in getattr(self.instance, "tools", None) or []]}
        if hook == "tool":
            tool = next(tool for tool in self.instance.tools if tool.name == payload["name"])
            return {"content": as_text(await tool.ainvoke(payload["args"]))}
        runtime = langgraph_runtime()
        if hook in ("awrap_model_call", "awrap_tool_call"):
            return await getattr(self, hook[1:])(payload["request"], runtime)
        state = {**self.state, "messages": [self.to_lc(message) for message in payload["state"]["messages"]]}
        update = await self.call_hook(hook, state, runtime) or {}
        for key, value in update.items():
            if key not in ("messages", "jump_to"):
                self.state[key] = value
        answer = {} if update.get("jump_to") is None else {"jump_to": update["jump_to"]}
        if "messages" in update:
            answer["messages"] = [self.from_lc(message) for message in merged(state["messages"], update["messages"])]
        return answer

    async def wrap_model_call(self, request, runtime):
        from langchain.agents.middleware.types import ModelRequest, ModelResponse  # pylint: disable=import-outside-toplevel

        async def handler(asked):
            answer = await self.worker.level_sly_data("model_call", {"request": self.request_json(asked)})
            return ModelResponse(result=[self.to_lc(answer["message"])])

        state = {**self.state, "messages": [self.to_lc(message) for message in request["messages"]]}
        fields = {"model": AxonModel(request["model"]), "messages": state["messages"], "tool_choice": None, "response_format": None, "state": state, "runtime": runtime}
        tools = [self.lc_tool(tool) for tool in request["tools"]]
        system = self.lc.SystemMessage(content=request["system_prompt"])
        try:
            asked = ModelRequest(**fields, tools=tools, system_message=system, model_settings={})
        except TypeError:  # LangChain before system_message
            asked = ModelRequest(**fields, tools=tools, system_prompt=request["system_prompt"])
        response = await self.call_hook("awrap_model_call", asked, handler)
        result = response if isinstance(response, self.lc.AIMessage) else next(m for m in reversed(getattr(response, "model_response", response).result) if isinstance(m, self.lc.AIMessage))
        return {"message": self.from_lc(result)}

    async def wrap_tool_call(self, request, runtime):
        try:
            from langchain.agents.middleware.types import ToolCallRequest  # pylint: disable=import-outside-toplevel
        except ImportError:
            from langgraph.prebuilt.tool_node import ToolCallRequest  # pylint: disable=import-outside-toplevel
        call = request["tool_call"]

        async def handler(asked):
            answer = await self.worker.level_sly_data("tool_call", {"tool_call": asked.tool_call})
            return self.lc.ToolMessage(content=answer["content"], tool_call_id=call["id"], name=call["name"], status=answer.get("status", "success"))

        state = {**self.state, "messages": [self.to_lc(message) for message in request["messages"]]}
        tool_call = {"name": call["name"], "args": call["args"], "id": call["id"], "type": "tool_call"}
        tool = None if request.get("tool") is None else self.lc_tool(request["tool"])
        result = await self.call_hook("awrap_tool_call", ToolCallRequest(tool_call=tool_call, tool=tool, state=state, runtime=runtime), handler)
        return {"content": as_text(result.content) if isinstance(result, self.lc.ToolMessage) else str(result)}

    def request_json(self, request):
        system = getattr(request, "system_message", None)
        prompt = system.content if system is not None else (getattr(request, "system_prompt", None) or "")
        names = [tool.get("name") or tool.get("function", {}).get("name") if isinstance(tool, dict) else tool.name for tool in request.tools]
        model = request.model.name if isinstance(request.model, AxonModel) else getattr(request.model, "model_name", None) or getattr(request.model, "model", None)
        return {"system_prompt": prompt if isinstance(prompt, str) else as_text(prompt), "messages": [self.from_lc(message) for message in request.messages], "tools": names, "model": model}

    def lc_tool(self, described):
        async def run_in_axon(**_):
            raise NotImplementedError("Axon runs this tool")

        return self.lc_tools.StructuredTool(name=described["name"], description=described["description"], args_schema=described["parameters"], coroutine=run_in_axon)

    def to_lc(self, message):
        """Axon's message as LangChain's; the same object again when it comes back unchanged, whatever it carried."""
        known = self.known.get(message["id"])
        if known is not None and known[0] == message:
            return known[1]
        role, content, key = message["role"], message["content"], {"id": message["id"]}
        if role == "assistant":
            calls = [{"name": call["name"], "args": call["arguments"], "id": call["id"], "type": "tool_call"} for call in message.get("tool_calls", [])]
            made = self.lc.AIMessage(content=content, tool_calls=calls, **key)
        elif role == "tool":
            made = self.lc.ToolMessage(content=content, tool_call_id=message["tool_call_id"], **key)
        elif role == "system":
            made = self.lc.SystemMessage(content=content, **key)
        else:
            made = self.lc.HumanMessage(content=content, **key)
        self.known[message["id"]] = (message, made)
        return made

    def from_lc(self, made):
        if made.id is None:
            made.id = f"py-{id(made):x}"
        content = made.content if isinstance(made.content, str) else "".join(part if isinstance(part, str) else part.get("text", "") for part in made.content)
        message = {"role": {"ai": "assistant", "tool": "tool", "system": "system"}.get(made.type, "user"), "content": content, "id": made.id}
        if made.type == "ai" and made.tool_calls:
            message["tool_calls"] = [{"id": call["id"], "name": call["name"], "arguments": call["args"]} for call in made.tool_calls]
        if made.type == "tool":
            message["tool_call_id"] = made.tool_call_id
        self.known[made.id] = (message, made)
        return message


class AxonModel:
    """What a ModelRequest names as its model: Axon makes the call, with the model the agent's llm_config names."""

    def __init__(self, name):
        self.name = self.model_name = self.model = name


def merged(current, update):
    """LangChain's add_messages: a message replaces the one with its id, else is added; RemoveMessage removes."""
    result = list(current)
    for message in update:
        if type(message).__name__ == "RemoveMessage":
            result = [] if message.id == "__remove_all__" else [known for known in result if known.id != message.id]
            continue
        at = next((index for index, known in enumerate(result) if known.id is not None and known.id == message.id), None)
        if at is None:
            result.append(message)
        else:
            result[at] = message
    return result


def langgraph_runtime():
    try:
        from langgraph.runtime import Runtime  # pylint: disable=import-outside-toplevel

        return Runtime()
    except ImportError:
        return types.SimpleNamespace(context=None, store=None, stream_writer=lambda *_: None, previous=None)


async def serve():
    # The protocol keeps the real stdout; fd 1 becomes stderr, so a tool's print() cannot break a line.
    out = os.fdopen(os.dup(1), "wb", buffering=1 << 20)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 30)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    worker = Worker(out)
    # Code a call runs reaches axon_request by this name: the worker runs as __main__.
    sys.modules.setdefault("axon_runner", sys.modules[__name__])
    installed = importlib.util.find_spec("neuro_san").submodule_search_locations
    stand_in = all(os.path.dirname(location) == STAND_IN for location in installed)
    worker.send({"ready": True, "python": sys.version.split()[0], "neuro_san": "stand-in" if stand_in else "installed"})
    await worker.serve(reader)


def check(request):
    """Syntax of tool files (compiled, never run) and whether toolbox modules can be found."""
    problems = []
    for file in request.get("files", []):
        try:
            with open(file, "rb") as source:
                compile(source.read(), file, "exec")
        except SyntaxError as error:
            problems.append({"file": file, "line": error.lineno, "message": f"{type(error).__name__}: {error.msg}"})
        except OSError as error:
            problems.append({"file": file, "message": str(error)})
    for module in request.get("modules", []):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            problems.append({"module": module, "message": f"No module named {module} ({interpreter()})"})
    return problems


def main():
    command, roots = sys.argv[1], sys.argv[2:]
    set_paths(roots)
    if command == "check":
        print(json.dumps({"problems": check(json.loads(sys.stdin.read()))}))
    else:
        asyncio.run(serve())


if __name__ == "__main__":
    main()
