"""`cardmem receipts --stats --plot FILE`: ack and reply latency and cost per reply as an
SVG image a browser shows; a FILE that cannot be one is one clear line, and a write that
fails leaves whatever was there whole."""
from __future__ import annotations

import errno
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

from clikit import run

from cardmem.tools.ask import receipts
from cardmem.tools.ask.receipt_plot import nice_step

SVG = "{http://www.w3.org/2000/svg}"


def answer(i: int, reply: float, ack: float | None = None) -> dict:
    rec = {"id": f"20261130T1000{i:02d}Z-{i:06x}", "time": "2026-11-30T10:00:00+00:00",
           "question": f"q{i}", "outcome": "composed", "model": "claude-sonnet-4-6",
           "tool_calls": [], "floors": [], "tokens": {"input": 1000 * i, "output": 100},
           "timings": {"total_s": reply}}
    if ack is not None:
        rec["slack"] = {"channel": "C1", "thread_ts": "1.1", "user": "U1", "ack_s": ack,
                        "reply_s": reply}
    return rec


def texts(root: ET.Element) -> list[str]:
    return [t.text or "" for t in root.iter(f"{SVG}text")]


def test_the_plot_is_an_svg_of_latency_and_cost_with_percentiles_marked(store, tmp_path):
    for i in range(1, 41):
        receipts.append(store, answer(i, 1.0 + i / 10, ack=0.1 + i / 100 if i % 2 else None))
    target = tmp_path / "latency.svg"
    r = run("receipts", "--stats", "--plot", str(target), "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith(f"plot: {target} (open it in a browser)\n")
    assert "reply latency      p50 3.00 s" in r.stdout  # the terminal's stats all the same
    root = ET.fromstring(target.read_text())  # well-formed, with its size for a browser
    assert root.tag == f"{SVG}svg" and root.get("viewBox") and root.get("width")
    said = texts(root)
    assert "Ack latency (n=20): p50 0.29 s, p90 0.45 s, p99 0.49 s, max 0.49 s" in said
    assert "Reply latency (n=40): p50 3.00 s, p90 4.60 s, p99 5.00 s, max 5.00 s" in said
    assert any(t.startswith("Cost per reply (n=40): p50 $0.0615") for t in said)
    assert {"p50 3.00 s", "p90 4.60 s", "p99 5.00 s"} <= set(said)  # marked on the bars
    bars = [b for b in root.iter(f"{SVG}rect") if b.find(f"{SVG}title") is not None]
    tips = [b.find(f"{SVG}title").text for b in bars]
    replies = [t for t in tips if t.endswith(("reply", "replies")) and " s to " in t]
    assert sum(int(t.split(": ")[1].split()[0]) for t in replies) == 20 + 40  # ack + reply
    data = json.loads(run("receipts", "--plot", str(target), "--json",
                          "--store", str(store.root)).stdout)  # --plot implies --stats
    assert data["plot"] == str(target) and data["distribution"]["reply_s"]["n"] == 40


def test_a_store_with_no_answers_still_gets_a_plot_that_says_so(store, tmp_path):
    target = tmp_path / "empty.svg"
    r = run("receipts", "--plot", str(target), "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    said = texts(ET.fromstring(target.read_text()))
    assert "Reply latency (n=0)" in said and "no answers in these receipts (`cardmem ask` and " \
                                             "the Slack teammate write them)" in said


def test_a_file_that_cannot_be_the_plot_is_one_line_and_nothing_is_written(store, tmp_path):
    receipts.append(store, answer(1, 2.0))
    folder = tmp_path / "plots"
    folder.mkdir()
    cases = {
        str(folder): f"cardmem: --plot {folder}: is a folder; name the SVG file to write "
                     f"in it, e.g. {folder / 'latency.svg'}\n",
        str(folder / "latency.png"): f"cardmem: --plot {folder / 'latency.png'}: the plot is "
                                     "an SVG image: name the file with .svg, so a browser "
                                     "opens it as one\n",
        str(tmp_path / "nowhere" / "l.svg"): f"cardmem: --plot {tmp_path / 'nowhere' / 'l.svg'}"
                                             f": the folder {tmp_path / 'nowhere'} does not "
                                             "exist\n",
        " ": "cardmem: --plot: is empty; name the SVG file to write, e.g. latency.svg\n",
    }
    for value, said in cases.items():
        r = run("receipts", "--stats", "--plot", value, "--store", str(store.root))
        assert (r.returncode, r.stdout, r.stderr) == (2, "", said)
    assert list(folder.iterdir()) == [] and not (tmp_path / "nowhere").exists()


def unwritable(tmp_path: Path) -> Path:
    """A folder no file can be made in: /sys refuses even root, who passes a mode of 0."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    return folder


def test_a_folder_without_permission_is_one_line(store, tmp_path):
    receipts.append(store, answer(1, 2.0))
    target = unwritable(tmp_path) / "latency.svg"
    r = run("receipts", "--stats", "--plot", str(target), "--store", str(store.root))
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (f"cardmem: --plot {target}: cannot write: Permission denied; nothing "
                        "was written\n")
    assert not target.exists()


def test_a_write_that_fails_midway_leaves_the_old_plot_whole(store, tmp_path, monkeypatch):
    """The image goes to a temporary file beside FILE and is renamed over it only whole:
    a disk that fills up midway leaves the last plot as it was, and no temporary file."""
    receipts.append(store, answer(1, 2.0))
    target = tmp_path / "latency.svg"
    target.write_text("<svg>the last plot</svg>\n")

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    r = run("receipts", "--plot", str(target), "--store", str(store.root))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr == f"cardmem: --plot {target}: cannot write: No space left on device; " \
                       "nothing was written\n"
    assert target.read_text() == "<svg>the last plot</svg>\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latency.svg", "store"]


def test_help_shows_plot_with_an_example():
    r = run("receipts", "--help")
    assert "--plot FILE" in r.stdout and "cardmem receipts --stats --since 7d --plot " \
                                          "latency.svg" in r.stdout


def test_a_receipt_edited_to_infinity_is_left_out(store, tmp_path):
    """JSON reading takes `Infinity`: such a latency or token count is no number a chart
    can place (the terminal chart and the plot stopped with a traceback)."""
    receipts.append(store, answer(1, 2.0))
    receipts.append(store, answer(2, float("inf"), ack=float("nan")))
    receipts.append(store, {**answer(3, 3.0), "tokens": {"input": float("inf"), "output": 1}})
    target = tmp_path / "latency.svg"
    r = run("receipts", "--stats", "--plot", str(target), "--store", str(store.root))
    assert r.returncode == 0, r.stderr
    assert "reply latency      p50 2.00 s  p90 3.00 s" in r.stdout and "(n=2)" in r.stdout
    tips = [t.text for t in ET.fromstring(target.read_text()).iter(f"{SVG}title")]
    assert sum(int(t.split(": ")[1].split()[0]) for t in tips if " s to " in t) == 2


def test_bucket_widths_are_round_numbers():
    assert [nice_step(s, 10) for s in (1.0, 3.0, 0.07, 42.0, 0.0)] == [0.1, 0.5, 0.01, 5, 1]
