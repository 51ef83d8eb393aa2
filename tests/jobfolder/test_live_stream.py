"""The live output stream: the node's copier (``node/tee.py``, a real process fed through
real pipes) writes records, the kernel's reader takes whole records in order, and the text
renders as a notebook shows a local cell's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hpc_magics.jobfolder.live_stream import StreamReader, StreamText, record
from hpc_magics.node import tee


def rendered(*pieces: tuple[str, str]) -> list[tuple[str, str]]:
    text = StreamText()
    for name, piece in pieces:
        text.add(name, piece)
    return [(entry["name"], entry["text"]) for entry in text.outputs()]


class Copier:
    """``node/tee.py`` as the runner starts it, fed through real pipes."""

    def __init__(self, folder: Path) -> None:
        self.copy, self.stream = folder / "output.txt", folder / "output.stream"
        reads, self.writes = zip(*(os.pipe() for _ in range(3)), strict=True)
        self.ack, ack_write = os.pipe()
        theirs = (*reads, ack_write)
        self.process = subprocess.Popen(
            [sys.executable, "-S", tee.__file__, str(self.copy), str(self.stream),
             *map(str, theirs)], pass_fds=theirs, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in theirs:
            os.close(fd)

    def close(self) -> int:
        for fd in self.writes:
            os.close(fd)
        os.close(self.ack)
        return self.process.wait(timeout=30)


def test_the_copier_writes_records_the_reader_takes_in_order(tmp_path: Path) -> None:
    copier = Copier(tmp_path)
    out, err, _ = copier.writes
    reader = StreamReader(copier.stream)
    said: list[tuple[str, str]] = []
    # one write at a time, each read back before the next: the order is the writer's
    for fd, data in ((out, "one\n"), (err, "caf\u00e9 "), (out, "two\n"), (err, "err\n")):
        os.write(fd, data.encode())
        while not (new := reader.read_new()):
            time.sleep(0.01)
        said += new
    assert copier.close() == 0
    assert said == [("stdout", "one\n"), ("stderr", "caf\u00e9 "), ("stdout", "two\n"),
                    ("stderr", "err\n")]
    assert copier.copy.read_text() == "one\ncafé two\nerr\n"  # the plain copy, as before


def test_a_display_comes_after_what_was_printed_before_it(tmp_path: Path) -> None:
    """As the runner does: print, send the display on its own pipe and wait for the
    copier's word; the copier puts the display after what was printed before it and
    before what is printed after, however it finds the pipes."""
    copier = Copier(tmp_path)
    out, _, shown = copier.writes
    message = {"data": {"text/plain": "<rich>"}, "metadata": {}, "display_id": None,
               "update": False}
    for round_ in range(50):
        os.write(out, f"printed {round_}\n".encode())
        os.write(shown, record("display", json.dumps(message).encode()))
        assert os.read(copier.ack, 1) == b"\n"
    assert copier.close() == 0
    outputs = StreamReader(copier.stream).read_all()
    expected = [piece for round_ in range(50) for piece in
                (("stdout", f"printed {round_}\n"), ("display", json.dumps(message)))]
    assert outputs == expected
    assert "<rich>" not in copier.copy.read_text()  # output.txt stays the printed text


def test_a_half_written_record_waits_and_a_split_character_comes_out_whole(
        tmp_path: Path) -> None:
    path = tmp_path / "output.stream"
    data = record("stdout", "caf\u00e9".encode()[:-1]) + record("stdout", b"\xa9!\n")
    reader = StreamReader(path)
    assert reader.read_new() == []  # no file yet
    with path.open("ab") as stream:
        stream.write(data[:5])  # the first record, half of it
        stream.flush()
        assert reader.read_new() == []
        stream.write(data[5:])
    assert reader.read_new() == [("stdout", "caf\u00e9!\n")]
    assert reader.read_new() == []


def test_a_damaged_stream_is_read_no_further(tmp_path: Path) -> None:
    path = tmp_path / "output.stream"
    path.write_bytes(record("stdout", b"fine\n") + b"x" * 100)
    reader = StreamReader(path)
    assert reader.read_all() == [("stdout", "fine\n")]
    assert reader.damaged


def test_a_progress_bar_of_ten_thousand_steps_is_one_line() -> None:
    steps = [("stderr", f"\r{i:5d}/10000") for i in range(10_001)]
    assert rendered(*steps, ("stderr", "\n")) == [("stderr", "10000/10000\n")]
    assert rendered(*steps) == [("stderr", "10000/10000")]  # while it runs


def test_carriage_returns_as_jupyter_renders_them() -> None:
    # a carriage return at a piece's end may be the first half of "\r\n"
    assert rendered(("stdout", "done\r"), ("stdout", "\nnext\n")) == [("stdout",
                                                                       "done\nnext\n")]
    assert rendered(("stdout", "a\rb\rc\n"), ("stdout", "x\r")) == [("stdout", "c\nx")]
    assert rendered(("stdout", "50%\r"), ("stdout", "100%\n")) == [("stdout", "100%\n")]


def test_streams_keep_their_order_each_run_one_entry() -> None:
    assert rendered(("stdout", "a\n"), ("stdout", "b\n"), ("stderr", "warn\n"),
                    ("stdout", "c\n")) == [("stdout", "a\nb\n"), ("stderr", "warn\n"),
                                           ("stdout", "c\n")]


def test_too_much_output_keeps_its_end_and_says_where_the_rest_is() -> None:
    text = StreamText(limit=1000)
    for i in range(1000):
        text.add("stdout", f"line {i:04d}\n")
    shown = text.outputs()
    assert "here are its last 0.001 MB; all of it is in output.txt" in shown[0]["text"]
    assert shown[-1]["text"].endswith("line 0999\n")
    assert shown[-1]["text"].startswith("line ")  # cut at a line's start
    assert len(shown[-1]["text"]) <= 1000


def test_a_display_is_an_entry_of_its_own_and_an_update_replaces_it_in_place() -> None:
    def shown(value: str, display_id: str | None = None, update: bool = False) -> str:
        return json.dumps({"data": {"text/plain": value}, "metadata": {},
                           "display_id": display_id, "update": update})

    text = StreamText()
    for piece in (("stdout", "a\n"), ("display", shown("loss 0.9", "p")),
                  ("stdout", "b\n"), ("display", shown("loss 0.1", "p", update=True)),
                  ("display", shown("other"))):
        text.add(*piece)
    assert text.outputs() == [
        {"output_type": "stream", "name": "stdout", "text": "a\n"},
        {"output_type": "display_data", "data": {"text/plain": "loss 0.1"}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": "b\n"},
        {"output_type": "display_data", "data": {"text/plain": "other"}, "metadata": {}}]


@pytest.mark.parametrize("imported", ["", "import IPython.display\n"],
                         ids=["imported-by-the-cell", "imported-before"])
def test_a_cell_using_ipythons_own_display_shows_the_rich_form(
        imported: str, tmp_path: Path) -> None:
    """``from IPython.display import display`` on the node (no kernel there) shows the HTML,
    not the object's text (seen in the browser: ``<IPython.core.display.HTML object>``)."""
    copy, stream = tmp_path / "output.txt", tmp_path / "output.stream"
    cell = (f"{imported}from pathlib import Path\n"
            "from hpc_magics.node.runner import _tee_output\n"
            f"with _tee_output(Path({str(copy)!r}), Path({str(stream)!r})):\n"
            "    from IPython.display import HTML, display\n"
            "    display(HTML('<b>rich</b>'))\n")
    subprocess.run([sys.executable, "-c", cell], check=True, timeout=60)  # a fresh node
    [(kind, shown)] = StreamReader(stream).read_all()
    assert kind == "display"
    assert json.loads(shown)["data"]["text/html"] == "<b>rich</b>"


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="pidfd_open: Linux only")
def test_the_runner_learns_of_the_copiers_end_without_polling(tmp_path: Path) -> None:
    """Every cell waits for its copier to end before its results are written: the kernel
    says when (a pidfd), where ``Popen.wait``'s naps (growing to 50 ms) came after it had
    ended. Counted: no nap at all, and the output complete once the cell's block is left."""
    copy, stream = tmp_path / "output.txt", tmp_path / "output.stream"
    cell = ("import time\nfrom pathlib import Path\n"
            "from hpc_magics.node.runner import _tee_output\n"
            "naps, sleep = [], time.sleep\n"
            f"with _tee_output(Path({str(copy)!r}), Path({str(stream)!r})):\n"
            "    print('said', flush=True)\n"
            "    time.sleep = lambda s: naps.append(s) or sleep(s)\n"
            "time.sleep = sleep\n"
            f"print(len(naps), Path({str(copy)!r}).read_text().strip())\n")
    done = subprocess.run([sys.executable, "-c", cell], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.splitlines()[-1] == "0 said"
