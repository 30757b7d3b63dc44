"""Key lists page newest first with opaque cursors, stable while keys are being created."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import LiveServer
from tests.support import Person, new_person

EXAMPLES = 25


@pytest.fixture(scope="module")
async def people(app: FastAPI, live_server: LiveServer) -> Iterator[Person]:
    return iter([await new_person(app) for _ in range(EXAMPLES + 5)])


def _create(http: httpx.Client, person: Person, name: str) -> str:
    response = http.post("/v1/api-keys", json={"name": name}, headers=person.auth())
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    initial=st.integers(min_value=0, max_value=30),
    limit=st.integers(min_value=1, max_value=12),
    inserts=st.lists(st.integers(min_value=0, max_value=4), max_size=5),
)
def test_every_key_appears_exactly_once_across_pages_while_keys_are_created(
    people: Iterator[Person], live_server: LiveServer, initial: int, limit: int, inserts: list[int]
) -> None:
    person = next(people)
    with httpx.Client(base_url=live_server.url, timeout=30) as http:
        existing = [_create(http, person, f"k{i}") for i in range(initial)]
        seen: list[str] = []
        cursor: str | None = None
        created_meanwhile: set[str] = set()
        pages = 0
        while True:
            params: dict[str, str | int] = {"limit": limit}
            if cursor:
                params["cursor"] = cursor
            page = http.get("/v1/api-keys", params=params, headers=person.auth()).json()
            assert len(page["data"]) <= limit
            stamps = [(k["created_at"], k["id"]) for k in page["data"]]
            assert stamps == sorted(stamps, reverse=True)
            seen.extend(k["id"] for k in page["data"])
            if pages < len(inserts):
                for j in range(inserts[pages]):
                    created_meanwhile.add(_create(http, person, f"new{pages}-{j}"))
            pages += 1
            cursor = page["next_cursor"]
            if cursor is None:
                break
            assert len(page["data"]) == limit
    assert len(seen) == len(set(seen)), "a key appeared twice"
    assert set(existing) <= set(seen), "a key present from the start was skipped"
    assert set(seen) <= set(existing) | created_meanwhile
    assert seen[: len(existing)] == list(reversed(existing))


async def test_next_cursor_is_null_on_the_last_page(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    person = await new_person(app)
    for i in range(3):
        await client.post("/v1/api-keys", json={"name": f"k{i}"}, headers=person.auth())
    first = (await client.get("/v1/api-keys?limit=2", headers=person.auth())).json()
    assert first["next_cursor"] is not None
    second = (
        await client.get(
            "/v1/api-keys",
            params={"limit": 2, "cursor": first["next_cursor"]},
            headers=person.auth(),
        )
    ).json()
    assert len(second["data"]) == 1
    assert second["next_cursor"] is None
    exact = (await client.get("/v1/api-keys?limit=3", headers=person.auth())).json()
    assert exact["next_cursor"] is None
    default = (await client.get("/v1/api-keys", headers=person.auth())).json()
    assert len(default["data"]) == 3
