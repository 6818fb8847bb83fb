"""The benchmarks page as a reader reads it: every result file says which command wrote it, and the load it
recorded is on its machine line."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import benchmarks_page  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
LOAD_KEYS = ("load", "load_before", "load_average_1min", "load_average_1min_start_end",
             "load_average_1min_range", "load_avg", "load_average_1min_during_timing")


def _sections(tmp_path: Path) -> dict[str, str]:
    benchmarks_page.write(tmp_path, RESULTS)
    text = (tmp_path / "benchmarks.md").read_text()
    return {part.split("`", 1)[0]: part for part in ("\n" + text).split("\n## `")[1:]}


def test_every_result_names_its_command_and_shows_its_load(tmp_path):
    sections = _sections(tmp_path)
    files = sorted(p.relative_to(RESULTS).as_posix() for p in RESULTS.rglob("*.json"))
    assert sorted(sections) == files
    for name, text in sections.items():
        command = text.split("- **Command**: `", 1)[1].split("`\n", 1)[0]
        assert command != "not recorded", name
        if command.startswith("python benchmarks/"):
            assert (ROOT / command.split()[1]).exists(), (name, command)
        meta = benchmarks_page._meta(json.loads((RESULTS / name).read_text()))
        if any(k in meta for k in LOAD_KEYS):
            machine = text.split("- **Machine**: ", 1)[1].split("\n", 1)[0]
            assert "load" in machine, (name, machine)


def test_load_before_and_after_read_from_uptime_lines():
    meta = {"load": {"before": "19:50:07 up 18:56,  0 user,  load average: 1.06, 2.61, 2.78",
                     "after": "19:50:22 up 18:57,  0 user,  load average: 1.26, 2.58, 2.77"}}
    assert "load average (1 min) 1.06 before, 1.26 after" in benchmarks_page._machine(meta)
    assert "load average (1 min) 0.5 before, 3.3 after" in benchmarks_page._machine(
        {"load_before": [0.5, 2.4, 3.4], "load_after": [3.3, 2.6, 3.0]})
