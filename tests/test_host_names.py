"""``--host`` is checked by warmscope, not left to ssh: a name, an alias, ``user@host``,
``[v6]`` or an ``ssh://`` URI; anything a shell or an ``ssh_config`` ``ProxyCommand … %h``
would read as more than a name is refused in one line, before any ssh runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import warmscope
from warmscope.core.data.settings.run_settings import HOST_FORM


@pytest.mark.parametrize(
    "host", ["box", "gpu-box", "user@box", "10.0.0.5", "[fe80::1%eth0]", "ssh://me@box:2222"]
)
def test_destinations_ssh_takes_are_taken(host: str) -> None:
    assert HOST_FORM.fullmatch(host)


@pytest.mark.parametrize(
    "host",
    ["h$(touch X)", "h`id`", "-oProxyCommand=x", "a b", "a;b", "x@y@z", "box\u200b", "", "h\n"],
)
def test_anything_more_than_a_name_is_refused(host: str) -> None:
    assert not HOST_FORM.fullmatch(host)


def test_a_host_with_a_command_in_it_is_one_line_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    r = warmscope("run", "sample:trivial", "--host", f"h$(touch {marker})", "--iters", "2")
    assert r.code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "expected a host name" in lines[0], r.stderr
    assert not marker.exists()
