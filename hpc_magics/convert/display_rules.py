"""What display code looks like, library by library: the data the display stripper reads.

Each :class:`Library` sorts the calls made through one library (``plt.plot``,
``sns.histplot``, ``px.scatter``, ``display``...) into the kinds below, and says which start
or end a figure, which compute *data* (always kept) and what any other call is.  To teach
the converter a new library, add a table here; the engine
(:mod:`hpc_magics.convert.display`) has no library names in it.  Kinds of statement:

* ``keep``: computation, runs in the job.
* ``show``: only shows something; always removed.
* ``draw``: draws into a figure; removed unless that figure is saved or read by kept code.
* ``style``: a global plotting setting; removed when no figure is kept.
* ``save``: writes a figure to a file; kept, and so is everything drawn into it.
"""

from __future__ import annotations

from dataclasses import dataclass

KEEP, SHOW, DRAW, DATA, STYLE, SAVE, ECHO, IMPORT = (
    "keep", "show", "draw", "data", "style", "save", "echo", "import")

#: which attribute of ``lib.a.b(...)`` names the call: the first (``plt.style.use`` is a
#: style call) or the last (``alt.Chart(df).mark_point().encode()`` is a chart call)
FIRST, LAST = "first", "last"
#: what an unlisted call is: drawing into the current figure, a new figure, or computation
DRAW_CURRENT, DRAW_NEW, COMPUTE = "draw-current", "draw-new", "compute"


@dataclass(frozen=True)
class Library:
    modules: tuple[str, ...]  # module names; submodules match by prefix
    pick: str = FIRST
    show: frozenset[str] = frozenset()
    save: frozenset[str] = frozenset()
    create: frozenset[str] = frozenset()  # start a new figure (and make it current)
    close: frozenset[str] = frozenset()  # end the current figure
    style: frozenset[str] = frozenset()
    data: frozenset[str] = frozenset()  # load or compute data: always kept
    data_returning: frozenset[str] = frozenset()  # draw, and return data others may read
    otherwise: str = DRAW_CURRENT  # any other call
    bare: str = STYLE  # the name used without a call (``plt.rcParams``)
    display_prefix: bool = False  # ``display_*`` functions only show
    settings: bool = True  # assigning into it (``plt.rcParams[k] = v``) is a style setting


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: methods that write a figure to a file: a chain holding one is kept
SAVE_METHODS = _names("savefig imsave write_image write_html write_json save export_png "
                      "export_svgs export_svg to_html to_json add_figure")
_MPL_STYLE = _names("rc rcdefaults rcParams style set set_theme set_style set_context "
                    "set_palette set_color_codes xkcd rc_context")

PYPLOT = Library(
    ("matplotlib.pyplot", "matplotlib.pylab", "pylab"),
    show=_names("show pause ion ioff switch_backend install_repl_displayhook draw "
                "draw_if_interactive ginput waitforbuttonpress"),
    save=_names("savefig imsave"), create=_names("figure subplots subplot_mosaic"),
    close=_names("close"), style=_MPL_STYLE, bare=DRAW_CURRENT,
    data_returning=_names("hist hist2d psd csd specgram cohere xcorr acorr magnitude_spectrum "
                          "angle_spectrum phase_spectrum"))
MATPLOTLIB = Library(("matplotlib",), style=_MPL_STYLE, otherwise=COMPUTE, bare=KEEP)
SEABORN = Library(("seaborn",), style=_MPL_STYLE | _names("axes_style"), bare=DRAW_CURRENT,
                  create=_names("relplot displot catplot lmplot pairplot jointplot clustermap "
                                "FacetGrid PairGrid JointGrid"),
                  data=_names("load_dataset get_dataset_names color_palette"))
PANDAS_PLOTTING = Library(("pandas.plotting",), bare=DRAW_CURRENT)
_CHART_SHOW = _names("show output_notebook output_file display")


def _chart_library(modules: tuple[str, ...], data: str = "", show: str = "") -> Library:
    """A charting library: a call chain names its chart by its last attribute, any other
    call draws a new chart; ``show`` (beyond showing in a notebook or file) and ``data``
    are its own names."""
    return Library(modules, pick=LAST, show=_CHART_SHOW | _names(show),
                   save=SAVE_METHODS, data=_names(data), otherwise=DRAW_NEW)


