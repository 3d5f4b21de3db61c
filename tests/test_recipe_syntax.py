"""No text from a path, record, model, warning, input spec or setting changes the syntax of a
recipe: the Python file parses to the same statements, and the C++ file has the same code
outside its string literals and comments, whatever the text (hypothesis); and a real warm-up
of a target in a folder named to break out of a docstring runs nothing of the name."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import TARGETS, warmscope
from warmscope.core.base.code_text import c_string, comment_text, py_literal
from warmscope.core.output.recipe import Call, Provenance, Recipe, emit_python, split_header
from warmscope.core.output.recipe_cpp import emit_cpp

HOSTILE = [
    '"""',
    "'''",
    "\n",
    "\r",
    "\\",
    "*/",
    "/*",
    "??/",
    "\u202e",
    "\u200b",
    "\u2028",
    "\x00",
    "\x1b[2J",
    '" + __import__("os").system("touch pwned") + "',
    '\nstatic int pwned = system("touch pwned");\n',
]
texts = st.one_of(
    st.text(max_size=40),
    st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=4).map("".join),
    st.tuples(st.text(max_size=10), st.sampled_from(HOSTILE), st.text(max_size=10)).map("".join),
)


def recipe_with(text: str, mode: str = "script") -> tuple[Recipe, Provenance]:
    """A recipe where every place outside text can reach holds ``text``."""
    recipe = Recipe(
        label="warm-up calls",
        mode=mode,
        specs=[
            {"dtype": "float32", "shape": [1, "T", 4], "name": None, "gen": "fill", "args": [1.5]},
            {"dtype": "int64", "shape": [1, "T"], "name": None, "gen": "randint", "args": [0, 9]},
        ],
        shapes=[{"T": 2}, {"T": 3}],
        calls=[Call({"T": 2}, 2, text), Call({"T": 3}, 1, "first call " + text)],
        settings={"intra_op_threads": 1, "matmul_precision": "high"},
        notes=[text, f"T=3: {text}"],
        compile_options={"backend": text} if mode == "compile" else {},
    )
    proof = Provenance(
        outcome="not verified",
        verdict=f"not verified: {text}'s first call is 1.78× its steady p50",
        figures=[f"{text}: first call 20.6 s → 135 µs over steady"],
        command=["warmscope", "warmup", text, "--input", text],
        torch=text,
        processes=2,
    )
    return recipe, proof


def shape_of(tree: ast.AST) -> str:
    """The statements with every constant blanked: what text may not change."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


PLAIN_PY = {
    mode: shape_of(ast.parse(emit_python(*[recipe_with("x", mode)[0]], target="x")))
    for mode in ("script", "compile")
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts, st.sampled_from(["script", "compile"]))
def test_the_python_file_parses_to_the_same_statements_whatever_the_text(
    text: str, mode: str
) -> None:
    recipe, proof = recipe_with(text, mode)
    for source in (
        emit_python(recipe, target=text),
        emit_python(recipe, target=text, provenance=proof),
    ):
        assert shape_of(ast.parse(source)) == PLAIN_PY[mode]
        assert all(ch.isprintable() or ch == "\n" for ch in source), repr(source)
        header, _ = split_header(source)
        assert header.count('"""') == 2


LITERAL_OR_COMMENT = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def code_of(source: str) -> str:
    """The C++ file with its comments and string literals taken out."""
    joined = source.replace("\\\n", "")  # line splices first, as the compiler does
    code = LITERAL_OR_COMMENT.sub("", joined)
    return "\n".join(line for line in code.splitlines() if line.strip())


PLAIN_CPP = code_of(emit_cpp(recipe_with("x")[0].to_json(), "x"))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts)
def test_the_cpp_file_has_the_same_code_outside_its_literals_whatever_the_text(text: str) -> None:
    recipe, proof = recipe_with(text)
    for source in (emit_cpp(recipe.to_json(), text), emit_cpp(recipe.to_json(), text, proof)):
        assert code_of(source) == PLAIN_CPP
        assert all(ch.isprintable() or ch == "\n" for ch in source), repr(source)
        assert not any(line.endswith("\\") for line in source.splitlines())
        assert "??" not in source  # no trigraph, whatever the compiler's mode


@given(st.text())
def test_escaped_text_round_trips(text: str) -> None:
    assert ast.literal_eval(py_literal(text)) == text
    escaped = comment_text(text)
    assert escaped.isprintable() and '"' not in escaped and not escaped.endswith("\\")
    assert ast.literal_eval('"' + escaped + '"') == text
    literal = c_string(text)
    assert literal.isascii() and literal.isprintable() and "??" not in literal


FOLDER = (
    'q""" if __import__("os").system("touch PWNED") else """\nstatic int p = system("touch PWNED");'
)


def test_a_target_in_a_folder_named_to_break_out_runs_nothing_of_its_name(tmp_path: Path) -> None:
    """The issue's own case: the name ran its command during the verification of a target in
    it. The warm-up now verifies, emits and replays without it running."""
    hostile = tmp_path / FOLDER
    hostile.mkdir()
    source = hostile / "models.py"
    source.write_text((TARGETS / "warmup_models.py").read_text())
    emitted = tmp_path / "r.py"
    r = warmscope(
        "warmup", f"{source}:conv", "--input", "1x8x16", "--repeat", "1", "--iters", "6",
        "--emit", str(emitted), "--record", str(tmp_path / "w"), "--quiet",
        timeout=300, cwd=tmp_path,
    )  # fmt: skip
    assert r.code in (0, 3), r.stderr
    text = emitted.read_text()
    ast.parse(text)
    assert "Target: " + comment_text(f"{source}:conv") in split_header(text)[0]
    replay = subprocess.run(
        [sys.executable, "-I", "-c", "import runpy; runpy.run_path('r.py')"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert replay.returncode == 0, replay.stderr[-2000:]
    assert not list(tmp_path.rglob("PWNED")) and not (Path.cwd() / "PWNED").exists()
