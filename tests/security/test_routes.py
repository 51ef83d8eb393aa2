"""Every /hpc-magics/ route, enumerated from ``route_table``, refuses a request without
the server's token: 403 (API clients) or a redirect to the login page, never 200."""

from __future__ import annotations

import re

import pytest
import requests
from server.conftest import HTTP_TIMEOUT_S, StartLocal

from hpc_magics.server.handlers import route_table

pytestmark = pytest.mark.timeout(120)
REFUSED = {401, 403}


def concrete_paths() -> list[tuple[str, list[str]]]:
    """(path, methods the handler implements) for every route, groups filled with an id."""
    paths = []
    for pattern, handler in route_table("/"):
        path = re.sub(r"\([^)]*\)", "12345", pattern).lstrip("/")
        methods = [m for m in handler.SUPPORTED_METHODS
                   if m.lower() in vars(handler) or any(
                       m.lower() in vars(base) for base in handler.__mro__
                       if base.__module__.startswith("hpc_magics"))]
        paths.append((path, methods))
    return paths


def test_the_enumeration_finds_every_route() -> None:
    found = concrete_paths()
    assert len(found) == len(route_table("/")) >= 5
    assert all(methods for _, methods in found), found


def test_no_route_answers_without_the_token(local_server: StartLocal) -> None:
    server = local_server()
    for path, methods in concrete_paths():
        for method in [*methods, "GET", "POST"]:
            for headers in ({}, {"Authorization": "token not-the-token"},
                            {"Accept": "text/html"}):  # a browser without a session
                answer = requests.request(method, server.url + path, headers=headers,
                                          timeout=HTTP_TIMEOUT_S, allow_redirects=False)
                said = f"{method} /{path} {headers or 'no token'}: {answer.status_code}"
                if answer.status_code in {301, 302}:
                    assert "login" in answer.headers.get("Location", ""), said
                else:
                    assert answer.status_code in REFUSED | {405}, said
                assert answer.status_code != 200, said
    assert server.answers()  # and the refused stop request stopped nothing


def test_the_token_in_a_query_string_is_not_enough_for_posts_from_a_page(
        local_server: StartLocal) -> None:
    """A cross-site form can carry a URL but not the XSRF cookie pair: refused."""
    server = local_server()
    for path, methods in concrete_paths():
        if "POST" in methods:
            answer = requests.post(f"{server.url}{path}?token=not-it", timeout=HTTP_TIMEOUT_S,
                                   allow_redirects=False)
            assert answer.status_code in REFUSED, f"POST /{path}: {answer.status_code}"
