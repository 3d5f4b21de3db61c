"""The TUI over checked-in records of real runs: no child process, deterministic."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Log, TextArea

from tests.tui_support import SharedApp, run, screen_text, settle
from warmscope.core.data import env_keys
from warmscope.core.data.reading import read_run
from warmscope.core.data.run import RunData
from warmscope.tui.app import WarmscopeApp, build_app
from warmscope.tui.run_view import RunEntry
from warmscope.tui.screens.event_screen import EventDetailScreen
from warmscope.tui.screens.help_screen import HelpScreen
from warmscope.tui.screens.history_screen import HistoryScreen
from warmscope.tui.widgets.run.events_pane import EventsPane
from warmscope.tui.widgets.run.iteration_table import IterationTable
from warmscope.tui.widgets.run.run_header import RunHeader

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "speech-script.jsonl"
NO_PROFILING = DATA / "speech-no-profiling.jsonl"
FAILED = DATA / "failed-at-3.jsonl"
H100_RECORDS = sorted(
    p for p in (DATA / "gpu_h100" / "runs").glob("*/*.jsonl") if "." not in p.stem
)  # the measured runs on an H100, not their explain/profile side records


@pytest.fixture(scope="module")
def opened() -> Iterator[SharedApp]:
    """``warmscope open speech-script.jsonl speech-no-profiling.jsonl``, one app for the tests
    that read these records (each starts from the first frame's screen: ``SharedApp``)."""
    with SharedApp(build_app(records=[SCRIPT, NO_PROFILING])) as shared:
        yield shared


def test_open_shows_the_first_record_lists_all_and_starts_nothing(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        assert [e.source for e in app.runs] == ["record", "record"]
        assert app.state.viewed is app.runs[0]
        assert app.state.live is None and all(e.session is None for e in app.runs)
        header = app.screen.query_one(RunHeader).plain
        assert "sample:speech" in header and "speech-script.jsonl" in header
        table = app.screen.query_one(IterationTable)
        assert len(table.rows) == 60 and table.rows[0][0] == 0  # a record opens at its start
        summary = app.runs[0].view.summary
        assert summary is not None and summary.steady_from is not None
        await pilot.press("h")
        assert isinstance(app.screen, HistoryScreen)
        assert app.screen.query_one("DataTable").row_count == 2
        await pilot.press("down", "enter")
        assert app.state.viewed is app.runs[1]
        assert "speech-no-profiling.jsonl" in app.screen.query_one(RunHeader).plain

    opened.run(scenario)


def test_an_event_opens_with_its_full_text(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        events = app.screen.query_one(EventsPane)
        titles = [e.title for e in events.rows]
        events.focus()
        await pilot.press("end")
        optimized = titles.index("Optimized Graph")
        events.cursor = optimized
        await pilot.press("enter")
        assert isinstance(app.screen, EventDetailScreen)
        text = app.screen.query_one(TextArea).text
        assert "Optimized Graph" in text and "graph(" in text
        await pilot.press("escape")
        table = app.screen.query_one(IterationTable)
        table.focus()
        await pilot.press("home", "enter", "t")  # iteration 0, all its text: the profiling run
        assert isinstance(app.screen, EventDetailScreen)
        assert "Profiled Graph" in app.screen.query_one(TextArea).text

    opened.run(scenario)


def test_help_lists_every_run_key_and_q_closes_it_then_quits() -> None:
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        for word in (
            "start a new run",
            "stop the run",
            "kill the run",
            "Compare",
            "Export",
            "Quit",
        ):
            assert word in text
        await pilot.press("q")  # closes the help, as Esc does: q quits from the main screen only
        await pilot.pause()
        assert app.screen is app.main and app.is_running
        await pilot.press("q")  # nothing is running: no question
        await pilot.pause()
        assert app.return_code == 0

    run(app, scenario)


def test_a_failed_record_shows_its_status_and_why() -> None:
    app = build_app(records=[FAILED])

    async def scenario(pilot: Pilot) -> None:
        header = app.screen.query_one(RunHeader).plain
        assert "failed" in header and "mat1 and mat2" in header
        log = app.screen.query_one("#stderr", Log)
        assert any("RuntimeError: mat1" in line for line in log.lines)
        assert app.screen.query_one("TabbedContent").active == "tab-stderr"
        assert len(app.screen.query_one(IterationTable).rows) == 3  # what was measured

    run(app, scenario)


def test_palette_offers_every_action(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        titles = {c.title for c in app.get_system_commands(app.screen)}
        for title in ("Run", "Stop", "Kill", "Settings", "History", "Compare", "Export", "Help"):
            assert title in titles
        assert "Next run: preset no-profiling" in titles

    opened.run(scenario)


def test_palette_runs_the_main_screens_own_actions(opened: SharedApp) -> None:
    """A main-screen key picked in the palette acts on the main screen, as the key does."""
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        commands = {c.title: c for c in app.get_system_commands(app.main)}
        table = app.main.query_one(IterationTable)
        assert not table.slowest_first
        await commands["Slowest first"].callback()  # as the palette runs it: awaited
        await pilot.pause()
        assert table.slowest_first
        assert "Slowest first" not in {c.title for c in app.get_system_commands(HelpScreen())}
        await commands["Slowest first"].callback()  # and back, as the key toggles it
        await pilot.pause()
        assert not table.slowest_first

    opened.run(scenario)


def test_export_of_a_record_writes_four_files(opened: SharedApp, tmp_path: Path) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("x")
        app.screen.query_one("#export-dir").value = str(tmp_path / "out")  # type: ignore[attr-defined]
        await pilot.press("enter")
        await settle(pilot)
        names = sorted(p.name for p in (tmp_path / "out").iterdir())
        assert names == [
            "speech-script.csv",
            "speech-script.json",
            "speech-script.md",
            "speech-script.report.md",
        ]
        assert "| first iteration |" in (tmp_path / "out" / "speech-script.md").read_text()
        assert "## Reproduce" in (tmp_path / "out" / "speech-script.report.md").read_text()

    opened.run(scenario)


def test_no_color_draws_in_greys_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = build_app(records=[SCRIPT])

    async def scenario(pilot: Pilot) -> None:
        assert app.no_color
        svg = app.export_screenshot()
        colours = set(re.findall(r"#([0-9a-fA-F]{6})\b", svg))
        colours -= {"ff5f57", "febc2e", "28c840"}  # the picture's window buttons, not the app
        assert colours
        for hex6 in colours:
            r, g, b = (int(hex6[i : i + 2], 16) for i in (0, 2, 4))
            assert max(r, g, b) - min(r, g, b) <= 4, hex6

    run(app, scenario)


def pane_lines(app: WarmscopeApp) -> list[str]:
    """What the Usage pane shows on screen, a string a line."""
    from warmscope.tui.widgets.run.utilization_pane import UtilizationPane

    pane = app.screen.query_one(UtilizationPane)
    assert pane.size.height >= 5, "the Usage pane takes the tab's height"
    return [pane.render_line(y).text.rstrip() for y in range(pane.size.height)]


def row(lines: list[str], label: str) -> str:
    """The one line of the pane whose name column holds ``label``."""
    from warmscope.tui.widgets.run.utilization_pane import NAME_W

    found = [line for line in lines if line.strip()[:NAME_W].rstrip() == label]
    assert len(found) == 1, (label, lines)
    return found[0]


def figure(value: float) -> str:
    """A rate or a share as the pane writes it: a decimal under 100, none from there."""
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def test_usage_pane_of_a_cpu_run_has_cpu_rows_and_says_why_no_gpu(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("2")
        await pilot.pause()
        lines = pane_lines(app)
        text = "\n".join(lines)
        assert lines[0].strip().startswith("child CPU")
        last = app.runs[0].data.samples[-1]
        assert f"{figure(last['cpu'])}%" in row(lines, "child CPU")
        assert "util" not in text and "GPU 0" not in text
        assert "no GPU: NVML unavailable" in text  # the recorded reason, in plain words

    opened.run(scenario)


def expected_gpu_rows(data: RunData, sample: dict[str, Any]) -> dict[str, list[str]]:
    """What each row of the pane must show for ``sample``, written from the record itself:
    each reading against the device's own ceiling as the record's NVML description gives it."""
    gpu = data.env["gpu"]
    used, total = sample["gpu_mem_mb"], gpu["memory_mb"]
    power, limit = sample["gpu_power_w"], gpu["power_limit_w"]
    return {
        "util": [f"{sample['gpu_util']}%"],
        "memory": [f"{used:,.0f} / {total:,.0f} MB", f"{100 * used / total:.0f}%"],
        "SM clock": [f"{sample['gpu_sm_mhz']:,} / {gpu['sm_max_mhz']:,} MHz"],
        "power": [f"{power:,.0f} / {limit:,.0f} W", f"{100 * power / limit:.0f}%"],
        "temp": [
            f"{sample['gpu_temp_c']}°C",
            f"PCIe tx {figure(sample['gpu_pcie_tx_mbs'])} MB/s",
            f"rx {figure(sample['gpu_pcie_rx_mbs'])} MB/s",
        ],
        "child": [
            f"SM {sample['gpu_proc_sm']:.0f}%",
            f"memory {sample['gpu_proc_mem_mb']:,.0f} MB",
        ],
        "child CPU": [f"{figure(sample['cpu'])}%"],
    }


def busiest(data: RunData) -> RunData:
    """``data`` cut after its sample of the highest GPU utilisation: the pane's newest."""
    cut = copy.copy(data)
    top = max(range(len(data.samples)), key=lambda k: data.samples[k].get("gpu_util", 0))
    cut.samples = data.samples[: top + 1]
    return cut


def mig_slice() -> RunData:
    """A MIG slice, derived from a real H100 record: NVML gives a slice no device-wide
    utilisation, power or PCIe readings, and no power limit; the sampler left them out."""
    data = read_run(next(p for p in H100_RECORDS if p.parent.name == "cnn-eager"))
    refused = ("gpu_util", "gpu_mem_util", "gpu_power_w", "gpu_pcie_tx_mbs", "gpu_pcie_rx_mbs")
    data.samples = [{k: v for k, v in s.items() if k not in refused} for s in data.samples]
    gpu = {k: v for k, v in data.env["gpu"].items() if k != "power_limit_w"}
    data.env["gpu"] = gpu | {"mig": True, "unsupported": ["pcie", "power", "power limit"]}
    return data


NO_NVML = "no GPU: NVML unavailable (NVML Shared Library Not Found)"


def without_nvml() -> RunData:
    """Derived from a real H100 record: the same run where NVML could not be loaded, so the
    parent wrote no NVML description, driver or GPU readings; the child's CUDA facts stay."""
    data = read_run(next(p for p in H100_RECORDS if p.parent.name == "cnn-eager"))
    data.env = {k: v for k, v in data.env.items() if k not in ("gpu", "gpus", "driver")}
    data.env["nvml"] = NO_NVML
    data.samples = [{k: v for k, v in s.items() if not k.startswith("gpu_")} for s in data.samples]
    return data


@dataclass
class GpuRuns:
    """One app over every GPU run the Usage pane tests read, and which runs are which."""

    shared: SharedApp
    h100: list[RunEntry]
    """Every H100 record, whole and cut at its busiest sample."""
    mig: RunEntry
    no_nvml: RunEntry


@pytest.fixture(scope="module")
def gpu_runs() -> Iterator[GpuRuns]:
    records = [read_run(record) for record in H100_RECORDS]
    cut = [run for data in records for run in (data, busiest(data))]
    app = build_app(records=[*cut, mig_slice(), without_nvml()])
    with SharedApp(app) as shared:
        assert len(app.runs) == len(cut) + 2, "every run opened"
        yield GpuRuns(shared, app.runs[: len(cut)], app.runs[-2], app.runs[-1])


def test_usage_pane_shows_each_h100_run_as_nvitop_would(gpu_runs: GpuRuns) -> None:
    # Every H100 record, whole and cut at its busiest sample, in one app: a view each.
    app = gpu_runs.shared.app
    assert len(gpu_runs.h100) == 2 * len(H100_RECORDS)
    for entry in gpu_runs.h100:
        gpu = entry.data.env["gpu"]
        assert gpu["sm_max_mhz"] == 1980 and gpu["power_limit_w"] == 700

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("2")
        await pilot.pause()
        for entry in gpu_runs.h100:
            app.viewer.show(entry)
            await pilot.pause()
            lines = pane_lines(app)
            name = entry.record_name
            # The header: the device and the child's CUDA facts, cut to the pane's width.
            facts = env_keys.shown(entry.data.env, "cuda_device")
            header = lines[0].removeprefix("GPU 0 · ").removesuffix("…")
            assert facts.startswith("NVIDIA H100 80GB HBM3, cuDNN 9.19.0") or "(sm 9.0)" in facts
            assert lines[0].startswith("GPU 0 · ") and facts.startswith(header), (name, lines[0])
            sample = entry.data.samples[-1]
            for label, texts in expected_gpu_rows(entry.data, sample).items():
                for text in texts:
                    assert text in row(lines, label), (name, label, text)
            assert "N/A" not in "\n".join(lines), name  # an H100 reports every reading

    gpu_runs.shared.run(scenario)


FITTING = ["cnn-eager-tui-run", "transformer-compile-reduce-overhead", "transformer-eager-tui-run"]


def test_usage_pane_fits_the_terminal(gpu_runs: GpuRuns) -> None:
    app = gpu_runs.shared.app
    # The whole records (each is followed by its cut) of these runs.
    fitting = [
        e for e in gpu_runs.h100[::2] if Path(e.data.record_path or "").parent.name in FITTING
    ]
    assert len(fitting) == len(FITTING)

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("2")
        for size in [(80, 24), (120, 40)]:
            await pilot.resize_terminal(*size)
            for entry in fitting:
                app.viewer.show(entry)
                await pilot.pause()
                fits(app, size, entry.record_name)

    gpu_runs.shared.run(scenario, size=(80, 24))


def fits(app: WarmscopeApp, size: tuple[int, int], name: str) -> None:
    """The Usage pane of the viewed run at ``size``: every line within it, every reading."""
    lines = pane_lines(app)
    width = app.screen.query_one("#usage").content_size.width
    assert all(len(line) <= width for line in lines), (name, size)
    sample = app.state.viewed.data.samples[-1]  # type: ignore[union-attr]
    rows = expected_gpu_rows(app.state.viewed.data, sample)  # type: ignore[union-attr]
    assert lines[0].startswith("GPU 0 · NVIDIA H100 80GB HBM3"), (name, size)
    if size == (80, 24):  # the readings, two to a line, and what fits whole of the rest
        for label in ("util", "memory", "SM clock", "power", "child", "child CPU"):
            assert all(text in row(lines, label) for text in rows[label]), (name, label)
        assert row(lines, "temp").strip().startswith(f"temp       {rows['temp'][0]} · PCIe tx ")
    else:  # a line a reading, the CPU rows with their sparklines
        assert rows["temp"][0] in row(lines, "temp"), name
        assert f"{figure(sample['gpu_pcie_tx_mbs'])} MB/s" in row(lines, "PCIe tx"), name
        assert f"{figure(sample['gpu_pcie_rx_mbs'])} MB/s" in row(lines, "PCIe rx"), name
        assert f"{sample['gpu_proc_sm']:.0f}%" in row(lines, "child SM"), name
        assert f"{sample['gpu_proc_mem_mb']:,.0f} MB" in row(lines, "child mem"), name
        for label in ("child CPU", "child RSS", "threads", "system CPU"):
            assert row(lines, label).endswith(("▁", "▂", "▃", "▄", "▅", "▆", "▇", "█")), label


def test_usage_pane_says_na_where_the_device_does_not_report(gpu_runs: GpuRuns) -> None:
    app = gpu_runs.shared.app
    data = gpu_runs.mig.data  # a MIG slice: ``mig_slice``
    gpu = data.env["gpu"]

    async def scenario(pilot: Pilot) -> None:
        app.viewer.show(gpu_runs.mig)
        await pilot.press("2")
        await pilot.pause()
        lines = pane_lines(app)
        assert lines[0].startswith("GPU 0 (MIG slice) · NVIDIA H100 80GB HBM3")
        assert row(lines, "util").split() == ["util", "N/A"]
        assert row(lines, "power").split() == ["power", "N/A"]
        assert "PCIe N/A" in row(lines, "temp")
        used = data.samples[-1]["gpu_mem_mb"]
        assert f"{used:,.0f} / {gpu['memory_mb']:,.0f} MB" in row(lines, "memory")
        # With room, the pane says what the device does not report.
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert "not reported by the device: pcie, power, power limit" in pane_lines(app)

    gpu_runs.shared.run(scenario)


def test_typing_q_in_a_form_field_types_it(opened: SharedApp) -> None:
    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        await pilot.press("e")
        field = app.screen.query_one("#field-target")
        field.focus()
        await pilot.press("end", "q")
        assert app.is_running
        assert field.value.endswith("q")  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert app.screen.id == "main"

    opened.run(scenario)


def test_chart_keys_switch_scale_and_warmup_view(opened: SharedApp) -> None:
    from warmscope.tui.widgets.run.latency_chart import LatencyChart

    app = opened.app

    async def scenario(pilot: Pilot) -> None:
        chart = app.screen.query_one(LatencyChart)
        assert chart.log_scale and "latency (log)" in str(chart.border_title)
        await pilot.press("l")
        assert not chart.log_scale and "latency (linear)" in str(chart.border_title)
        await pilot.press("z")
        assert chart.zoom and "warm-up view" in str(chart.border_title)
        lines = chart.build_lines(70, 12)
        # a 60-iteration run fits the view, an iteration a column: the axis ends at 60,
        # just after the 60th column
        assert lines[-1].plain.rstrip().endswith("60")
        assert lines[-1].plain.index("60") == 8 + 60
        await pilot.press("z", "l")
        assert chart.log_scale and not chart.zoom

    opened.run(scenario)


def test_the_usage_pane_repaints_only_the_readings_that_changed() -> None:
    import asyncio

    from textual.app import App, ComposeResult

    from warmscope.tui.run_view import RunView
    from warmscope.tui.widgets.run.utilization_pane import NAME_W, UtilizationPane

    data = read_run(next(p for p in H100_RECORDS if p.parent.name == "cnn-eager-tui-run"))

    class PaneApp(App[None]):
        def compose(self) -> ComposeResult:
            yield UtilizationPane(id="usage")

    async def scenario() -> None:
        app = PaneApp()
        async with app.run_test(size=(57, 11)) as pilot:  # the pane's size at 100x30
            pane = app.query_one(UtilizationPane)
            view = RunView()
            view.samples.append(data.samples[0])
            pane.show_view(view, data.env, "cuda")
            await pilot.pause()
            pane.show_view(view, data.env, "cuda")  # drawn once at this size: now it diffs
            assert pane.repainted == [], "nothing new, nothing sent"
            repainted = 0
            for sample in data.samples[1:60]:
                view.samples.append(sample)
                pane.show_view(view, data.env, "cuda")
                assert pane.repainted is not None
                # The header and the names stay; columns sized by the device's ceilings do not
                # move as the figures change, so a changed reading repaints its own cells.
                assert all(r.y > 0 and r.x >= NAME_W for r in pane.repainted), pane.repainted
                repainted += sum(r.width for r in pane.repainted)
                await pilot.pause()
            assert repainted < 59 * 57 * 11 / 4, "far less than the whole pane each time"

    asyncio.run(scenario())


def test_usage_pane_of_a_cuda_run_without_nvml_names_the_device_and_why_no_gpu_rows(
    gpu_runs: GpuRuns,
) -> None:
    app = gpu_runs.shared.app
    data = gpu_runs.no_nvml.data  # ``without_nvml``

    async def scenario(pilot: Pilot) -> None:
        app.viewer.show(gpu_runs.no_nvml)
        await pilot.press("2")
        await pilot.pause()
        lines = pane_lines(app)
        assert lines[0] == "cuda · NVIDIA H100 80GB HBM3, cuDNN 9.19.0"
        assert f"{figure(data.samples[-1]['cpu'])}%" in row(lines, "child CPU")
        assert NO_NVML in lines and "util" not in "\n".join(lines)

    gpu_runs.shared.run(scenario)
