"""The fields of the process around the model: a recipe, its memory and process caps, the
interpreter, the host, the compile cache, and the trust a file's code needs
(``WhereAndWhat``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from warmscope.core.data.settings.field_forms import (
    host_consent,
    python_consent,
    recipe_consent,
    trust_native_consent,
    trust_pickle_consent,
)
from warmscope.core.data.settings.setting import COMPILE_CACHE_MODES, Option, memory_size, setting

MAX_PROCS = 4096
"""The most processes and threads a run may hold at once by default: no real model comes near
it (a compile's workers, a data loader's), and a fork bomb stops there, not at the machine's
end."""
MIN_PROCS = 16


@dataclass
class WhereAndWhat:
    """What runs around the model and where: a recipe, the memory cap, the interpreter, the
    host, the compile cache, and the trust a file's code needs."""

    recipe: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--recipe",),
                    dict(
                        metavar="FILE.py",
                        help="run a warm-up recipe's prepare(model) after loading, timed as a "
                        "setup phase (see `warmscope warmup`); runs code from the file; with "
                        "--runtime cpp a C++ recipe (FILE.cpp, `warmup --emit-cpp`), built once",
                    ),
                ),
            ),
            trusted=False,
            consent=recipe_consent,
        ),
    )

    memory_limit: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--memory-limit",),
                    dict(
                        type=memory_size,
                        metavar="SIZE",
                        help="cap the run's memory (512M, 3G): its cgroup's memory.max where the "
                        "memory controller is delegated, else the child's address space "
                        "(RLIMIT_AS); a run that hits it ends failed, naming memory",
                    ),
                ),
            ),
        ),
    )

    max_procs: int = field(
        default=MAX_PROCS,
        metadata=setting(
            "int",
            (
                Option(
                    ("--max-procs",),
                    dict(
                        type=int,
                        default=MAX_PROCS,
                        metavar="N",
                        help=f"the most processes and threads the run may hold at once (default "
                        f"{MAX_PROCS}: a fork bomb in a model stops there): its cgroup's pids.max, "
                        "else RLIMIT_NPROC where not root; the record says which held",
                    ),
                ),
            ),
        ),
    )

    python: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--python",),
                    dict(metavar="PATH", help="interpreter for the child (one that has torch)"),
                ),
            ),
            trusted=False,
            consent=python_consent,
        ),
    )

    host: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--host",),
                    dict(
                        metavar="DEST",
                        help="run the child on DEST over ssh (as `ssh DEST` reaches it; more ssh "
                        "options in WARMSCOPE_SSH_OPTIONS); --python names the interpreter there",
                    ),
                ),
            ),
            trusted=False,
            consent=host_consent,
        ),
    )

    compile_cache: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--compile-cache",),
                    dict(
                        choices=COMPILE_CACHE_MODES,
                        help="compile runs: cold (a fresh empty inductor/triton cache per process), "
                        "warm (filled by an unrecorded first process), user (your own cache; the "
                        "default for one run)",
                    ),
                ),
            ),
        ),
    )
    """``cold``, ``warm`` or ``user`` (see ``compile_cache``); ``None``: ``user`` for one run.
    Only compile runs have one."""

    trust_pickle: bool = field(
        default=False,
        metadata=setting(
            "bool",
            (
                Option(
                    ("--trust-pickle",),
                    dict(
                        action="store_true",
                        help="allow torch.load of a pickled (non-TorchScript) module: runs code "
                        "from the file",
                    ),
                ),
            ),
            compared=False,
            trusted=False,
            consent=trust_pickle_consent,
        ),
    )

    trust_native: bool = field(
        default=False,
        metadata=setting(
            "bool",
            (
                Option(
                    ("--trust-native",),
                    dict(
                        action="store_true",
                        help="allow an AOTInductor package (.pt2): loading it runs the compiled "
                        "native code it holds",
                    ),
                ),
            ),
            compared=False,
            trusted=False,
            consent=trust_native_consent,
        ),
    )
