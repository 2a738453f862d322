"""runner.py's own pure parts, with the standard library's unittest (run by runner-python.test.ts)."""
import asyncio
import json
import os
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "src", "agents", "python"))
import runner  # noqa: E402  pylint: disable=wrong-import-position


class Handle:
    def close(self):
        pass


class SlyDataChangesTest(unittest.TestCase):
    def test_a_new_or_changed_json_value_is_set_and_an_unchanged_one_is_not(self):
        private = {}
        changes = runner.sly_data_changes({"a": 1, "b": [1]}, {"a": 1, "b": [1, 2], "c": "new"}, private)
        self.assertEqual(changes, {"set": {"b": [1, 2], "c": "new"}, "delete": []})

    def test_a_removed_key_is_deleted(self):
        self.assertEqual(runner.sly_data_changes({"a": 1}, {}, {}), {"set": {}, "delete": ["a"]})

    def test_a_value_json_cannot_carry_stays_private_and_replaces_the_json_one(self):
        private = {}
        handle = Handle()
        changes = runner.sly_data_changes({"h": "old"}, {"h": handle, "n": float("nan")}, private)
        self.assertEqual(changes, {"set": {}, "delete": ["h"]})
        self.assertEqual(private, {"h": handle, "n": private["n"]})

    def test_a_private_value_left_as_it_was_is_no_change_and_one_removed_is_forgotten(self):
        handle = Handle()
        private = {"h": handle, "gone": Handle()}
        self.assertEqual(runner.sly_data_changes({}, {"h": handle}, private), {"set": {}, "delete": []})
        self.assertEqual(private, {"h": handle})

    def test_a_type_change_between_equal_values_is_a_change(self):
        self.assertEqual(runner.sly_data_changes({"a": 1}, {"a": True}, {}), {"set": {"a": True}, "delete": []})


class OriginStrTest(unittest.TestCase):
    def test_names_are_joined_by_dots_with_an_index_past_the_first(self):
        origin = [{"tool": "Front", "instantiation_index": 1}, {"tool": "Calc", "instantiation_index": 12}]
        self.assertEqual(runner.origin_str(origin), "Front.Calc-12")

    def test_a_local_external_agent_keeps_its_slash(self):
        self.assertEqual(runner.origin_str([{"tool": "Front"}, {"tool": "/other"}]), "Front/other")


class CheckTest(unittest.TestCase):
    def test_a_syntax_error_names_the_file_and_line(self):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as source:
            source.write("x = 1\ndef broken(:\n")
        problems = runner.check({"files": [source.name]})
        os.unlink(source.name)
        self.assertEqual(len(problems), 1)
        self.assertEqual((problems[0]["file"], problems[0]["line"]), (source.name, 2))
        self.assertTrue(problems[0]["message"].startswith("SyntaxError: "))

    def test_a_module_that_cannot_be_found_names_the_interpreter(self):
        problems = runner.check({"modules": ["json", "surely_not_installed_anywhere.tools"]})
        self.assertEqual([problem["module"] for problem in problems], ["surely_not_installed_anywhere.tools"])
        self.assertIn(sys.executable, problems[0]["message"])


