"""What the shared SQL store needs from a backend: named queries run inside transactions."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, NamedTuple, Protocol, TypeVar

from tether.store.changes import ChangeFeed

Row = Mapping[str, Any]
T = TypeVar("T")


class Events(NamedTuple):
    """Events to append that share all but their data: one type, owner, session, run and time."""

    type: str
    owner: str
    session_id: str | None
    run_id: str | None
    #: Microseconds since the epoch.
    created_at: int
    #: Each event's data column (its JSON text, as dump_json makes it), in order.
    data: list[str]


class ReadTx(Protocol):
    """Reads: named queries that change nothing."""

    async def one(self, query: str, /, **params: Any) -> Row | None:
        """The first row of a named query, or None."""

    async def all(self, query: str, /, **params: Any) -> list[Row]:
        """Every row of a named query."""

    async def records(
        self, query: str, decode: Callable[[Iterable[Any]], list[T]], /, **params: Any
    ) -> list[T]:
        """decode(the rows of a named query, each its values in column order): for reads of
        many rows, decoded in one pass, with the garbage collector paused (collector.py)."""

    async def batch(self, calls: list[tuple[str, dict[str, Any]]], /) -> list[list[Row]]:
        """Several named queries (name, parameters), in order: the rows of each. PostgreSQL
        sends them in one round trip, so none may depend on another's result."""


class Tx(ReadTx, Protocol):
    """One open write transaction."""

    async def run(self, query: str, /, **params: Any) -> int:
        """Execute a named query; the number of rows it changed."""

    async def many(self, query: str, rows: list[dict[str, Any]], /) -> None:
        """Execute a named query once per parameter set (bulk copies)."""

    async def insert_rows(self, query: str, rows: list[tuple[Any, ...]], /, **params: Any) -> None:
        """Execute a named query that inserts rows handed over at once, in order, each a tuple
        of the values the query reads, in its order (text, integers, None; JSON as its text),
        beside params. SQLite's query is an INSERT … VALUES (row) whose ? take a row's values:
        it runs with that row written once per row (a few statements for a large batch);
        PostgreSQL's reads one array per position, :rows_0, :rows_1 … (unnest)."""

    async def later(self, query: str, /, **params: Any) -> None:
        """Execute a named query whose outcome nothing waits for: at once, or with the commit
        (PostgreSQL: inside its statement, so statements left for later must not depend on one
        another's writes)."""

    async def append_events(self, events: Events, /) -> None:
        """Append events, in order. Event ids of a session increase in commit order, so a
        reader resuming after an id never skips one."""

    def publish(self, *topics: str) -> None:
        """Announce topics on the change feed once (and only if) the transaction commits."""

    def after_commit(self, action: Callable[[], None]) -> None:
        """Call action once (and only if) the transaction commits."""


class Database(Protocol):
    """A backend's connections, its named queries, and how it encodes values."""

    changes: ChangeFeed
    location: str
    #: True when calls may be awaited on any event loop, from any thread; False when the
    #: connections belong to the loop that opened them.
    any_loop: bool
    #: True when a message.added event may store its message by reference (its data
    #: {"message_seq": N}, read back whole through the events_read view); False when every
    #: event stores a full copy.
    message_refs: bool

    def write(self) -> AbstractAsyncContextManager[Tx]:
        """A write transaction: serialised with other writers, committed on exit."""

    def read(self) -> AbstractAsyncContextManager[ReadTx]:
        """Reads that see committed data (each statement, at least, a consistent snapshot)."""

    async def write_one(self, query: str, /, **params: Any) -> Row | None:
        """A write of one statement that is a transaction of its own (no events, nothing
        published): its first row. It may run twice (a connection lost under it), so it must
        be idempotent."""

    def append_message(self, message: dict[str, Any], owner: str | None) -> str | None:
        """One message appended in one call, committed, when the backend can do it at once:
        touch_active_session (one message), insert_message with message (its parameters; the
        id and seq are filled in), and its message.added event by reference. The session's
        owner, or None when it did nothing (no such call here, the writer or the file busy,
        the session refusing, a value to refuse): the caller then takes the general path,
        which waits or raises why."""

    def dump_json(self, value: Any) -> Any:
        """The parameter that stores value in a JSON column."""

    def load_json(self, column: Any) -> Any:
        """The value a JSON column holds."""

    def is_unique_violation(self, exc: BaseException) -> bool:
        """True when exc is the database refusing a duplicate key."""

    async def schema_version(self) -> int:
        """The applied migration version."""

    async def close(self) -> None:
        """Release every connection."""