PLOTLY = _chart_library(("plotly",), data="data")
ALTAIR = _chart_library(("altair", "vega_datasets"), data="data")
BOKEH = _chart_library(("bokeh",), data="sampledata")
HOLOVIEWS = _chart_library(("holoviews", "hvplot", "panel", "geoviews"), show="extension servable")
PLOTNINE = _chart_library(("plotnine",))
IPYTHON_DISPLAY = Library(
    ("IPython.display", "IPython.core.display", "matplotlib_inline"),
    show=_names("display update_display clear_output set_matplotlib_formats publish_display_data"),
    otherwise=DRAW_NEW, bare=SHOW, display_prefix=True, settings=False)
IPYWIDGETS = Library(
    ("ipywidgets",), show=_names("interact interact_manual interactive_output display"),
    otherwise=DRAW_NEW, bare=SHOW, display_prefix=True, settings=False)
PIL_IMAGE = Library(("PIL.Image",), pick=LAST, show=_names("show"), otherwise=COMPUTE,
                    bare=KEEP, settings=False)

LIBRARIES = (PYPLOT, MATPLOTLIB, SEABORN, PANDAS_PLOTTING, PLOTLY, ALTAIR, BOKEH, HOLOVIEWS,
             PLOTNINE, IPYTHON_DISPLAY, IPYWIDGETS, PIL_IMAGE)

#: matplotlib backends that draw off-screen: ``matplotlib.use('Agg')`` stays
SAFE_BACKENDS = _names("agg pdf svg ps cairo pgf template "
                       "module://matplotlib_inline.backend_inline")

# ---------------------------------------------------------------------- any object
#: methods any object may have that only draw or show it: pandas ``df.plot(...)``,
#: ``df.plot.bar()``, ``df.hvplot()``, ``df.style...``, dask ``x.visualize()``, Spark
#: ``df.show()``, a PIL image's ``img.filter(f).show()``.  Used as statements only: a value
#: that computation reads keeps its figure.
VISUALISER_ATTRIBUTES = _names("plot plotting hvplot style visualize")
VISUALISER_METHODS = _names("hist boxplot show display")
#: of those, the ones that only show: ``img.show()`` (PIL), ``df.show()`` (Spark)
SHOW_METHODS = _names("show display")

# ---------------------------------------------------------------------- a cell's last value
#: Methods that only look at a value (no side effects, no random draws, no consumed
#: iterators): a cell ending with one of these only showed its result.  Anything not here
#: (``queue.get()``, ``next(it)``, ``items.pop()``, ``model.train()``) stays, since a script
#: prints nothing anyway, and a call with ``inplace=True`` always stays.
PURE_METHODS = _names(
    "head tail describe value_counts unique nunique isna isnull notna notnull mean median std "
    "var min max sum count corr cov round to_frame sort_values sort_index groupby memory_usage "
    "keys values items copy reset_index set_index dropna nlargest nsmallest astype reshape "
    "transpose argmax argmin all any info to_numpy to_list tolist")
PURE_BUILTINS = _names("len type repr str id isinstance dir vars abs round range zip enumerate "
                       "float int bool reversed format")
#: functions and methods that compute a value from their arguments and change nothing:
#: arguments of a display call built with only these (``plt.plot(x, np.sin(x))``) go with
#: it; any other call in them (``display(next(it))``, ``plt.plot(rng.normal(size=9))``)
#: stays as a statement, so the random stream and iterators advance as in the notebook
PURE_FUNCTIONS = PURE_METHODS | _names(
    "sin cos tan arcsin arccos arctan arctan2 sinh cosh tanh exp log log2 log10 sqrt square "
    "absolute power linspace arange logspace array asarray zeros ones full empty zeros_like "
    "ones_like full_like meshgrid histogram cumsum cumprod diff sort argsort where clip "
    "concatenate stack vstack hstack column_stack ravel flatten squeeze expand_dims "
    "percentile quantile nanmean nanstd nanmin nanmax join split replace upper lower strip "
    "format get_xdata get_ydata to_string")