class Schema:
    @classmethod
    def model_json_schema(cls):
        return {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


class Tool:
    def __init__(self, name, **attributes):
        self.name = name
        self.__dict__.update(attributes)


class LibraryToolTest(unittest.TestCase):
    def test_a_class_is_made_with_its_args_an_arg_written_with_a_class_first(self):
        made = runner.new_instance("types.SimpleNamespace", {"wrapper": {"class": "datetime.timedelta", "args": {"days": 2}}, "k": 5})
        self.assertEqual((made.wrapper.days, made.k), (2, 5))

    def test_a_class_the_module_lacks_is_named(self):
        with self.assertRaisesRegex(AttributeError, "module types has no class Nothing"):
            runner.new_instance("types.Nothing", {})

    def test_the_schema_is_the_args_schema_as_json_a_models_or_the_args_as_properties(self):
        as_json = {"type": "object", "properties": {"a": {"type": "integer"}}}
        self.assertEqual(runner.parameters_of(Tool("t", args_schema=as_json)), as_json)
        self.assertEqual(runner.parameters_of(Tool("t", args_schema=Schema))["required"], ["q"])
        self.assertEqual(runner.parameters_of(Tool("t", args={"b": {"type": "string"}})), {"type": "object", "properties": {"b": {"type": "string"}}})

    def test_a_tool_is_described_by_its_name_and_its_description_or_its_name(self):
        self.assertEqual(runner.describe_tool(Tool("t", description="")), {"name": "t", "description": "t", "parameters": {"type": "object", "properties": {}}})

    def test_a_toolkits_tool_is_chosen_by_name_and_without_one_only_if_it_is_alone(self):
        tools = [Tool("get"), Tool("post")]
        self.assertIs(runner.chosen_tool("kit.Kit", tools, "post"), tools[1])
        self.assertIs(runner.chosen_tool("kit.Kit", tools[:1], None), tools[0])
        with self.assertRaisesRegex(ValueError, r"kit.Kit is a toolkit of 2 tools \(get, post\)"):
            runner.chosen_tool("kit.Kit", tools, None)
        with self.assertRaisesRegex(ValueError, "kit.Kit has no tool named put"):
            runner.chosen_tool("kit.Kit", tools, "put")

    def test_an_output_is_a_string_as_is_else_json_else_str(self):
        self.assertEqual(runner.as_text("plain"), "plain")
        self.assertEqual(runner.as_text([{"title": "café"}]), '[{"title": "café"}]')
        self.assertEqual(runner.as_text({1, 2} - {2}), "{1}")


class Waiting:
    """Made only once the worker's loop has run something else meanwhile: it cannot be made on the loop's thread."""

    loop_ran = None

    def __init__(self):
        if not Waiting.loop_ran.wait(10):
            raise TimeoutError("the loop did not run while the tool was being made")
        self.name = "waiting"
        self.closed = False

    def close(self):
        self.closed = True


class FailsOnce:
    made = 0

    def __init__(self):
        FailsOnce.made += 1
        if FailsOnce.made == 1:
            raise RuntimeError("not yet")
        self.name = "fails_once"


class SettingsError(Exception):
    """Shaped as pydantic's ValidationError: its text holds the input, its errors() need not."""

    def __str__(self):
        return "1 validation error: input_value={'api_key': 'sk-secret'}"

    def errors(self, include_input=True, include_url=True):
        item = {"loc": ("api_key",), "msg": "Field required"}
        return [{**item, "input": {"api_key": "sk-secret"}} if include_input else item]


class LibraryWorkerTest(unittest.TestCase):
    def setUp(self):
        sys.path.append(runner.STAND_IN)
        self.worker = runner.Worker(open(os.devnull, "wb"))

    def tearDown(self):
        sys.path.remove(runner.STAND_IN)
        self.worker.out.close()
        self.worker.executor.shutdown()

    @staticmethod
    def message(class_name):
        return {"chat": "c1", "library": f"{__name__}.{class_name}", "settings": {}}

    def test_a_tool_is_made_on_a_thread_while_the_loop_goes_on_and_closed_with_its_chat(self):
        async def scenario():
            Waiting.loop_ran = threading.Event()
            making = asyncio.ensure_future(self.worker.library_tools(self.message("Waiting")))
            await asyncio.sleep(0)
            Waiting.loop_ran.set()
            return await making

        toolkit, tools, instance = asyncio.run(scenario())
        self.assertEqual((toolkit, [tool.name for tool in tools]), (False, ["waiting"]))
        self.worker.end_chat("c1")
        self.assertTrue(instance.closed)

    def test_a_making_that_failed_is_tried_again(self):
        async def twice():
            with self.assertRaisesRegex(RuntimeError, "not yet"):
                await self.worker.library_tools(self.message("FailsOnce"))
            return await self.worker.library_tools(self.message("FailsOnce"))

        self.assertEqual(asyncio.run(twice())[1][0].name, "fails_once")

    def test_a_settings_error_is_told_without_the_settings(self):
        told = self.worker.describe(SettingsError())
        self.assertEqual(told, "api_key: Field required")
        self.assertNotIn("sk-secret", told)


class Sent:
    """A worker's protocol output, kept as the JSON lines it wrote."""

    def __init__(self):
        self.lines = []

    def write(self, data):
        self.lines.extend(json.loads(line) for line in data.decode("utf-8").splitlines())

    def flush(self):
        pass


class ChatKeptTest(unittest.TestCase):
    """Each answer says whether the worker still holds something of the chat, so that Axon ends only those chats."""

    FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "python")

    def setUp(self):
        sys.path[0:0] = [self.FIXTURES]
        sys.path.append(runner.STAND_IN)
        self.sent = Sent()
        self.worker = runner.Worker(self.sent)
        self.markers = tempfile.mkdtemp()

    def tearDown(self):
        sys.path.remove(self.FIXTURES)
        sys.path.remove(runner.STAND_IN)
        self.worker.executor.shutdown()

    def message(self, call_id, module, class_name, args=None):
        file = os.path.join(self.FIXTURES, "coded_tools", "python_tools", f"{module}.py")
        return {"call": call_id, "chat": "c1", "module": f"coded_tools.python_tools.{module}", "file": file, "class": class_name, "args": args or {}}

    def answers(self, *messages):
        async def scenario():
            await asyncio.gather(*(self.worker.call(message) for message in messages))

        asyncio.run(scenario())
        return {line["done"]: line["chat_kept"] for line in self.sent.lines if "done" in line}

    def test_a_call_that_left_nothing_answers_so_and_the_chat_is_forgotten(self):
        self.assertEqual(self.answers(self.message(1, "resources", "User")), {1: False})
        self.assertNotIn("c1", self.worker.chats)

    def test_a_value_json_cannot_carry_keeps_the_chat_until_it_ends(self):
        marker = os.path.join(self.markers, "connection")
        self.assertEqual(self.answers(self.message(1, "resources", "Opener", {"marker": marker})), {1: True})
        self.assertIn("connection", self.worker.chats["c1"])
        self.worker.end_chat("c1")
        with open(marker, encoding="utf-8") as closed:
            self.assertEqual(closed.read(), "closed")

    def test_the_chat_is_kept_while_another_of_its_calls_runs(self):
        # AsyncEcho awaits once: both calls are running when the first answers.
        self.assertEqual(self.answers(self.message(1, "calculator", "AsyncEcho"), self.message(2, "calculator", "AsyncEcho")), {1: True, 2: False})
        self.assertNotIn("c1", self.worker.chats)


