"""Axon's stand-in for neuro-san's BranchActivation, used when the interpreter has no neuro-san: a coded tool deriving
from it (and from CodedTool) calls the tools of its network with `await self.use_tool(name, args, sly_data)`."""
from axon_runner import AxonBranchActivation


class BranchActivation(AxonBranchActivation):
    """Made by Axon with neuro-san's five arguments: (run_context, factory, arguments, agent_tool_spec, sly_data)."""
