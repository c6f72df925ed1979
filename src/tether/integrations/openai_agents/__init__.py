"""tether under the OpenAI Agents SDK (the ``openai-agents`` extra): change one line.

from tether.integrations.openai_agents import TetherSession

session = TetherSession("user_123", "tether.db")   # was: SQLiteSession("user_123", "conv.db")
result = await Runner.run(agent, "Hello", session=session)
"""

from tether.core.errors import MissingExtra

try:
    import agents  # noqa: F401  (the extra: fail here, naming it, rather than deep inside)
except ModuleNotFoundError as exc:
    raise MissingExtra("tether.integrations.openai_agents", "openai-agents", exc.name) from exc

from tether.integrations.openai_agents.session import TetherSession

__all__ = ["TetherSession"]
