"""GroupCommit: durability ``full`` without an fsync on the event loop, one flush shared by
every commit that lands while another runs.

At ``full`` the writer connection runs at ``synchronous=NORMAL``: its COMMIT writes the
transaction's WAL frames (into the OS's cache) and returns, and the writer lock is released at
once. The committer then waits for an ``fdatasync`` of the WAL file that started after its
COMMIT, made by the one flush thread: commits that land while a flush runs share the next one.
The WAL is a log, so a flush covers every frame written before it: whatever a flushed commit
read from earlier commits is on disk too (a checkpoint syncs the WAL before copying it and the
database file before the WAL is reused). Meanwhile other readers may already see the commit.

A commit's announcement (its topics and after-commit actions) runs only after its flush, on
the committer's event loop and in commit order, whether or not the committer still waits: a
cancelled waiter gives up its wait, never the announcement. A failed flush fails its
commits' waits (their changes are committed and visible, and still announced); after it nothing is
known to be on disk any more (the kernel may drop the pages it could not write): every later
write is refused until the store is reopened.

Not off the loop: SQLite's auto-checkpoint (about every 1,000 WAL pages) runs inside the COMMIT
that crosses it and syncs the WAL and the database file there, as at ``normal``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tether.core.errors import StoreError

log = logging.getLogger("tether.store")
#: What a write hears once a flush failed (the file's path and the OS's error go to the log).
FLUSH_FAILED = (
    "could not flush the database to disk: the latest writes may not survive a power loss; "
    "writes are refused until the store is reopened"
)
#: Flushes a file's data (and the size needed to read it back) to the disk.
fdatasync: Callable[[int], None] = getattr(os, "fdatasync", os.fsync)


class _Commit:
    """One committed transaction waiting for its flush."""

    __slots__ = ("announce", "done", "loop")

    def __init__(self, announce: Callable[[], None]) -> None:
        self.loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self.loop.create_future()
        self.announce = announce


class GroupCommit:
    """The flushes of one SQLite file's WAL: one at a time, each for every commit before it."""

    def __init__(self, wal: str) -> None:
        self.wal = wal
        #: Flushes done (fdatasync calls of the WAL).
        self.flushes = 0
        #: Why writes are refused (a flush failed, or the flushes stopped), or None.
        self.failed: str | None = None
        self._fd: int | None = None
        self._mutex = threading.Lock()
        self._pending: list[_Commit] = []
        self._flushing = False
        self._idle: list[concurrent.futures.Future[None]] = []
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="tether-sqlite-flush")

    @property
    def due(self) -> int:
        """Commits waiting for a flush that has not begun."""
        with self._mutex:
            return len(self._pending)

    def committed(
        self, announce: Callable[[], None], *, changed: bool = True
    ) -> asyncio.Future[None] | None:
        """Call right after a COMMIT (under the writer lock, so that commits queue in commit
        order); the future is done once a flush that started after it is over and announce()
        has run, with StoreError if that flush failed. A transaction that changed no row
        (an empty claim, a lease renewal that found nothing) wrote nothing to flush: None (the
        caller announces at once) when every earlier commit, whatever it read of them, is
        flushed already; else it waits for the next flush like the others."""
        commit = _Commit(announce)
        with self._mutex:
            if not changed and not self._flushing:
                return None
            self._pending.append(commit)
            if self._flushing:
                return commit.done
            self._flushing = True
        try:
            self._thread.submit(self._flush_all)
        except RuntimeError:  # the flush thread is gone (closed, or the interpreter ending)
            self._stop("the store is closed: its latest writes were not flushed to disk")
        return commit.done

    def sync(self) -> None:
        """Flush now, from synchronous code no commit can run beside (the migrations of the
        database's constructor)."""
        failed = self._flush()
        if failed is not None:
            raise StoreError(failed)

    async def idle(self) -> None:
        """Wait until no flush runs and none is due (their announcements scheduled)."""
        with self._mutex:
            if not self._flushing:
                return
            waiter: concurrent.futures.Future[None] = concurrent.futures.Future()
            self._idle.append(waiter)
        await asyncio.wrap_future(waiter)

    def close(self) -> None:
        """Finish the flushes due (waiting for them), then let go of the file."""
        self._thread.shutdown(wait=True)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # -- the flush thread ----------------------------------------------------------------------

    def _flush_all(self) -> None:
        try:
            while True:
                with self._mutex:
                    batch, self._pending = self._pending, []
                    if not batch:
                        self._flushing = False
                        idle, self._idle = self._idle, []
                        break
                _announce(batch, self._flush())
        except BaseException:  # never leave writers waiting for a flush that will not come
            self._stop(FLUSH_FAILED)
            raise
        for waiter in idle:
            waiter.set_result(None)

    def _flush(self) -> str | None:
        if self.failed is not None:
            return self.failed
        try:
            if self._fd is None:
                self._fd = os.open(self.wal, os.O_RDWR)
            fdatasync(self._fd)
        except Exception as exc:  # (an OSError; anything else must not stop the flushes either)
            log.error("could not flush %s to disk: %s; writes are refused", self.wal, exc)
            self.failed = FLUSH_FAILED
            return self.failed
        self.flushes += 1
        return None

    def _stop(self, why: str) -> None:
        """No more flushes: fail the commits waiting (announcing them) and refuse writes."""
        with self._mutex:
            if self.failed is None:
                self.failed = why
            batch, self._pending = self._pending, []
            self._flushing = False
            idle, self._idle = self._idle, []
        _announce(batch, why)
        for waiter in idle:
            waiter.set_result(None)


def _announce(batch: list[_Commit], failed: str | None) -> None:
    """Settle batch's commits on their own loops, in commit order."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_Commit]] = {}
    for commit in batch:
        by_loop.setdefault(commit.loop, []).append(commit)
    for loop, commits in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, commits, failed)
        except RuntimeError:  # that loop is closed: nobody waits, announce from here
            for commit in commits:
                try:
                    commit.announce()
                except Exception:
                    log.exception("announcing a write flushed after its loop closed")


def _settle(commits: list[_Commit], failed: str | None) -> None:
    for commit in commits:
        try:
            commit.announce()
        except Exception as exc:  # (reaches the committer, as before the flush)
            if commit.done.done():
                log.exception("announcing a write whose caller gave up waiting")
            else:
                commit.done.set_exception(exc)
            continue
        if commit.done.done():  # the waiter was cancelled
            continue
        if failed is None:
            commit.done.set_result(None)
        else:
            commit.done.set_exception(StoreError(failed))  # (one error, one traceback, each)
