"""Memory scopes as mappings for synchronous programs: ``session.memory["python"] = "3.9"``.

Session, user and app memory are ``MutableMapping``s; a run's working memory, written only by
the run itself, is a read-only ``Mapping``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.runtime.facade import Tether

from abc import abstractmethod
from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

from tether.core.errors import NotFound
from tether.core.memory import MemoryItem


class _MemoryMapping(Mapping[str, Any]):
    def __init__(self, tt: Tether) -> None:
        self._tt = tt

    @abstractmethod
    def _items(self) -> list[MemoryItem]: ...

    def items_with_source(self) -> list[MemoryItem]:
        """The stored items, with when and by which run they were written."""
        return self._items()

    def __iter__(self) -> Iterator[str]:
        return iter([i.key for i in self._items()])

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self)!r})"


class SessionMemory(_MemoryMapping, MutableMapping[str, Any]):
    """Session memory of one session."""

    def __init__(self, tt: Tether, session_id: str) -> None:
        super().__init__(tt)
        self._session_id = session_id

    def _items(self) -> list[MemoryItem]:
        return self._tt._call(self._tt._backend.list_session_memory(self._session_id))

    def __getitem__(self, key: str) -> Any:
        try:
            return self._tt._call(self._tt._backend.get_session_memory(self._session_id, key)).value
        except NotFound:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        self._tt._call(self._tt._backend.set_session_memory(self._session_id, key, value))

    def __delitem__(self, key: str) -> None:
        try:
            self._tt._call(self._tt._backend.delete_session_memory(self._session_id, key))
        except NotFound:
            raise KeyError(key) from None


class UserMemory(_MemoryMapping, MutableMapping[str, Any]):
    """Memory about the owner, shared by all of the owner's sessions."""

    def _items(self) -> list[MemoryItem]:
        return self._tt._call(self._tt._backend.list_user_memory())

    def __getitem__(self, key: str) -> Any:
        try:
            return self._tt._call(self._tt._backend.get_user_memory(key)).value
        except NotFound:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        self._tt._call(self._tt._backend.set_user_memory(key, value))

    def __delitem__(self, key: str) -> None:
        try:
            self._tt._call(self._tt._backend.delete_user_memory(key))
        except NotFound:
            raise KeyError(key) from None


class AppMemory(_MemoryMapping, MutableMapping[str, Any]):
    """Memory every session of one of the owner's apps shares (``tt.app_memory("shop")``)."""

    def __init__(self, tt: Tether, app: str) -> None:
        super().__init__(tt)
        self.app = app

    def _items(self) -> list[MemoryItem]:
        return self._tt._call(self._tt._backend.list_app_memory(self.app))

    def __getitem__(self, key: str) -> Any:
        try:
            return self._tt._call(self._tt._backend.get_app_memory(self.app, key)).value
        except NotFound:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        self._tt._call(self._tt._backend.set_app_memory(self.app, key, value))

    def __delitem__(self, key: str) -> None:
        try:
            self._tt._call(self._tt._backend.delete_app_memory(self.app, key))
        except NotFound:
            raise KeyError(key) from None


class RunMemory(_MemoryMapping):
    """A run's working memory: a read-only mapping from outside (the run itself writes it)."""

    def __init__(self, tt: Tether, run_id: str) -> None:
        super().__init__(tt)
        self._run_id = run_id

    def _items(self) -> list[MemoryItem]:
        return self._tt._call(self._tt._backend.list_run_memory(self._run_id))

    def __getitem__(self, key: str) -> Any:
        for item in self._items():
            if item.key == key:
                return item.value
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("a run's working memory is read-only: the run itself writes it")

    def __delitem__(self, key: str) -> None:
        raise TypeError("a run's working memory is read-only: the run itself writes it")

    def promote(self, key: str, *, as_key: str | None = None) -> MemoryItem:
        """Copy an item into the session's memory, recorded with this run as its source."""
        return self._tt._call(self._tt._backend.promote_memory(self._run_id, key, as_key=as_key))
