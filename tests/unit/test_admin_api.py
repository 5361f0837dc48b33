"""The admin API's refusals that come before any sandbox: tokens, bodies, ids, clashes; and the poll.

The service here is real (SQLite in a temporary directory) but not started, so no sandbox runs: every
request below is answered before a problem would be checked. Uploads that are checked in real
sandboxes are in tests/integration/test_admin_api.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from grader.app import create_app
from grader.components import Components, build
from grader.config import Settings
from grader.storage import problem_data

TOKEN = "unit-test-admin-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/yaml"}


def make_service(tmp_path: Path, problem_yaml: str, mutate, **overrides: object) -> Components:
    problems = tmp_path / "problems"
    problems.mkdir(exist_ok=True)
    (problems / "file-problem.yaml").write_text(mutate(problem_yaml, "id: tiny-problem", "id: file-problem"))
    values: dict[str, object] = {
        "data_dir": tmp_path / "data",
        "problems_dir": problems,
        "admin_token": TOKEN,
        "problems_poll_s": 0,
        "max_grading_starts": 1,
    }
    values.update(overrides)
    service = build(Settings(**values))  # type: ignore[arg-type]
    service.db.create_all()
    service.watcher.poll()
    return service


@pytest.fixture
def service(tmp_path: Path, problem_yaml, mutate) -> Components:
    return make_service(tmp_path, problem_yaml, mutate)


@pytest.fixture
def client(service: Components) -> Iterator[TestClient]:
    with TestClient(create_app(service.settings, components=service)) as test_client:
        yield test_client


def test_uploads_are_off_without_a_configured_token(tmp_path: Path, problem_yaml, mutate) -> None:
    service = make_service(tmp_path, problem_yaml, mutate, admin_token="")
    with TestClient(create_app(service.settings, components=service)) as client:
        for method, path in [
            ("POST", "/api/problems"),
            ("PUT", "/api/problems/x"),
            ("DELETE", "/api/problems/x"),
            ("POST", "/api/problems/x/regrade"),
        ]:
            response = client.request(method, path, content=problem_yaml, headers=AUTH)
            assert response.status_code == 403, (method, path)
            assert "turned off" in response.json()["detail"]


@pytest.mark.parametrize(
    "authorization",
    [None, f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}", TOKEN, "Bearer", "Bearer ünïcødé".encode()],
    ids=["missing", "longer", "shorter", "basic", "no-scheme", "empty", "non-ascii"],
)
def test_no_or_a_wrong_token_is_401(client: TestClient, problem_yaml, authorization: str | bytes | None) -> None:
    headers: dict[str, str | bytes] = {"Content-Type": "application/yaml"}
    if authorization is not None:
        headers["Authorization"] = authorization
    for method, path in [("POST", "/api/problems"), ("DELETE", "/api/problems/x"), ("POST", "/api/problems/x/regrade")]:
        response = client.request(method, path, content=problem_yaml.encode(), headers=headers)
        assert response.status_code == 401, (method, response.text)
        assert response.headers["www-authenticate"] == "Bearer"


def test_the_token_scheme_is_case_insensitive(client: TestClient) -> None:
    response = client.delete("/api/problems/nothing-here", headers={"Authorization": f"bearer {TOKEN}"})
    assert response.status_code == 404


def test_a_body_that_is_not_yaml_text_is_415(client: TestClient, problem_yaml) -> None:
    headers = {**AUTH, "Content-Type": "application/json"}
    response = client.post("/api/problems", content=problem_yaml, headers=headers)
    assert response.status_code == 415
    assert "application/yaml" in response.json()["detail"]


@pytest.mark.parametrize("media", ["application/yaml; charset=utf-8", "application/x-yaml", "TEXT/YAML"])
def test_each_yaml_type_is_accepted(client: TestClient, problem_yaml, mutate, media: str) -> None:
    text = mutate(problem_yaml, "difficulty: easy", "difficulty: trivial")
    response = client.post("/api/problems", content=text, headers={**AUTH, "Content-Type": media})
    assert response.status_code == 422  # parsed: refused for its content, not its type


@pytest.mark.parametrize("media", ["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded"])
def test_what_a_cross_site_form_sends_is_not_yaml(client: TestClient, problem_yaml, media: str) -> None:
    """text/plain was once taken as YAML; a form on any page can send it, so no longer."""
    response = client.post("/api/problems", content=problem_yaml, headers={**AUTH, "Content-Type": media})
    assert response.status_code == 415
    assert "application/yaml" in response.json()["detail"]


def test_a_huge_body_is_413(client: TestClient) -> None:
    response = client.post("/api/problems", content=b"# " + b"x" * (3 * 1024 * 1024), headers=AUTH)
    assert response.status_code == 413


def test_a_body_that_is_not_utf8_is_422(client: TestClient) -> None:
    response = client.post("/api/problems", content=b"id: caf\xe9\n", headers=AUTH)
    assert response.status_code == 422
    assert "UTF-8" in response.json()["detail"]


def test_a_yaml_syntax_error_names_its_line(client: TestClient, problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "difficulty: easy", "difficulty: easy: hard")
    response = client.post("/api/problems", content=text, headers=AUTH)
    assert response.status_code == 422
    body = response.json()
    [error] = body["errors"]
    assert error.startswith(f"upload.yaml:{line_of(text, 'easy: hard')}: YAML syntax error")
    assert body["detail"] == error


def test_schema_errors_name_line_and_field(client: TestClient, problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "    weight: 2", "    weight: -1")
    response = client.put("/api/problems/tiny-problem", content=text, headers=AUTH)
    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error.startswith(f"tiny-problem.yaml:{line_of(text, 'weight: -1')}: tests.2.weight: ")


@pytest.mark.parametrize(
    ("method", "path", "source"),
    [("POST", "/api/problems", "upload.yaml"), ("PUT", "/api/problems/tiny-problem", "tiny-problem.yaml")],
)
def test_yaml_anchors_and_aliases_are_422_naming_the_line(
    client: TestClient, problem_yaml, mutate, line_of, method: str, path: str, source: str
) -> None:
    text = mutate(problem_yaml, "title: Tiny Problem", "title: &name Tiny Problem")
    text = mutate(text, "difficulty: easy", "source: *name\ndifficulty: easy")
    response = client.request(method, path, content=text, headers=AUTH)
    assert response.status_code == 422
    body = response.json()
    expected = f"{source}:{line_of(text, '&name')}: YAML anchors and aliases are not allowed (&name)"
    assert body["errors"] == [expected]
    assert body["detail"] == expected


def test_deeply_nested_yaml_is_422_not_500(client: TestClient, problem_yaml, mutate, line_of) -> None:
    text = mutate(problem_yaml, "tags: [demo]", "tags: " + "[" * 5000 + "]" * 5000)
    response = client.post("/api/problems", content=text, headers=AUTH)
    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error.startswith(f"upload.yaml:{line_of(text, 'tags: [[')}: YAML nested deeper than ")


def test_put_with_another_id_than_the_url_is_422(client: TestClient, problem_yaml, line_of) -> None:
    response = client.put("/api/problems/other-id", content=problem_yaml, headers=AUTH)
    assert response.status_code == 422
    [error] = response.json()["errors"]
    assert error == (
        f"other-id.yaml:{line_of(problem_yaml, 'id: tiny-problem')}: id: the file's id 'tiny-problem' "
        "is not the 'other-id' of the URL"
    )


def test_a_file_problem_cannot_be_added_replaced_or_deleted(client: TestClient, problem_yaml, mutate) -> None:
    text = mutate(problem_yaml, "id: tiny-problem", "id: file-problem")
    assert client.post("/api/problems", content=text, headers=AUTH).status_code == 409
    response = client.put("/api/problems/file-problem", content=text, headers=AUTH)
    assert response.status_code == 409
    assert "change the file" in response.json()["detail"]
    response = client.delete("/api/problems/file-problem", headers=AUTH)
    assert response.status_code == 409
    assert "remove the file" in response.json()["detail"]


def test_deleting_an_unknown_problem_is_404(client: TestClient) -> None:
    assert client.delete("/api/problems/nothing-here", headers=AUTH).status_code == 404


def test_regrade_of_an_unknown_problem_is_404(client: TestClient) -> None:
    assert client.post("/api/problems/nothing-here/regrade", headers=AUTH).status_code == 404


def test_regrade_of_a_problem_without_submissions(client: TestClient) -> None:
    response = client.post("/api/problems/file-problem/regrade", headers=AUTH)
    assert response.status_code == 202
    assert response.json()["requeued"] == 0 and response.json()["problem_id"] == "file-problem"


def test_no_sandbox_to_check_in_is_503(tmp_path: Path, problem_yaml, mutate) -> None:
    service = make_service(tmp_path, problem_yaml, mutate, sandbox_image="torchjudge-no-such-image")
    with TestClient(create_app(service.settings, components=service)) as client:
        response = client.post("/api/problems", content=problem_yaml, headers=AUTH)
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"]
        assert client.get("/api/problems/tiny-problem").status_code == 404


def test_the_admin_routes_are_documented(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "post" in paths["/api/problems"]
    assert {"put", "delete", "get"} <= set(paths["/api/problems/{problem_id}"])
    assert "application/yaml" in paths["/api/problems"]["post"]["requestBody"]["content"]
    assert "post" in paths["/api/problems/{problem_id}/regrade"]


# -- the poll that reloads problems ------------------------------------------------------------------------
def test_a_poll_picks_up_added_edited_and_removed_files(service: Components, problem_yaml, mutate) -> None:
    problems = service.settings.problems.dir
    assert service.watcher.poll() is False, "nothing changed since the last poll"
    (problems / "new.yaml").write_text(mutate(problem_yaml, "id: tiny-problem", "id: new-problem"))
    assert service.watcher.poll() is True
    version = service.registry.get("new-problem").version  # type: ignore[union-attr]
    (problems / "new.yaml").write_text(mutate(problem_yaml, "id: tiny-problem", "id: new-problem") + "# edited\n")
    service.watcher.poll()
    assert service.registry.get("new-problem").version == version, "a comment is not content"  # type: ignore[union-attr]
    edited = mutate(mutate(problem_yaml, "id: tiny-problem", "id: new-problem"), "Tiny Problem", "Renamed")
    (problems / "new.yaml").write_text(edited)
    service.watcher.poll()
    assert service.registry.get("new-problem").problem.title == "Renamed"  # type: ignore[union-attr]
    (problems / "new.yaml").unlink()
    service.watcher.poll()
    assert service.registry.get("new-problem") is None
    assert service.registry.get("file-problem") is not None


def test_a_poll_picks_up_uploads_stored_by_another_process(service: Components, problem_yaml, mutate) -> None:
    text = mutate(problem_yaml, "id: tiny-problem", "id: from-elsewhere")
    with service.db.session() as session:
        problem_data.save_uploaded_problem(session, problem_id="from-elsewhere", version="v", text=text)
    assert service.watcher.poll() is True
    assert service.registry.get("from-elsewhere").uploaded  # type: ignore[union-attr]
    with service.db.session() as session:
        problem_data.delete_uploaded_problem(session, problem_id="from-elsewhere")
    service.watcher.poll()
    assert service.registry.get("from-elsewhere") is None