class CallbackRequestTest(unittest.TestCase):
    def setUp(self):
        sys.path.append(runner.STAND_IN)
        self.sent = Sent()
        self.worker = runner.Worker(self.sent)

    def tearDown(self):
        sys.path.remove(runner.STAND_IN)
        self.worker.executor.shutdown()

    def test_a_request_names_its_call_and_gets_the_answer_with_its_id(self):
        async def scenario():
            runner.CURRENT_CALL.set((self.worker, 7))
            asking = asyncio.ensure_future(runner.axon_request("echo", {"text": "hi"}))
            await asyncio.sleep(0)
            self.worker.answered({"response": 1, "result": {"echoed": "HI"}})
            return await asking

        self.assertEqual(asyncio.run(scenario()), {"echoed": "HI"})
        self.assertEqual(self.sent.lines, [{"request": 1, "call": 7, "name": "echo", "args": {"text": "hi"}}])

    def test_an_error_answer_raises_with_its_type_and_message(self):
        async def scenario():
            asking = asyncio.ensure_future(self.worker.request(3, "fail", {}))
            await asyncio.sleep(0)
            self.worker.answered({"response": 1, "error": {"type": "TOOL_FAILED", "message": "no"}})
            await asking

        with self.assertRaises(runner.AxonCallbackError) as raised:
            asyncio.run(scenario())
        self.assertEqual((raised.exception.type, raised.exception.message), ("TOOL_FAILED", "no"))

    def test_a_cancelled_wait_tells_axon_and_a_late_answer_is_ignored(self):
        async def scenario():
            asking = asyncio.ensure_future(self.worker.request(3, "wait", {}))
            await asyncio.sleep(0)
            asking.cancel()
            await asyncio.gather(asking, return_exceptions=True)
            self.worker.answered({"response": 1, "result": None})

        asyncio.run(scenario())
        self.assertEqual(self.sent.lines[-1], {"cancel_request": 1})

    def test_outside_a_call_there_is_nothing_to_ask(self):
        with self.assertRaisesRegex(LookupError, "only answered inside a call"):
            asyncio.run(runner.axon_request("echo", {}))


