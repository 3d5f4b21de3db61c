"""`--compile-cache`: which on-disk inductor/triton cache a compile run had, in its record."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import warmscope
from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.cli.sweep import sweep_cells
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings

FAST_COMPILE = ("--mode", "compile", "--set", "compile_backend=eager", "--iters", "3")
ONE_THREAD = ("--set", "intra_op_threads=1")


def test_cold_cache_is_a_fresh_empty_folder_as_the_record_shows(tmp_path: Path) -> None:
    r = warmscope(
        "run",
        "sample:trivial",
        *FAST_COMPILE,
        *ONE_THREAD,
        "--compile-cache",
        "cold",
        "--record",
        str(tmp_path / "run.jsonl"),
        json_path=tmp_path / "run.json",
    )
    assert r.code == 0, r.stderr
    cache = r.doc["env"]["compile_cache"]  # type: ignore[index]
    assert cache["mode"] == "cold" and cache["entries_before"] == 0
    assert cache["had_entries"] is False
    folder = Path(cache["folders"]["inductor"]).parent
    assert folder.name.startswith("warmscope-compile-cache-")
    assert not folder.exists(), "a cold cache is the process's own and goes with it"
    # The record on disk says the same.
    assert read_run(tmp_path / "run.jsonl").env["compile_cache"] == cache


def test_one_run_defaults_to_the_users_cache() -> None:
    """A compile run that names no cache has the user's own, as torch alone would (a
    process in it records what it found there: ``test_warmup``'s compile warm-up, whose
    processes on the user's cache run as one run does)."""
    from warmscope.core.data.settings.compile_cache import default_compile_cache

    one = build_settings(make_parser("run").parse_args(["sample:trivial", "--mode", "compile"]))
    assert one.compile_cache is None
    assert default_compile_cache(repeated=False) == "user"
    assert default_compile_cache(repeated=True) == "cold"


def test_sweeps_default_to_a_cold_cache_for_compile_cells() -> None:
    args = make_parser("sweep").parse_args(
        ["sample:trivial", "--preset", "compile,torchscript", "--iters", "3"]
    )
    cells = sweep_cells(args, sweep=True)
    assert [c.settings.compile_cache for c in cells] == ["cold", None]
    args = make_parser("sweep").parse_args(
        ["sample:trivial", "--preset", "compile,eager", "--compile-cache", "warm"]
    )
    assert [c.settings.compile_cache for c in sweep_cells(args, sweep=True)] == ["warm", "warm"]
    one = make_parser("run").parse_args(["sample:trivial", "--mode", "compile"])
    assert build_settings(one).compile_cache is None  # one run: the user's cache, as before
    assert (
        "--compile-cache"
        in build_settings(
            make_parser("run").parse_args(["sample:trivial", "--compile-cache", "cold"])
        ).command_line()
    )


def test_a_compile_warmup_is_measured_cold_and_on_the_users_cache_beside_it() -> None:
    """One policy: a warm-up of a compile runs cold by default (a fresh server's start), the
    user's own cache beside it only where it has entries; a cache asked for is the only one."""
    from warmscope.core.data.settings.compile_cache import warmup_compile_caches

    def settings(*extra: str) -> RunSettings:
        return build_settings(make_parser("warmup").parse_args(["sample:trivial", *extra]))

    compiled = settings("--mode", "compile")
    assert warmup_compile_caches(compiled, user_has_entries=False) == ["cold"]
    assert warmup_compile_caches(compiled, user_has_entries=True) == ["cold", "user"]
    asked = settings("--mode", "compile", "--compile-cache", "user")
    assert warmup_compile_caches(asked, user_has_entries=True) == ["user"]
    assert warmup_compile_caches(settings(), user_has_entries=True) == []
    help_text = " ".join(make_parser("warmup").format_help().split())
    assert "by default every process on a cold cache" in help_text
    assert "the default for one run" not in help_text


def test_user_has_entries_looks_in_the_users_own_folders(tmp_path: Path) -> None:
    from warmscope.core.run.compile_cache import user_has_entries

    inductor = tmp_path / "inductor"
    env = {"TORCHINDUCTOR_CACHE_DIR": str(inductor), "TRITON_CACHE_DIR": str(tmp_path / "t")}
    assert not user_has_entries(env)
    (inductor / "x").mkdir(parents=True)
    (inductor / "x" / "entry").write_text("")
    assert user_has_entries(env)
