# The trivial tool bench/python-tools.ts calls through the bridge and directly.
from neuro_san.interfaces.coded_tool import CodedTool


class Trivial(CodedTool):
    async def async_invoke(self, args, sly_data):
        return "ok"
