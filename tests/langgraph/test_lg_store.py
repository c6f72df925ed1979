"""The store is the caller's user memory, by namespace: put, get, search, delete and list
namespaces through the official client, visible through /v1/users/me/memory and back."""

from __future__ import annotations

import uuid

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import UnprocessableEntityError


def test_put_get_search_delete_and_namespaces(
    client: SyncLangGraphClient, native: httpx.Client, bob: SyncLangGraphClient
) -> None:
    root = uuid.uuid4().hex
    prefs = [root, "users", "u1"]
    client.store.put_item(prefs, key="prefs", value={"color": "red", "size": 3})
    client.store.put_item(prefs, key="other", value={"color": "blue", "size": 1})
    client.store.put_item([root, "users", "u2"], key="prefs", value={"color": "red", "size": 5})
    client.store.put_item([root, "teams", "t1"], key="name", value={"name": "core"})

    item = client.store.get_item(prefs, key="prefs")
    assert item is not None
    assert (item["namespace"], item["key"], item["value"]) == (
        prefs,
        "prefs",
        {"color": "red", "size": 3},
    )
    assert item["created_at"] and item["updated_at"]
    assert client.store.get_item(prefs, key="missing") is None

    users = client.store.search_items([root, "users"], limit=10)["items"]
    assert len(users) == 3
    red = client.store.search_items([root], filter={"color": "red"})["items"]
    assert sorted(i["namespace"][-1] for i in red) == ["u1", "u2"]
    big = client.store.search_items([root], filter={"size": {"$gte": 3}}, limit=1)["items"]
    also = client.store.search_items([root], filter={"size": {"$gte": 3}}, offset=1)["items"]
    assert len(big) == 1 and len(also) == 1 and big != also
    assert len(client.store.search_items([root], limit=2)["items"]) == 2

    spaces = client.store.list_namespaces(prefix=[root])["namespaces"]
    assert sorted(spaces) == [[root, "teams", "t1"], [root, "users", "u1"], [root, "users", "u2"]]
    assert client.store.list_namespaces(prefix=[root], max_depth=2)["namespaces"] == [
        [root, "teams"],
        [root, "users"],
    ]
    assert client.store.list_namespaces(prefix=[root], suffix=["u2"])["namespaces"] == [
        [root, "users", "u2"]
    ]

    client.store.delete_item(prefs, key="other")
    client.store.delete_item(prefs, key="other")  # nothing to delete is fine
    assert client.store.get_item(prefs, key="other") is None

    mine = native.get(
        "/v1/users/me/memory/prefs", params=[("namespace", label) for label in prefs]
    ).json()
    assert mine["value"] == {"color": "red", "size": 3}
    native.put(
        "/v1/users/me/memory/added",
        params=[("namespace", label) for label in prefs],
        json={"value": {"from": "v1"}},
    )
    added = client.store.get_item(prefs, key="added")
    assert added is not None and added["value"] == {"from": "v1"}

    assert bob.store.get_item(prefs, key="prefs") is None
    assert bob.store.search_items([root])["items"] == []
    assert bob.store.list_namespaces(prefix=[root])["namespaces"] == []


def test_a_filtered_search_pages_across_many_items(client: SyncLangGraphClient) -> None:
    """A filter is matched a batch of items at a time: offset and limit count matching items
    only, across batches, in the unfiltered order."""
    root = [uuid.uuid4().hex]
    for n in range(250):
        client.store.put_item(root, key=f"k{n}", value={"third": n % 3 == 0, "n": n})
    everything = client.store.search_items(root, limit=1000)["items"]
    wanted = [i["key"] for i in everything if i["value"]["third"]]
    assert len(wanted) == 84
    pages = [
        [
            i["key"]
            for i in client.store.search_items(
                root, filter={"third": True}, offset=offset, limit=30
            )["items"]
        ]
        for offset in (0, 30, 60, 90)
    ]
    assert pages == [wanted[:30], wanted[30:60], wanted[60:], []]
    late = client.store.search_items(root, filter={"n": {"$gte": 240}}, limit=3, offset=2)
    assert [i["value"]["n"] for i in late["items"]] == [
        i["value"]["n"] for i in everything if i["value"]["n"] >= 240
    ][2:5]


@pytest.mark.parametrize(
    ("call", "option"),
    [
        (lambda c: c.store.search_items(["x"], query="red things"), "query"),
        (lambda c: c.store.put_item(["x"], key="k", value={}, index=["text"]), "index"),
        (lambda c: c.store.put_item(["x"], key="k", value={}, ttl=5), "ttl"),
    ],
)
def test_store_features_tether_lacks_are_refused(
    client: SyncLangGraphClient, call: object, option: str
) -> None:
    with pytest.raises(UnprocessableEntityError, match=option):
        call(client)  # type: ignore[operator]
    assert client.store.get_item(["x"], key="k") is None


def test_filters_match_json_values_exactly_and_refuse_unknown_operators(
    client: SyncLangGraphClient,
) -> None:
    root = f"f-{uuid.uuid4().hex[:8]}"
    client.store.put_item([root], key="one", value={"n": 1, "flag": True})
    client.store.put_item([root], key="two", value={"n": 2, "flag": False})

    def keys(wanted: dict[str, object]) -> list[str]:
        return sorted(i["key"] for i in client.store.search_items([root], filter=wanted)["items"])

    assert keys({"n": True}) == []  # true is not 1
    assert keys({"flag": True}) == ["one"]
    assert keys({"n": {"$gt": True}}) == []
    assert keys({"n": {"$gte": 1, "$lt": 2}}) == ["one"]
    assert keys({"flag": {"$ne": False}}) == ["one"]
    for op in ("$in", "$bogus"):
        with pytest.raises(UnprocessableEntityError, match=rf"\{op}"):
            client.store.search_items([root], filter={"n": {op: [1, 2]}})


def test_a_store_value_is_a_json_object(native: httpx.Client) -> None:
    for value in ([1, 2], None, "text", 3):
        answer = native.put("/store/items", json={"namespace": ["a"], "key": "k", "value": value})
        assert answer.status_code == 422 and "body.value" in answer.text
    answer = native.put("/store/items", json={"namespace": ["a"], "key": "k"})
    assert answer.status_code == 422
    assert native.put(
        "/store/items", json={"namespace": ["a"], "key": "k", "value": {"ok": True}}
    ).is_success
