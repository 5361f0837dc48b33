"""grader/problems/registry.py: uploaded problems next to files, what wins on a clash, and reloads."""

from __future__ import annotations

import os
from pathlib import Path

from grader.problems.registry import Registry, directory_fingerprint, parse_problem, upload_source
from sandbox.runner.messages import Limits

DEFAULTS = Limits(time_s=2.0, memory_mb=1024, output_kb=256)


def renamed(text: str, mutate, problem_id: str) -> str:
    return mutate(text, "id: tiny-problem", f"id: {problem_id}")


def test_uploads_are_served_next_to_files(tmp_path: Path, problem_yaml, mutate) -> None:
    (tmp_path / "file.yaml").write_text(problem_yaml)
    registry = Registry(DEFAULTS)
    registry.set_uploads({"uploaded": renamed(problem_yaml, mutate, "uploaded")})
    assert registry.load_dir(tmp_path) == []
    assert [p.id for p in registry.all()] == ["tiny-problem", "uploaded"]
    assert registry.get("uploaded").uploaded and registry.get("uploaded").path is None  # type: ignore[union-attr]
    assert not registry.get("tiny-problem").uploaded  # type: ignore[union-attr]


def test_a_reload_of_the_directory_keeps_the_uploads(tmp_path: Path, problem_yaml, mutate) -> None:
    registry = Registry(DEFAULTS)
    registry.put_upload(registry.make(parse_problem(renamed(problem_yaml, mutate, "kept"), "x"), uploaded=True))
    (tmp_path / "a.yaml").write_text(problem_yaml)
    registry.load_dir(tmp_path)
    (tmp_path / "a.yaml").unlink()
    registry.load_dir(tmp_path)
    assert [p.id for p in registry.all()] == ["kept"]


def test_on_an_id_clash_the_file_wins_and_the_upload_is_reported(tmp_path: Path, problem_yaml, mutate) -> None:
    (tmp_path / "tiny.yaml").write_text(problem_yaml)
    registry = Registry(DEFAULTS)
    registry.load_dir(tmp_path)
    upload = mutate(problem_yaml, "title: Tiny Problem", "title: Uploaded Title")
    errors = registry.set_uploads({"tiny-problem": upload})
    assert registry.get("tiny-problem").problem.title == "Tiny Problem"  # type: ignore[union-attr]
    assert registry.upload("tiny-problem") is not None
    [error] = errors
    assert error.source == upload_source("tiny-problem") and "shadowed by the file" in str(error)
    assert registry.errors == errors
    # Once the file goes, the upload is served.
    (tmp_path / "tiny.yaml").unlink()
    assert registry.load_dir(tmp_path) == []
    assert registry.get("tiny-problem").problem.title == "Uploaded Title"  # type: ignore[union-attr]


def test_put_and_remove_an_upload(problem_yaml) -> None:
    registry = Registry(DEFAULTS)
    loaded = registry.make(parse_problem(problem_yaml, "x"), uploaded=True)
    registry.put_upload(loaded)
    assert registry.get("tiny-problem") is loaded and registry.upload("tiny-problem") is loaded
    registry.remove_upload("tiny-problem")
    assert registry.get("tiny-problem") is None and registry.all() == []


def test_a_stored_upload_that_no_longer_validates_is_reported(problem_yaml, mutate) -> None:
    registry = Registry(DEFAULTS)
    errors = registry.set_uploads(
        {
            "broken": mutate(renamed(problem_yaml, mutate, "broken"), "difficulty: easy", "difficulty: trivial"),
            "good": renamed(problem_yaml, mutate, "good"),
            "elsewhere": renamed(problem_yaml, mutate, "not-elsewhere"),
        }
    )
    assert [p.id for p in registry.all()] == ["good"]
    assert sorted(error.source for error in errors) == ["upload:broken", "upload:elsewhere"]
    assert "stored under 'elsewhere'" in str(next(e for e in errors if e.source == "upload:elsewhere"))


def test_fingerprint_sees_added_edited_and_removed_files(tmp_path: Path, problem_yaml) -> None:
    empty = directory_fingerprint(tmp_path)
    path = tmp_path / "p.yaml"
    path.write_text(problem_yaml)
    added = directory_fingerprint(tmp_path)
    assert added != empty
    assert directory_fingerprint(tmp_path) == added, "nothing changed, nothing seen"
    path.write_text(problem_yaml + "# an edit of the same size? no: a longer one\n")
    edited = directory_fingerprint(tmp_path)
    assert edited != added
    stat = path.stat()
    path.write_text(problem_yaml + "# an edit of the same size? no: a longer one\n".replace("a", "b"))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert directory_fingerprint(tmp_path) != edited, "same size, later mtime"
    (tmp_path / "notes.txt").write_text("ignored")
    path.unlink()
    assert directory_fingerprint(tmp_path) == empty
    assert directory_fingerprint(tmp_path / "missing") == frozenset()


def test_a_file_saved_half_way_keeps_its_last_valid_version(tmp_path: Path, problem_yaml, mutate) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(problem_yaml)
    registry = Registry(DEFAULTS)
    registry.load_dir(tmp_path)
    served = registry.get("tiny-problem")
    path.write_text(problem_yaml.split("tests:")[0] + "tests:\n  - name: half-writ")
    [error] = registry.load_dir(tmp_path)
    assert registry.get("tiny-problem") is served
    assert "p.yaml" in str(error) and "the last valid version of 'tiny-problem' is still served" in str(error)
    path.write_text(mutate(problem_yaml, "Tiny Problem", "Fixed"))
    assert registry.load_dir(tmp_path) == []
    assert registry.get("tiny-problem").problem.title == "Fixed"  # type: ignore[union-attr]
    # A new file that never validated has nothing to keep.
    (tmp_path / "new.yaml").write_text("id: [broken\n")
    [error] = registry.load_dir(tmp_path)
    assert "still served" not in str(error)
