"""IPython syntax in a batch job: kept magics work under plain python, the rest go with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpc_magics.convert.magics import translate_magics

from .conftest import commented, convert, notebook, run_converted, runs


def test_shell_commands_run_with_python_values(tmp_path: Path) -> None:
    nb = notebook("name = 'batch'\n!echo \"hello {name}\" > greeting.txt",
                  "lines = !cat greeting.txt\nprint('read', lines)",
                  "for i in range(2):\n    !echo \"loop $HOME\" >> loop.txt")
    script, result = run_converted(nb, tmp_path)
    assert "get_ipython" not in script
    assert "read ['hello batch']" in result.stdout
    assert (tmp_path / "loop.txt").read_text().count("loop /") == 2


def test_bash_cell_runs_and_fails_loudly(tmp_path: Path) -> None:
    nb = notebook("%%bash\nmkdir -p out\nfor i in 1 2 3; do echo $i > out/$i.txt; done\n"
                  "echo made $(ls out | wc -l)")
    _, result = run_converted(nb, tmp_path)
    assert "made 3" in result.stdout
    failing = convert(notebook("%%bash\nexit 3")).script
    path = tmp_path / "failing.py"
    path.write_text(failing)
    import subprocess
    import sys

    outcome = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                             text=True, timeout=60, check=False)
    assert outcome.returncode != 0 and "CalledProcessError" in outcome.stderr


def test_time_and_timeit_keep_their_results(tmp_path: Path) -> None:
    nb = notebook("%time total = sum(range(1000))",
                  "%%time\nsquares = [i * i for i in range(100)]\nbiggest = max(squares)",
                  "%timeit -n 5 -r 2 sum(squares)",
                  "%%timeit -n 3 -r 2 data = list(range(50))\nsorted(data)",
                  "print('values', total, biggest)")
    _, result = run_converted(nb, tmp_path)
    assert "values 499500 9801" in result.stdout
    assert result.stdout.count("Wall time:") == 2
    assert "2 runs, 5 loops each" in result.stdout and "2 runs, 3 loops each" in result.stdout


def test_dropped_magics_say_why() -> None:
    script = convert(notebook(
        "%matplotlib inline", "!pip install numpy\n%pip install -q pandas\n%conda install scipy\n"
        "!conda install -y scipy\n!{sys.executable} -m pip install rich",
        "import numpy as np\nnp.mean?\n??np.sum\n%load_ext autoreload\n%autoreload 2")).script
    assert "get_ipython" not in script
    assert commented(script, "%matplotlib inline: dropped, a batch job has no display")
    for install in ("!pip install numpy", "%pip install -q pandas", "%conda install scipy",
                    "!conda install -y scipy", "-m pip install rich"):
        assert commented(script, install), install
    assert script.count("install packages before the job runs") == 5
    assert commented(script, "np.mean?: help look-up dropped")
    assert commented(script, "%load_ext autoreload: dropped")
    assert runs(script, "import numpy as np")


def test_working_directory_environment_and_writefile(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    nb = notebook("%env OMP_NUM_THREADS=3\n%env MODE debug\nimport os",
                  "%%writefile helper.py\ndef double(v):\n    return 2 * v\n",
                  "from helper import double\n%cd sub\n"
                  "print('state', os.environ['OMP_NUM_THREADS'], os.environ['MODE'], "
                  "double(4), os.path.basename(os.getcwd()))")
    _, result = run_converted(nb, tmp_path)
    assert "state 3 debug 8 sub" in result.stdout


def test_magics_without_a_plain_python_form_use_ipythons_shell(tmp_path: Path) -> None:
    (tmp_path / "setup_values.py").write_text("threshold = 0.25\n")
    nb = notebook("%run setup_values.py", "print('threshold', threshold)")
    script, result = run_converted(nb, tmp_path)
    assert runs(script, "_ipython().run_line_magic('run', 'setup_values.py')")
    assert "threshold 0.25" in result.stdout
    assert not (tmp_path / ".ipython").exists()


def test_the_script_has_the_extensions_a_kernel_loads(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel loads IPython's default extensions (storemagic: ``%store``); so does the
    script's shell, storing where a kernel of the same IPython directory would."""
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    nb = notebook("r = 42", "%store r", "del r\n%store -r r\nprint('restored', r)")
    _, result = run_converted(nb, tmp_path / "run")
    assert "restored 42" in result.stdout
    assert (tmp_path / "ipython" / "profile_default" / "db" / "autorestore" / "r").exists()
    # and the converter reads a cell as that kernel would: ``store r`` is %store (automagic)
    assert runs(convert(notebook("r = 1", "store r")).script,
                "_ipython().run_line_magic('store', 'r')")


