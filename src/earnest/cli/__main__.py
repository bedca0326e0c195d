"""``python -m earnest.cli``: the ``earnest`` command line (:func:`earnest.cli.main`)."""

import sys

from earnest.cli import main

sys.exit(main())
