"""Routes name the parts they use (grader/api/deps.py hands out each part on its own): no route, and no
dependency a route uses, receives the whole house (Components)."""

from __future__ import annotations

import ast
import inspect
import typing
from pathlib import Path

from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from grader.app import create_app
from grader.components import Components

ROOT = Path(__file__).resolve().parents[2]


def _calls(dependant: Dependant) -> list[typing.Callable[..., typing.Any]]:
    found = [dependant.call] if dependant.call is not None else []
    for sub in dependant.dependencies:
        found.extend(_calls(sub))
    return found


def _takes_components(call: typing.Callable[..., typing.Any]) -> bool:
    hints = typing.get_type_hints(call, include_extras=True)
    for name, hint in hints.items():
        if name == "return":
            continue
        base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
        if base is Components:
            return True
    return False


def _api_routes(routes: typing.Iterable[typing.Any]) -> list[APIRoute]:
    found: list[APIRoute] = []
    for route in routes:
        if isinstance(route, APIRoute):
            found.append(route)
        included = getattr(route, "original_router", None)  # an included router (FastAPI 0.13x)
        if included is not None:
            found.extend(_api_routes(included.routes))
    return found


def test_no_route_receives_the_whole_house() -> None:
    routes = _api_routes(create_app().routes)
    assert len(routes) > 20  # the API and the pages, not an empty app
    offenders = sorted(
        f"{route.path}: {call.__qualname__}"
        for route in routes
        for call in _calls(route.dependant)
        if _takes_components(call)
    )
    assert offenders == []


def test_only_deps_reaches_into_components() -> None:
    # A route module that imports Components could hand it on; only deps.py looks parts up in it.
    importers = []
    for path in sorted([*(ROOT / "grader/api").glob("*.py"), *(ROOT / "grader/web").glob("*.py")]):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "grader.components":
                importers.append(path.name)
    assert importers == ["deps.py"]


def test_a_dependency_that_looks_up_a_part_runs_on_the_loop() -> None:
    # A plain `def` dependency would cost every request a hop through the thread pool.
    from grader.api import deps

    dependencies = [
        typing.get_args(value)[1].dependency
        for name, value in vars(deps).items()
        if name.endswith("Dep") and typing.get_origin(value) is typing.Annotated
    ]
    lookups = [call for call in dependencies if call.__name__.startswith("get_")]
    assert len(lookups) >= 13
    assert all(inspect.iscoroutinefunction(call) for call in lookups)


def test_a_part_looked_up_is_one_the_components_have() -> None:
    import pytest

    from grader.api import deps

    with pytest.raises(AttributeError, match="no part 'registy'"):
        deps._part("registy")
