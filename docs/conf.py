"""Sphinx configuration of the xfft documentation (``make docs``: strict, offline).

The pages generated from the code (API reference), the notebooks (tutorials), ``examples/`` (gallery) and
``benchmarks/results`` (benchmarks page) are written by the local extension ``_ext/xfft_docs.py`` when the build
starts; the notebooks are executed once per source version (``_ext/tutorials.py``).
"""

import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path[:0] = [str(ROOT), str(DOCS / "_ext")]
# The API pages import the packages; the examples on the pages describe 8 CPU devices.
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("MPLBACKEND", "Agg")

from importlib.metadata import version as _version  # noqa: E402

project = "xfft"
author = "the xfft authors"
copyright = "the xfft authors, Apache-2.0"
release = _version("xfft")
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "myst_nb",
    "xfft_docs",
]

exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/.ipynb_checkpoints", "_ext", "_generated",
                    "render_snapshots.py"]
source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
root_doc = "index"

# Strict: every warning fails the build (make docs passes -W --keep-going), and every cross-reference must resolve
# (nitpicky). References to other projects' objects (jax, numpy, ...) are shown as text: the build is offline, so
# there are no intersphinx inventories to resolve them against (xfft_docs keeps only references into xfft and
# solvers strict).
nitpicky = True
suppress_warnings = []

# Google-style docstrings
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_use_ivar = True
autodoc_typehints = "signature"
autodoc_member_order = "bysource"
autodoc_class_signature = "separated"
autodoc_default_options = {"members": False}
add_module_names = False
python_display_short_literal_types = True

# MyST and notebooks: the notebooks arrive executed (see _ext/tutorials.py); the build itself executes nothing.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"
nb_merge_streams = True

# Math offline: MathJax 2.7 from the jupyter-server-mathjax wheel, copied into _static/mathjax by xfft_docs.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
# MyST marks the page body tex2jax_ignore (so that a stray $ is not math) and the math elements "math": MathJax 2
# processes those only.
myst_update_mathjax = False
mathjax2_config = {"tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                               "processEscapes": True, "ignoreClass": "tex2jax_ignore|mathjax_ignore",
                               "processClass": "tex2jax_process|mathjax_process|math|output_area"},
                   # the wheel ships the STIX-Web fonts only
                   "HTML-CSS": {"availableFonts": ["STIX-Web"], "preferredFont": "STIX-Web", "webFont": "STIX-Web",
                                "imageFont": None}}

html_theme = "furo"
html_title = f"xfft {release}"
html_static_path = ["_static"]
html_css_files = ["xfft.css"]
html_last_updated_fmt = None
html_show_sourcelink = False
html_theme_options = {"source_repository": "", "navigation_with_keys": True}
