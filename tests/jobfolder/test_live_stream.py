"""The live output stream: the node's copier (``node/tee.py``, a real process fed through
real pipes) writes records, the kernel's reader takes whole records in order, and the text
renders as a notebook shows a local cell's output."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from hpc_magics.jobfolder.live_stream import StreamReader, StreamText, record
from hpc_magics.node import tee


def rendered(*pieces: tuple[str, str]) -> list[tuple[str, str]]:
    text = StreamText()
    for name, piece in pieces:
        text.add(name, piece)
    return [(entry["name"], entry["text"]) for entry in text.outputs()]


def test_the_copier_writes_records_the_reader_takes_in_order(tmp_path: Path) -> None:
    out_read, out_write = os.pipe()
    err_read, err_write = os.pipe()
    copy, stream = tmp_path / "output.txt", tmp_path / "output.stream"
    copier = subprocess.Popen(
        [sys.executable, "-S", tee.__file__, str(copy), str(stream), str(out_read),
         str(err_read)], pass_fds=(out_read, err_read), stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(out_read)
    os.close(err_read)
    reader = StreamReader(stream)
    said: list[tuple[str, str]] = []
    # one write at a time, each read back before the next: the order is the writer's
    for fd, data in ((out_write, "one\n"), (err_write, "caf\u00e9 "), (out_write, "two\n"),
                     (err_write, "err\n")):
        os.write(fd, data.encode())
        while not (new := reader.read_new()):
            time.sleep(0.01)
        said += new
    os.close(out_write)
    os.close(err_write)
    assert copier.wait(timeout=30) == 0
    assert said == [("stdout", "one\n"), ("stderr", "caf\u00e9 "), ("stdout", "two\n"),
                    ("stderr", "err\n")]
    assert copy.read_text() == "one\ncafé two\nerr\n"  # the plain copy, as before


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
