"""tether under Google ADK (the ``adk`` extra): sessions, events and state in tether, and each
invocation recorded as a tether run.

    from tether.integrations.adk import TetherPlugin, TetherSessionService

    app = App(name="weather", root_agent=agent, plugins=[TetherPlugin()])  # invocations as runs
    runner = Runner(app=app, session_service=TetherSessionService("tether.db"))  # sessions
"""

from tether.core.errors import MissingExtra

try:
    import google.adk.sessions  # noqa: F401  (the extra: fail here, naming it)
except ImportError as exc:
    raise MissingExtra("the Google ADK session service", "adk", exc.name) from exc

from tether.integrations.adk.runs import TetherPlugin
from tether.integrations.adk.service import TetherSessionService, external_key

__all__ = ["TetherPlugin", "TetherSessionService", "external_key"]
