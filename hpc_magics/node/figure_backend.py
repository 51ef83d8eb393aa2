"""matplotlib's backend on the node (``MPLBACKEND`` names this module): Agg draws, and
``plt.show()`` shows the open figures in the cell as it runs (``live_display.show``).

Imported by matplotlib only, when the cell uses pyplot.
"""

from matplotlib.backend_bases import FigureManagerBase as FigureManager
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas

from .live_display import show

__all__ = ["FigureCanvas", "FigureManager", "show"]
