"""The SQL guards follow core/status.py: the status a guarded UPDATE writes, and the statuses its
``WHERE status IN (…)`` accepts, are read from both backends' named queries and checked against
the transition tables, so a transition cannot be changed in one place only.

- every status-changing UPDATE is guarded by the row's current status;
- each guard accepts only statuses the table lets reach the target, and all the statements that
  write one target accept together exactly ``sources_of(target)``;
- every status literal is a member of its table's enum, and every ``status IN (…)`` list is a
  set core names (``RUN_UNFINISHED``, ``RUN_ACTIVE``, ``RUN_TERMINAL``, or the sources of a
  status);
- both backends guard the same statements the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import pytest

from tether.core.status import (
    RUN_ACTIVE,
    RUN_TERMINAL,
    RUN_TRANSITIONS,
    RUN_UNFINISHED,
    SESSION_TRANSITIONS,
    STEP_TRANSITIONS,
    RunStatus,
    SessionStatus,
    StepStatus,
    check_transition,
    sources_of,
)
from tether.store.sql.queries import Backend, load_queries

BACKENDS: tuple[Backend, ...] = ("sqlite", "postgres")
#: The tables with a status column, and the enum of its values.
ENUMS: dict[str, type[StrEnum]] = {
    "sessions": SessionStatus,
    "runs": RunStatus,
    "steps": StepStatus,
}
TABLES: dict[type[StrEnum], Mapping[Any, frozenset[Any]]] = {
    SessionStatus: SESSION_TRANSITIONS,
    RunStatus: RUN_TRANSITIONS,
    StepStatus: STEP_TRANSITIONS,
}
#: Statements whose target status is a parameter: the store checks each (current, target) pair
#: with check_transition before it runs them, or passes constants the table allows.
TARGET_FROM_CODE = frozenset({"finish_run", "end_run", "finish_step"})

_TABLE_REF = re.compile(r"\b(?:FROM|UPDATE|JOIN)\s+(\w+)(?:\s+AS\s+(\w+))?", re.IGNORECASE)
#: ``[alias.]status = 'x' | IN ('x', 'y') | :param | %(param)s`` (not ``:status``/``%(status)s``).
_COMPARE = re.compile(
    r"(?<![\w:.])(?:(\w+)\.)?(?<!%\()status\s*(=|IN\b)\s*(\([^()]*\)|'[^']*'|:\w+|%\(\w+\)s)",
    re.IGNORECASE,
)
_UPDATE = re.compile(r"^\s*UPDATE\s+(\w+)\s+SET\b", re.IGNORECASE)


@dataclass(frozen=True)
class Compare:
    """One comparison of a status column in a statement."""

    table: str
    #: The literals compared with, or None for a parameter.
    values: frozenset[str] | None
    is_list: bool
    #: Parenthesis depth: 0 is the statement's own WHERE (not a subquery's).
    depth: int
    start: int


@dataclass(frozen=True)
class Transition:
    """What one status-changing UPDATE does: None stands for a parameter."""

    name: str
    table: str
    target: str | None
    sources: frozenset[str] | None


def _depth_at(sql: str, position: int) -> int:
    return sql.count("(", 0, position) - sql.count(")", 0, position)


def _keyword_at_depth_0(sql: str, keyword: str, start: int) -> int:
    for found in re.finditer(rf"\b{keyword}\b", sql[start:], re.IGNORECASE):
        if _depth_at(sql, start + found.start()) == 0:
            return start + found.start()
    return len(sql)


def compares(sql: str) -> list[Compare]:
    """Every status comparison in sql, with the table it is about."""
    refs = list(_TABLE_REF.finditer(sql))
    if not refs:
        return []
    aliases = {m.group(2) or m.group(1): m.group(1) for m in refs}
    main = refs[0].group(1)
    found = []
    for match in _COMPARE.finditer(sql):
        qualifier, operator, operand = match.groups()
        table = main if qualifier is None else aliases.get(qualifier, qualifier)
        literals = re.findall(r"'([^']*)'", operand)
        found.append(
            Compare(
                table=table,
                values=frozenset(literals) if literals else None,
                is_list=operator.upper() == "IN",
                depth=_depth_at(sql, match.start()),
                start=match.start(),
            )
        )
    return found


def transition(name: str, sql: str) -> Transition | None:
    """The transition an UPDATE makes, or None if it leaves the status as it is."""
    update = _UPDATE.match(sql)
    if update is None:
        return None
    table = update.group(1)
    where = _keyword_at_depth_0(sql, "WHERE", update.end())
    end = _keyword_at_depth_0(sql, "RETURNING", where)
    own = [c for c in compares(sql) if c.table == table and c.depth == 0]
    targets = [c for c in own if c.start < where]
    if not targets:
        return None
    guards = [c for c in own if where < c.start < end]
    if len(targets) != 1 or len(guards) != 1:
        raise AssertionError(f"{name}: {len(targets)} status writes, {len(guards)} status guards")
    return Transition(name, table, _one(targets[0].values), guards[0].values)


def _one(values: frozenset[str] | None) -> str | None:
    return None if values is None else next(iter(values))


#: PostgreSQL claims in one statement (claim_run, its clause ready) what SQLite does in two,
#: and finishes a run without open steps with its event (finish_run_told, its clause finished:
#: finish_run's guard).
EQUIVALENT = {"claim_run.ready": "claim_ready_run", "finish_run_told.finished": "finish_run"}
_CLAUSE = re.compile(r"\s*(\w+)\s+AS\s*\(", re.IGNORECASE)


def statements(queries: dict[str, str]) -> dict[str, str]:
    """The named queries, each WITH clause of one as a statement of its own (name.clause)."""
    found = {}
    for name, sql in queries.items():
        opening = re.match(r"\s*WITH\b", sql, re.IGNORECASE)
        position = 0 if opening is None else opening.end()
        while opening is not None and (clause := _CLAUSE.match(sql, position)):
            end, depth = clause.end(), 1
            while depth:
                depth += (sql[end] == "(") - (sql[end] == ")")
                end += 1
            found[f"{name}.{clause.group(1)}"] = sql[clause.end() : end - 1]
            position = end
            comma = re.match(r"\s*,", sql[position:])
            if comma is None:
                break
            position += comma.end()
        found[name] = sql[position:]
    return found


def problems(queries: dict[str, str]) -> list[str]:
    """Where the named queries disagree with core/status.py (empty when they agree)."""
    found: list[str] = []
    moves: list[Transition] = []
    for name, sql in statements(queries).items():
        found += literal_problems(name, sql)
        try:
            moved = transition(name, sql)
        except AssertionError as exc:
            found.append(str(exc))
            continue
        if moved is not None:
            found += move_problems(moved)
            moves.append(moved)
    return found + reach_problems(moves)


def literal_problems(name: str, sql: str) -> list[str]:
    """Status literals that are no member of their enum; IN lists that are no set of core."""
    found = []
    for compare in compares(sql):
        enum = ENUMS.get(compare.table)
        if enum is None:
            found.append(f"{name}: a status of table {compare.table}, which has none")
            continue
        for value in sorted((compare.values or frozenset()) - members_of(enum)):
            found.append(f"{name}: {value!r} is no {enum.__name__}")
        if compare.is_list and compare.values is not None:
            known = [members_of(g) for g in (RUN_UNFINISHED, RUN_ACTIVE, RUN_TERMINAL)]
            known += [members_of(sources_of(t)) for t in enum]
            if set(compare.values) not in known:
                found.append(f"{name}: status IN {sorted(compare.values)} is no set of core")
    return found


def move_problems(move: Transition) -> list[str]:
    """What one status-changing statement allows that the table does not."""
    enum, name = ENUMS[move.table], move.name
    sources = move.sources or frozenset()
    if move.target is None:
        found = []
        if EQUIVALENT.get(name, name) not in TARGET_FROM_CODE:
            found.append(f"{name}: writes a status given as a parameter (see TARGET_FROM_CODE)")
        for source in sorted(sources & members_of(enum)):
            if not TABLES[enum][enum(source)]:
                found.append(f"{name}: guards on {source}, which has no exits")
        return found
    if move.sources is None:
        return [f"{name}: writes {move.target} from a status given as a parameter"]
    if move.target not in members_of(enum):
        return []  # a literal_problems finding
    allowed = members_of(sources_of(enum(move.target)))
    return [
        f"{name}: {move.table} may not go from {source} to {move.target}"
        for source in sorted(sources - allowed)
    ]


def reach_problems(moves: list[Transition]) -> list[str]:
    """Targets the statements together reach from other statuses than sources_of says."""
    reached: dict[tuple[str, str], set[str]] = {}
    for move in moves:
        if move.target in members_of(ENUMS[move.table]):
            reached.setdefault((move.table, move.target), set()).update(move.sources or ())
    found = []
    for (table, target), sources in sorted(reached.items()):
        expected = members_of(sources_of(ENUMS[table](target)))
        if sources != expected:
            found.append(
                f"{table} reach {target} in SQL from {sorted(sources)}, "
                f"but sources_of says {sorted(expected)}"
            )
    return found


def members_of(statuses: type[StrEnum] | frozenset[Any]) -> set[str]:
    return {s.value for s in statuses}


def transitions(queries: dict[str, str]) -> dict[str, Transition]:
    """The status-changing statements, by name (a WITH clause under its equivalent's)."""
    moves = {}
    for name, sql in statements(queries).items():
        move = transition(name, sql)
        if move is not None:
            same = EQUIVALENT.get(name, name)
            moves[same] = replace(move, name=same)
    return moves


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_guards_of_each_backend_follow_the_transition_tables(backend: Backend) -> None:
    queries = load_queries(backend)
    assert problems(queries) == []
    moves = transitions(queries)
    assert moves["cancel_run"] == Transition(
        "cancel_run", "runs", "cancelled", frozenset({"ready", "running", "waiting"})
    )
    assert moves["claim_ready_run"].sources == frozenset({"ready"})
    assert moves["resume_run"].sources == frozenset({"waiting"})
    assert moves["close_session"].sources == frozenset({"active"})
    assert {"finish_run", "finish_step"} <= set(moves)


def test_both_backends_guard_the_same_statements_the_same_way() -> None:
    sqlite, postgres = (transitions(load_queries(p)) for p in BACKENDS)
    assert sqlite == postgres
    assert set(sqlite) >= {
        "close_session",
        "expire_session",
        "claim_ready_run",
        "suspend_run",
        "resume_run",
        "cancel_run",
        "release_run",
        "requeue_run",
        "complete_waiting_step",
        *TARGET_FROM_CODE,
    }


@pytest.mark.parametrize("package", BACKENDS)
def test_closing_open_steps_moves_running_steps_where_the_table_allows(package: Backend) -> None:
    # One statement closes tool calls (in_doubt) and the other steps (failed): its target is a
    # CASE, which the general check above does not read.
    sql = load_queries(package)["close_open_steps"]
    assert "status = 'running'" in sql.split("WHERE", 1)[1]
    targets = re.findall(r"THEN '(\w+)' ELSE '(\w+)'", sql)
    assert targets == [("in_doubt", "failed")]
    for target in targets[0]:
        check_transition(StepStatus.RUNNING, StepStatus(target))


def test_the_check_finds_a_guard_that_disagrees_with_the_table() -> None:
    narrower = {
        "cancel_run": "UPDATE runs SET status = 'cancelled' WHERE id = :id "
        "AND status IN ('ready') RETURNING *"
    }
    assert problems(narrower) == [
        "cancel_run: status IN ['ready'] is no set of core",
        "runs reach cancelled in SQL from ['ready'], "
        "but sources_of says ['ready', 'running', 'waiting']",
    ]
    wider = {"resume_run": "UPDATE runs SET status = 'running' WHERE status = 'failed'"}
    assert "resume_run: runs may not go from failed to running" in problems(wider)


def test_the_check_finds_unguarded_writes_typos_and_parameters() -> None:
    assert problems({"requeue": "UPDATE runs SET status = 'ready' WHERE id = :id"}) == [
        "requeue: 1 status writes, 0 status guards"
    ]
    typo = {"cancel": "UPDATE runs SET status = 'canceled' WHERE status IN ('ready')"}
    assert "cancel: 'canceled' is no RunStatus" in problems(typo)
    free = {"finish": "UPDATE steps SET status = %(status)s WHERE status = 'completed'"}
    assert problems(free) == [
        "finish: writes a status given as a parameter (see TARGET_FROM_CODE)",
        "finish: guards on completed, which has no exits",
    ]


def test_subqueries_and_other_tables_are_not_the_guard() -> None:
    sql = (
        "UPDATE steps SET status = 'completed' WHERE id = :id AND status = 'running' "
        "AND EXISTS (SELECT 1 FROM runs WHERE runs.status = 'running')"
    )
    compared = compares(sql)
    assert [(c.table, c.depth) for c in compared] == [
        ("steps", 0),
        ("steps", 0),
        ("runs", 1),
    ]
    assert transition("x", sql) == Transition("x", "steps", "completed", frozenset({"running"}))
