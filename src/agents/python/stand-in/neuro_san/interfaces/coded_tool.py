"""
Axon's stand-in for neuro-san's CodedTool interface, on the Python worker's path only after everything else: where
the real neuro-san package is installed, `from neuro_san.interfaces.coded_tool import CodedTool` finds that one.

A coded tool overrides `async_invoke` (preferred) or `invoke`; the one it leaves alone raises NotImplementedError, which
is how the caller knows to run `invoke` on a thread instead.
"""
from typing import Any, Dict


class CodedTool:
    """A tool an agent network calls by its class name: arguments from the LLM (and the spec's `args`) in, a result out."""

    def invoke(self, args: Dict[str, Any], sly_data: Dict[str, Any]) -> Any:
        """Runs on a thread of the worker's executor, so blocking here holds up no other call."""
        raise NotImplementedError

    async def async_invoke(self, args: Dict[str, Any], sly_data: Dict[str, Any]) -> Any:
        """Runs on the worker's event loop: await, never block."""
        raise NotImplementedError