def test_display_cell_magics_go_and_sbatch_cells_run_in_place(tmp_path: Path) -> None:
    nb = notebook("%%html\n<b>bold</b>", "%%javascript\nalert(1)",
                  "%%sbatch -t 10\nresult = 6 * 7", "print('result', result)")
    script, result = run_converted(nb, tmp_path)
    assert commented(script, "%%html: cell dropped") and commented(script, "%%javascript")
    assert "result 42" in result.stdout


@pytest.mark.parametrize(("source", "expected"), [
    ("x = 1\n", "x = 1\n"),
    ("!ls {path}\n", "subprocess.run([\"bash\", \"-c\", f'ls {path}'], check=False)\n"),
    ("!echo {a,b}\n", "subprocess.run([\"bash\", \"-c\", 'echo {a,b}'], check=False)\n"),
    ("files = !ls\n", "files = subprocess.run([\"bash\", \"-c\", 'ls'], capture_output=True, "
                      "text=True, check=False).stdout.splitlines()\n"),
    # %timeit's report is IPython's own: its shell runs it, options and all
    ("%timeit -n5 -p 3 sum(x)\n", "_ipython().run_line_magic('timeit', '-n5 -p 3 sum(x)')\n"),
    ("if True:\n    !echo hi\n", "if True:\n    subprocess.run([\"bash\", \"-c\", 'echo hi'], "
                                 "check=False)\n"),
])
def test_translation_text(source: str, expected: str) -> None:
    assert translate_magics(source).source == expected


def test_invalid_cell_is_refused_with_its_number_when_strict() -> None:
    from hpc_magics.convert.script import ConversionError, convert_notebook

    with pytest.raises(ConversionError, match=r"cell 2 is not valid Python \(line 1: .*hpc-skip"):
        convert_notebook(notebook("x = 1", "def broken(:\n    pass"), "nb", strict=True)


def test_invalid_cell_is_kept_as_a_comment_with_a_warning(tmp_path: Path) -> None:
    nb = notebook("x = 1", "def broken(:\n    pass", "print('x', x)")
    conversion = convert(nb)
    assert len(conversion.warnings) == 1 and conversion.warnings[0].startswith("cell 2 ")
    assert commented(conversion.script, "[not python] def broken(:")
    assert commented(conversion.script, "cell 2 is not valid Python")
    _, result = run_converted(nb, tmp_path)
    assert "x 1" in result.stdout


def test_automagics_and_aliases_as_ipython_reads_them(tmp_path: Path) -> None:
    """One-line cells go through IPython's own prefilter; a notebook variable hides a magic."""
    import builtins
    import sys

    from hpc_magics.convert import magics

    magics._shell.cache_clear()  # the private shell is made in this test
    main, ps1 = sys.modules["__main__"], hasattr(sys, "ps1")
    in_ipython = "__IPYTHON__" in vars(builtins)
    assert translate_magics("cd data\n").source == "os.chdir(os.path.expanduser('data'))\n"
    assert "'cat notes.txt'" in translate_magics("cat notes.txt\n").source
    assert "install packages before the job runs" in translate_magics("pip install rich\n").source
    assert translate_magics("ls\n", bound={"ls"}).source == "ls\n"
    assert translate_magics("??np.sum\n").source.startswith("# np.sum??: help look-up dropped")
    # multi-line cells are not prefiltered by IPython either: not Python there
    with pytest.raises(SyntaxError):
        translate_magics("x = 1\ncd data\n")
    # asking IPython's prefilter leaves this process as it was
    assert sys.modules["__main__"] is main and hasattr(sys, "ps1") == ps1
    assert ("__IPYTHON__" in vars(builtins)) == in_ipython
    nb = notebook("from __future__ import annotations\nimport os", "mkdir -p data",
                  "cd data", "here = os.path.basename(os.getcwd())\nprint('here', here)")
    script, result = run_converted(nb, tmp_path)
    assert "here data" in result.stdout
    assert script.index("from __future__ import annotations") < script.index("import os")
