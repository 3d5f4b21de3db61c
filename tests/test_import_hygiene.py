"""Import hygiene: the UI never pays for torch, core never depends on Textual, and the agent's
siblings need nothing but the standard library."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import warmscope.tui as tui
from warmscope.core.child import agent

CORE = Path(agent.__file__).resolve().parent


def run(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *flags, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )


def test_session_import_pulls_no_torch() -> None:
    # The exact check a user can run: `python -X importtime -c "import warmscope.core.run.session"`.
    proc = run("import warmscope.core.run.session", "-X", "importtime")
    imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "warmscope.core.run.session" in imported
    assert not {m for m in imported if m == "torch" or m.startswith("torch.")}


def test_core_imports_neither_textual_nor_torch() -> None:
    # Every module of the package, found on disk: a new module is checked without a list to edit.
    # (The agent imports torch only inside main(), in the child.)
    code = (
        "import importlib, pkgutil, sys, warmscope.core as core\n"
        "names = [m.name for m in pkgutil.walk_packages(core.__path__, 'warmscope.core.')\n"
        "         if not m.name.endswith('.__main__')]  # running it would start the CLI\n"
        "assert len(names) > 15, names\n"
        "for name in names: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch'))\n"
        "print(','.join(bad))\n"
    )
    assert run(code).stdout.strip() == ""


def test_no_tui_module_imports_torch() -> None:
    # Every module of the package, its screens/ and widgets/ too, found on disk.
    code = (
        "import importlib, pkgutil, sys, warmscope.tui as tui\n"
        "names = [m.name for m in pkgutil.walk_packages(tui.__path__, 'warmscope.tui.')]\n"
        "assert len(names) > 40, names\n"
        "for name in names: importlib.import_module(name)\n"
        "print(sorted(k for k in sys.modules if k == 'torch' or k.startswith('torch.')))\n"
    )
    assert run(code).stdout.strip() == "[]"


def tui_imports() -> dict[str, set[str]]:
    """Each module of ``tui/`` and the modules of ``tui/`` it imports: at its top, in a
    function, or for type checking alone (every one is an arrow a reader follows)."""
    root = Path(tui.__file__).resolve().parent
    modules = {}
    for path in root.rglob("*.py"):
        parts = [p for p in path.relative_to(root).with_suffix("").parts if p != "__init__"]
        modules[".".join(["warmscope.tui", *parts])] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets.add(node.module)
                targets.update(f"{node.module}.{a.name}" for a in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def test_the_tuis_imports_have_no_cycle() -> None:
    """Screens and widgets talk to the app with messages; the app imports them, never the other
    way: a cycle would mean a module reaching back into one that uses it."""
    graph = tui_imports()
    assert len(graph) > 40 and graph["warmscope.tui.app"], "the check sees the package"
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            raise AssertionError("import cycle: " + " -> ".join([*path[path.index(name) :], name]))
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])


def test_no_screen_or_widget_imports_the_app() -> None:
    graph = tui_imports()
    below = [n for n in graph if n.startswith(("warmscope.tui.screens", "warmscope.tui.widgets"))]
    assert len(below) > 25
    reaching = sorted(n for n in below if "warmscope.tui.app" in graph[n])
    assert reaching == []


CHILD_SIDE = sorted(p.stem for p in CORE.glob("*.py") if p.stem not in ("__init__", "agent"))
"""Every module of the child's folder: the folder, not a list, says what is child-side."""


def test_the_agents_siblings_load_by_path_with_the_standard_library_alone() -> None:
    """``python -I -S``: no site-packages (no torch, no warmscope), no user paths, no PYTHON*
    variables. Each sibling the agent loads must import there, by path, as the child does."""
    code = (
        "import importlib, importlib.util, sys\n"
        f"folder = {str(CORE)!r}\n"
        "spec = importlib.util.spec_from_file_location('_warmscope_child', folder + '/__init__.py',"
        " submodule_search_locations=[folder])\n"
        "package = importlib.util.module_from_spec(spec)\n"
        "sys.modules['_warmscope_child'] = package\n"
        "spec.loader.exec_module(package)\n"
        f"for name in {CHILD_SIDE!r}:\n"
        "    importlib.import_module('_warmscope_child.' + name)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'warmscope')))\n"
    )
    assert run(code, "-I", "-S").stdout.strip() == "[]"


def test_the_agent_itself_starts_with_the_standard_library_alone() -> None:
    """The agent script loads every sibling before it needs torch; with its stdin closed (no
    parent) it then exits on its own, with the parent-gone code and nothing on stderr."""
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(CORE / "agent.py")],
        input="",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.stderr == ""
    assert proc.returncode == agent.outcome.EXIT_PARENT_GONE, proc.stderr


def test_the_tuis_first_frame_imports_no_analysis() -> None:
    """What the TUI imports before its first frame (the command line and the app): none of
    the digest, the sweeps, the profile analysis or the panes below the chart, which load once
    a run or a record is shown. ``benchmarks/tui_startup.py`` measures what this keeps cheap."""
    code = (
        "import sys, warmscope.cli.view, warmscope.tui.app\n"
        "from warmscope.cli import make_parser\n"
        "from warmscope.cli.options import build_settings\n"
        "from warmscope.core.run import remote_target\n"
        "args = make_parser(None).parse_args(['sample:trivial'])\n"
        "remote_target.resolve(build_settings(args))  # as cli/view.py checks the target\n"
        "print(','.join(sorted(sys.modules)))\n"
    )
    imported = set(run(code).stdout.strip().split(","))
    assert "warmscope.tui.screens.main_screen" in imported, "the check sees the app's imports"
    later = {
        "importlib.metadata",  # the version: read when --version asks
        "textual.widgets._tabbed_content",  # the panes' widgets: mounted after the frame
        "warmscope.core.output.digest",
        "warmscope.core.run.sweep",
        "warmscope.core.data.racing",
        "warmscope.core.data.first_call",
        "warmscope.tui.sweep_runner",
        "warmscope.tui.widgets.run.events_pane",
        "warmscope.tui.widgets.run.iteration_table",
        "warmscope.core.run.remote",  # the ssh machinery: a target over --host only
    }
    assert not later & imported, sorted(later & imported)