LANGCHAIN_SHAPED = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "middleware", "python")


class MiddlewareMessagesTest(unittest.TestCase):
    """Messages between Axon's JSON and LangChain's classes (the test fixtures' LangChain-shaped stand-in)."""

    def setUp(self):
        sys.path.insert(0, LANGCHAIN_SHAPED)
        self.middleware = runner.Middleware(None, {"class": "middleware.testing.Rewriter", "args": {}}, {}, None)
        from langchain_core import messages  # pylint: disable=import-outside-toplevel

        self.messages = messages

    def tearDown(self):
        sys.path.remove(LANGCHAIN_SHAPED)

    def test_each_role_becomes_its_class_and_comes_back_the_same(self):
        sent = [
            {"role": "user", "content": "hi", "id": "1"},
            {"role": "assistant", "content": "", "id": "2", "tool_calls": [{"id": "c1", "name": "t", "arguments": {"a": 1}}]},
            {"role": "tool", "content": "done", "id": "3", "tool_call_id": "c1"},
            {"role": "system", "content": "be brief", "id": "4"},
        ]
        made = [self.middleware.to_lc(message) for message in sent]
        self.assertEqual([type(message).__name__ for message in made], ["HumanMessage", "AIMessage", "ToolMessage", "SystemMessage"])
        self.assertEqual(made[1].tool_calls, [{"name": "t", "args": {"a": 1}, "id": "c1", "type": "tool_call"}])
        self.assertEqual([self.middleware.from_lc(message) for message in made], sent)

    def test_a_message_that_comes_back_unchanged_is_the_same_object_with_all_it_carried(self):
        message = self.middleware.to_lc({"role": "user", "content": "hi", "id": "1"})
        message.additional_kwargs["kept"] = True
        self.middleware.from_lc(message)
        self.assertIs(self.middleware.to_lc({"role": "user", "content": "hi", "id": "1"}), message)
        self.assertIsNot(self.middleware.to_lc({"role": "user", "content": "changed", "id": "1"}), message)

    def test_messages_merge_as_add_messages_does(self):
        human, ai = self.messages.HumanMessage(content="a", id="1"), self.messages.AIMessage(content="b", id="2")
        replaced = self.messages.HumanMessage(content="A", id="1")
        added = self.messages.HumanMessage(content="c", id="3")
        self.assertEqual(runner.merged([human, ai], [replaced, added]), [replaced, ai, added])
        self.assertEqual(runner.merged([human, ai], [self.messages.RemoveMessage(id="1")]), [ai])
        self.assertEqual(runner.merged([human, ai], [self.messages.RemoveMessage(id="__remove_all__"), added]), [added])

    def test_the_hooks_are_those_the_class_defines(self):
        self.assertEqual(self.middleware.hooks(), ["abefore_model", "aafter_model"])

    def test_a_reservationist_is_given_where_the_entry_allows_reservations_and_none_elsewhere(self):
        def made(reservations):
            spec = {"class": "middleware.testing.Reviewer", "args": {"reservationist": True, "sly_data": True}, "reservations": reservations}
            return runner.Middleware(None, spec, {}, None).instance

        self.assertIsInstance(made(True).reservationist, runner.AxonReservationist)
        self.assertIsNone(made(False).reservationist)


