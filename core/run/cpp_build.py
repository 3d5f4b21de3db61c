"""What a ``--runtime cpp`` run needs built: the C++ agent (``core/child/cpp_make``, which
builds it here and, over ``--host``, on the remote), and the library of a C++ ``--recipe``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from warmscope.core.child.cpp_make import CACHE_VAR as CACHE_VAR
from warmscope.core.child.cpp_make import SOURCE as SOURCE
from warmscope.core.child.cpp_make import Agent as Agent
from warmscope.core.child.cpp_make import BuildError as BuildError
from warmscope.core.child.cpp_make import Torch as Torch
from warmscope.core.child.cpp_make import agent_for as agent_for
from warmscope.core.child.cpp_make import build as build
from warmscope.core.child.cpp_make import build_key as build_key
from warmscope.core.child.cpp_make import (
    built_once,
    private_folders,
    read_private,
    unsound,
    write_private,
)
from warmscope.core.child.cpp_make import cache_root as cache_root
from warmscope.core.child.cpp_make import command as command
from warmscope.core.child.cpp_make import compiler as compiler
from warmscope.core.child.cpp_make import first_error as first_error
from warmscope.core.child.cpp_make import locate_torch as locate_torch
from warmscope.core.child.outcome import UsageError

BUILDING = "building the C++ agent"


RECIPE_SHIM = """// A C++ warm-up recipe's prepare(module), for warmscope's C++ agent: the recipe file itself
// comes in by -include, built without its own main (WARMUP_NO_MAIN).
extern "C" void warmscope_prepare(torch::jit::Module* module) { *module = prepare(*module); }
"""
"""What the agent calls (``dlsym``): the recipe's own ``prepare``, unchanged."""


@dataclass(frozen=True)
class RecipeLibrary:
    """A C++ recipe (``warmup --emit-cpp``) built without its ``main`` into a library the
    agent loads, so that what is verified is that very file's ``prepare``."""

    source: Path
    folder: Path

    @property
    def path(self) -> Path:
        return self.folder / "recipe.so"

    @property
    def built(self) -> bool:
        return unsound(self.path) is None


@dataclass(frozen=True)
class Child:
    """What a ``--runtime cpp`` run starts: the agent, and the library of its ``--recipe``."""

    agent: Agent
    recipe: RecipeLibrary | None = None

    @property
    def built(self) -> bool:
        return self.agent.built and (self.recipe is None or self.recipe.built)

    def build(
        self,
        *,
        cancelled: Callable[[], bool] = lambda: False,
        tell: Callable[[str], None] | None = None,
    ) -> tuple[list[str], dict[str, str]]:
        """The agent's command and what its config gains (the recipe library), each built
        first where it is not yet."""
        binary = build(self.agent, cancelled=cancelled, tell=tell)
        if self.recipe is None:
            return [str(binary)], {}
        return [str(binary)], {"recipe": str(build_recipe(self, cancelled=cancelled, tell=tell))}


def child_for(python: str | None, recipe: str | None) -> Child:
    """What a C++ run of ``python``'s torch needs, with its recipe (a ``.cpp`` file)."""
    agent = agent_for(python)
    if recipe is None:
        return Child(agent)
    source = Path(recipe)
    try:
        text = source.read_bytes()
    except OSError as exc:
        raise UsageError(f"--recipe {recipe}: cannot read it ({exc.strerror})") from None
    key = build_key(agent.torch, agent.cxx, text + RECIPE_SHIM.encode())
    return Child(agent, RecipeLibrary(source.resolve(), cache_root() / "cpp-recipe" / key))


def build_recipe(
    child: Child,
    *,
    cancelled: Callable[[], bool] = lambda: False,
    tell: Callable[[str], None] | None = None,
) -> Path:
    """The recipe's library, built first where it is not yet (as ``build``)."""
    recipe = child.recipe
    assert recipe is not None
    agent = child.agent
    private_folders(recipe.folder, agent.root)
    shim = recipe.folder / "shim.cpp"
    if read_private(shim) != RECIPE_SHIM:
        write_private(shim, RECIPE_SHIM)
    extra = ("-shared", "-fPIC", "-DWARMUP_NO_MAIN", "-include", str(recipe.source))
    return built_once(
        recipe.folder,
        recipe.path,
        lambda out: command(agent.torch, agent.cxx, shim, out, extra),
        f"the C++ recipe {recipe.source.name}",
        agent,
        cancelled,
        tell,
    )
