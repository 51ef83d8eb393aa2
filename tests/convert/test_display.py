"""Display stripping on an in-memory corpus: what goes, what stays, and that it runs headless."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from .conftest import commented, convert, notebook, run_converted, runs

NUMPY = "import numpy as np\nimport matplotlib.pyplot as plt\nx = np.linspace(0, 1, 50)"
PANDAS = NUMPY + "\nimport pandas as pd\ndf = pd.DataFrame({'a': x, 'b': x ** 2})"


@dataclass(frozen=True)
class Case:
    id: str
    cells: tuple[str, ...]
    gone: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # written by the converted script
    run: bool = True
    printed: tuple[str, ...] = field(default=())


CASES = [
    Case("pyplot-display-cell",
         (NUMPY, "plt.plot(x, x ** 2)\nplt.title('square')\nplt.xlabel('x')\nplt.legend()\n"
                 "plt.grid(True)\nplt.show()"),
         gone=("plt.plot(x", "plt.title(", "plt.xlabel(", "plt.legend()", "plt.show()",
               "import matplotlib.pyplot as plt")),
    Case("object-oriented-display",
         (NUMPY, "fig, ax = plt.subplots(1, 2)\nax[0].plot(x)\nax[1].scatter(x, x)\n"
                 "ax[0].set_title('a')\nfig.tight_layout()\nfig.show()"),
         gone=("fig, ax = plt.subplots", "ax[0].plot", "ax[1].scatter", "set_title",
               "tight_layout", "fig.show()")),
    Case("pyplot-savefig-keeps-its-drawing",
         (NUMPY, "plt.plot(x, x ** 2)\nplt.title('kept')\nplt.savefig('square.png')\nplt.show()"),
         gone=("plt.show()",), kept=("plt.plot(x, x ** 2)", "plt.title('kept')",
                                     "plt.savefig('square.png')", "import matplotlib.pyplot"),
         files=("square.png",)),
    Case("figure-saved-in-a-later-cell",
         (NUMPY, "fig, ax = plt.subplots()", "ax.plot(x)\nax.set_ylabel('y')",
          "fig.savefig('later.png')"),
         kept=("fig, ax = plt.subplots()", "ax.plot(x)", "ax.set_ylabel('y')",
               "fig.savefig('later.png')"), files=("later.png",)),
    Case("figure-written-to-a-logger",
         (NUMPY, "class Writer:\n    def add_figure(self, tag, figure):\n"
                 "        figure.savefig(tag + '.png')\n\nwriter = Writer()",
          "fig = plt.figure()\nplt.plot(x)\nwriter.add_figure('curve', fig)\nplt.close(fig)"),
         kept=("fig = plt.figure()", "plt.plot(x)", "writer.add_figure('curve', fig)",
               "plt.close(fig)"), files=("curve.png",)),
    Case("plotting-call-whose-results-are-read",
         (NUMPY, "counts, bins, _ = plt.hist(x, bins=5)\nplt.show()\nunused, _, _ = plt.hist(x)",
          "print('peak', int(counts.max()), len(bins))"),
         gone=("plt.show()", "unused, _, _ = plt.hist"),
         kept=("counts, bins, _ = plt.hist(x, bins=5)",), printed=("peak 10 6",)),
    Case("mixed-cell-keeps-computation",
         (NUMPY, "total = 0.0\nfor i in range(3):\n    y = x * i\n    total += float(y.sum())\n"
                 "    plt.plot(x, y, label=str(i))  # one curve per i\nplt.legend()\nplt.show()\n"
                 "print('total', round(total, 3))"),
         gone=("plt.plot(x, y", "plt.legend()", "plt.show()"),
         kept=("total += float(y.sum())", "y = x * i"), printed=("total 75.0",)),
    Case("seaborn",
         (NUMPY, "import seaborn as sns\nsns.set_theme(style='whitegrid')",
          "sns.histplot(x)\nax = sns.lineplot(x=x, y=x)\nax.set_title('t')\n"
          "g = sns.pairplot(None)\ng.fig.suptitle('p')\nmean = float(x.mean())"),
         gone=("import seaborn as sns", "sns.set_theme", "sns.histplot", "sns.lineplot",
               "ax.set_title", "sns.pairplot", "g.fig.suptitle"), kept=("mean = float(x.mean())",)),
    Case("pandas-plot",
         (PANDAS, "df.plot()\ndf['a'].plot.hist(bins=4)\ndf.hist()\nax = df.plot(kind='bar')\n"
                  "ax.set_ylabel('v')\npd.plotting.scatter_matrix(df)\ndf.boxplot()\n"
                  "share = float((df.a > 0.5).mean())"),
         gone=("df.plot()", "plot.hist", "df.hist()", "ax = df.plot", "ax.set_ylabel",
               "scatter_matrix", "df.boxplot()"), kept=("share = float",)),
    Case("plotly",
         (NUMPY, "import plotly.express as px\nimport plotly.graph_objects as go",
          "fig = px.scatter(x=x, y=x)\nfig.update_layout(title='t')\nfig.show()\n"
          "fig2 = go.Figure(go.Bar(y=[1, 2]))\nfig2"),
         gone=("import plotly.express", "import plotly.graph_objects", "px.scatter",
               "update_layout", "fig.show()", "go.Figure", "fig2")),
    Case("plotly-written-to-html-stays",
         ("import plotly.express as px", "fig = px.line(y=[1, 2])\nfig.write_html('p.html')"),
         kept=("import plotly.express as px", "fig = px.line", "fig.write_html('p.html')"),
         run=False),
    Case("altair",
         (PANDAS, "import altair as alt",
          "chart = alt.Chart(df).mark_point().encode(x='a', y='b')\nchart"),
         gone=("import altair", "alt.Chart", "chart")),
    Case("ipython-display",
         (NUMPY, "from IPython.display import display, HTML, Markdown, Image, clear_output\n"
                 "import IPython.display as ipd",
          "display(x)\nHTML('<b>x</b>')\ndisplay(Markdown('**m**'))\nclear_output(wait=True)\n"
          "ipd.display(ipd.Audio(x, rate=8000))\nImage(data=b'')\nn = len(x)\nprint('n', n)"),
         gone=("from IPython.display import", "import IPython.display", "display(x)", "HTML(",
               "Markdown(", "clear_output", "ipd.display", "Image(data"),
         kept=("n = len(x)",), printed=("n 50",)),
    Case("display-builtin-without-import",
         ("x = 1\ndisplay(x)\nprint('x', x)",), gone=("display(x)",), printed=("x 1",)),
    Case("display-rebound-by-the-user",
         ("display = print\ndisplay('shown')",), kept=("display('shown')",),
         printed=("shown",)),
    Case("inline-formats-and-backends",
         ("import matplotlib\nmatplotlib.use('TkAgg')\n"
          "from matplotlib_inline.backend_inline import set_matplotlib_formats\n"
          "set_matplotlib_formats('svg')\nvalue = 3",),
         gone=("matplotlib.use('TkAgg')", "set_matplotlib_formats('svg')"), kept=("value = 3",)),
    Case("agg-backend-stays",
         ("import matplotlib\nmatplotlib.use('Agg')\nprint(matplotlib.get_backend())",),
         kept=("matplotlib.use('Agg')",), printed=("Agg",)),
    Case("ipywidgets",
         ("import ipywidgets as widgets\nfrom ipywidgets import interact",
          "def f(k=1):\n    return k * 2\n\ninteract(f, k=(0, 10))",
          "@interact(k=(0, 5))\ndef g(k=2):\n    print(k)",
          "slider = widgets.IntSlider(value=7)\ndisplay(slider)", "level = slider.value * 2\n"
          "print('level', level)"),
         gone=("interact(f, k=(0, 10))", "@interact(k=(0, 5))", "from ipywidgets import interact",
               "display(slider)"),
         kept=("def g(k=2):", "slider = widgets.IntSlider(value=7)", "import ipywidgets"),
         printed=("level 14",)),
    Case("pil-show",
         ("import numpy as np\nfrom PIL import Image",
          "img = Image.fromarray(np.zeros((8, 8), dtype=np.uint8))\nimg.show()\n"
          "small = img.resize((4, 4))\nsmall.show()\nsmall.save('small.png')\nsmall"),
         gone=("img.show()", "small.show()"), kept=("small = img.resize", "small.save"),
         files=("small.png",)),
    Case("figure-as-last-expression",
         (NUMPY, "fig, ax = plt.subplots()\nax.plot(x)\nfig"),
         gone=("fig, ax = plt.subplots()", "ax.plot(x)", "fig")),
    Case("bare-last-values-only-displayed",
         (PANDAS, "df.head()", "df.describe().round(2)", "x.shape", "len(x)",
          "calls = []\ndef fit():\n    calls.append(1)\n    return 'model'\nfit()",
          "print('calls', len(calls))", "df.dropna(inplace=True)", "items = [1, 2]\nitems.pop()",
          "import queue\njobs = queue.Queue()\njobs.put(1)\njobs.get()"),
         gone=("df.head()", "df.describe()", "x.shape", "len(x)"),
         kept=("fit()", "df.dropna(inplace=True)", "items.pop()", "jobs.get()"),
         printed=("calls 1",)),
    Case("random-draw-as-last-expression-stays",
         ("import numpy as np\nnp.random.seed(1)\nnp.random.rand(2)",
          "print('next', round(float(np.random.rand()), 6))"),
         kept=("np.random.rand(2)",), printed=("next 0.000114",)),
    Case("empty-blocks-get-pass",
         (NUMPY, "show_plots = True\nif show_plots:\n    plt.plot(x)\n    plt.show()\nelse:\n"
                 "    print('no plots')",
          "def draw(v):\n    plt.imshow(v)\n    plt.show()\n\ndraw(x.reshape(5, 10))",
          "for i in range(2):\n    plt.plot(x * i)\nprint('done')"),
         gone=("plt.imshow(v)", "draw(x.reshape", "for i in range(2):"),
         kept=("if show_plots:", "def draw(v):", "pass"), printed=("done",)),
    Case("comments-and-formatting-survive",
         (NUMPY, "# normalise the signal\nscale = float(x.max())  # the peak\n"
                 "normalised = [\n    v / scale\n    for v in x\n]\n"
                 "plt.plot(normalised)  # quick look\n"
                 "print('n', len(normalised))"),
         kept=("# normalise the signal", "scale = float(x.max())  # the peak", "v / scale"),
         gone=("plt.plot(normalised)",), printed=("n 50",)),
    Case("subplots-loop-over-axes",
         (NUMPY, "images = [x.reshape(5, 10) * k for k in range(4)]\n"
                 "fig, axes = plt.subplots(2, 2)\nfor ax, image in zip(axes.flat, images):\n"
                 "    ax.imshow(image)\n    ax.axis('off')\nplt.show()\n"
                 "print('images', len(images))"),
         gone=("fig, axes = plt.subplots(2, 2)", "for ax, image in zip", "ax.imshow(image)"),
         kept=("images = [x.reshape",), printed=("images 4",)),
    Case("same-line-statements",
         (NUMPY, "a = 1; plt.show()\nprint('a', a)"), kept=("a = 1; pass",), printed=("a 1",)),
    Case("style-setup-stays-with-saved-figures",
         (NUMPY, "plt.style.use('ggplot')\nplt.rcParams['figure.dpi'] = 50",
          "plt.plot(x)\nplt.savefig('styled.png')"),
         kept=("plt.style.use('ggplot')", "plt.rcParams['figure.dpi'] = 50"),
         files=("styled.png",)),
    Case("visualisers-of-any-object",
         ("class Lazy:\n    def visualize(self):\n        raise SystemExit('visualize ran')\n"
          "    def hvplot(self, *args):\n        raise SystemExit('hvplot ran')\n\nlazy = Lazy()",
          "lazy.visualize()\nlazy.hvplot('x')\nvalue = 2\nprint('value', value)"),
         gone=("lazy.visualize()", "lazy.hvplot('x')"), kept=("value = 2",),
         printed=("value 2",)),
    Case("calls-chained-onto-show",
         ("import numpy as np\nfrom PIL import Image, ImageFilter",
          "img = Image.fromarray(np.zeros((8, 8), dtype=np.uint8))\n"
          "img.filter(ImageFilter.BLUR).show()\n"
          "Image.fromarray(np.ones((2, 2), dtype=np.uint8)).rotate(90).show()\n"
          "print('size', img.size)"),
         gone=("img.filter(ImageFilter.BLUR).show()", ".rotate(90).show()"),
         kept=("img = Image.fromarray",), printed=("size (8, 8)",)),
    Case("style-context-around-computation-stays",
         (NUMPY, "with plt.style.context('ggplot'):\n    total = float(x.sum())\n"
                 "print('total', round(total, 1))"),
         kept=("total = float(x.sum())",), printed=("total 25.0",)),
    Case("library-data-loaders-are-computation",
         ("import plotly.express as px", "iris = px.data.iris()\npx.scatter(iris)"),
         kept=("iris = px.data.iris()", "import plotly.express as px"), gone=("px.scatter(",),
         run=False),
    Case("display-loops-that-compute-stay",
         (NUMPY, "for i in range(3):\n    plt.plot(x * i);\nprint('last', i)",
          "numbers = iter([1, 2])\nfor n in iter(numbers):\n    plt.plot(x * n)\n"
          "print('left', list(numbers))", "plt.hist(x);"),
         gone=("plt.plot(x * i);", "plt.plot(x * n)", "plt.hist(x);"),
         kept=("for i in range(3):", "for n in iter(numbers):"),
         printed=("last 2", "left []")),
    Case("style-setup-goes-when-nothing-is-drawn",
         (NUMPY, "plt.style.use('ggplot')\nplt.rcParams['figure.dpi'] = 50", "plt.plot(x)"),
         gone=("plt.style.use('ggplot')", "plt.rcParams['figure.dpi'] = 50", "plt.plot(x)")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_case(case: Case, tmp_path: Path, viewer_trap: Path) -> None:
    nb = notebook(*case.cells)
    script = convert(nb).script
    for fragment in case.gone:
        assert not runs(script, fragment), f"{fragment!r} still runs:\n{script}"
        assert commented(script, fragment), f"{fragment!r} is not shown as removed:\n{script}"
    for fragment in case.kept:
        assert runs(script, fragment), f"{fragment!r} was removed:\n{script}"
    if not case.run:
        return
    _, result = run_converted(nb, tmp_path / "job", viewer_trap)
    for printed in case.printed:
        assert printed in result.stdout
    for name in case.files:
        assert (tmp_path / "job" / name).stat().st_size > 0
    assert not (viewer_trap / "STARTED").exists(), "an image viewer or browser was started"


def test_seaborn_data_loading_is_computation() -> None:
    script = convert(notebook("import seaborn as sns\ntips = sns.load_dataset('tips')\n"
                              "sns.scatterplot(data=tips, x='a', y='b')\nprint(len(tips))")).script
    assert runs(script, "tips = sns.load_dataset('tips')")
    assert runs(script, "import seaborn as sns")
    assert not runs(script, "sns.scatterplot")


def test_removed_statements_can_be_deleted_instead_of_commented() -> None:
    from hpc_magics.convert.script import convert_notebook

    nb = notebook(NUMPY + "\nplt.plot(x)\nplt.show()\ny = 2")
    script = convert_notebook(nb, "nb", comment_removed=False).script
    assert "plt.plot" not in script and "plt.show" not in script
    assert runs(script, "y = 2")


def test_report_lists_what_went_per_cell() -> None:
    conversion = convert(notebook(NUMPY, "plt.plot(x)\ny = 1\nplt.show()"))
    assert conversion.removed[1] == ("plt.plot(x)", "plt.show()")