class BranchActivationTest(unittest.TestCase):
    def test_the_installed_branch_activation_is_made_axons_and_its_subclasses_keep_theirs(self):
        installed = type("BranchActivation", (), {"__module__": runner.BRANCH_ACTIVATION_MODULE, "__init__": lambda self, *args: 1 / 0})
        tool_class = type("Caller", (installed,), {"get_name": lambda self: "own"})
        self.assertIs(runner.branch_activation_base(tool_class), installed)
        tool = tool_class(runner.AxonRunContext([{"tool": "Front"}]), runner.AxonToolFactory(), {"a": 1}, {"name": "Caller"}, {})
        self.assertEqual((tool.arguments, tool.get_agent_tool_spec(), tool.get_origin(), tool.get_name()), ({"a": 1}, {"name": "Caller"}, [{"tool": "Front"}], "own"))
        self.assertIsNone(runner.branch_activation_base(type("Plain", (), {})))

    def test_use_tool_sends_the_json_sly_data_and_updates_the_dict_with_what_the_tool_left(self):
        sent = Sent()
        worker = runner.Worker.__new__(runner.Worker)
        worker.out, worker.requests, worker.last_request, worker.flushing = sent, {}, 0, False
        handle = Handle()
        sly_data = {"keep": 1, "gone": 2, "handle": handle}

        async def scenario():
            runner.CURRENT_CALL.set((worker, 4))
            asking = asyncio.ensure_future(runner.use_tool("Expert", {"inquiry": "x"}, sly_data))
            await asyncio.sleep(0)
            worker.answered({"response": 1, "result": {"text": "answer", "sly_data": {"keep": 1, "new": 3}}})
            return await asking

        self.assertEqual(asyncio.run(scenario()), "answer")
        self.assertEqual(sent.lines[0]["args"], {"tool": "Expert", "args": {"inquiry": "x"}, "sly_data": {"keep": 1, "gone": 2}})
        self.assertEqual(sly_data, {"keep": 1, "new": 3, "handle": handle})


class ReservationistTest(unittest.TestCase):
    def test_a_prefix_with_a_slash_colon_or_space_is_refused_and_a_name_is_prefix_dash_uuid(self):
        reservationist = runner.AxonReservationist()
        with self.assertRaises(ValueError):
            asyncio.run(reservationist.reserve(prefix="a/b"))
        reservation = asyncio.run(reservationist.reserve(60, prefix="designer"))
        self.assertRegex(reservation.get_reservation_id(), r"^designer-[0-9a-f-]{36}$")
        self.assertEqual(reservation.get_lifetime_in_seconds(), 60)

    def test_leaving_the_block_deploys_what_it_gathered_and_sets_the_events(self):
        asked = []

        async def answering(name, args):
            asked.append((name, args))
            return {"networks": [{"name": args["deployments"][0]["name"], "expires_at": 4102444800}]}

        async def scenario():
            original = runner.axon_request
            runner.axon_request = answering
            try:
                reservationist = runner.AxonReservationist()
                reservation = await reservationist.reserve(600, "x")
                async with reservationist:
                    event = await reservationist.deploy({reservation: {"tools": []}}, confirmation=True)
                    self.assertFalse(event.is_set())
                self.assertTrue(event.is_set())
                return reservation
            finally:
                runner.axon_request = original

        reservation = asyncio.run(scenario())
        self.assertEqual(asked, [("deploy_reservations", {"deployments": [{"name": reservation.get_reservation_id(), "lifetime_seconds": 600, "spec": {"tools": []}}]})])
        self.assertEqual(reservation.get_expiration_time_in_seconds(), 4102444800)


if __name__ == "__main__":
    unittest.main()
