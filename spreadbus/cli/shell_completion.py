"""Tab completion of ``spreadbus`` in the shell, through argcomplete's protocol.

The shell runs ``spreadbus`` with ``_ARGCOMPLETE`` and the line being typed in the environment.
Only the command named on that line gets its arguments added, as on a normal run, so completing
never imports every service and a normal run never imports argcomplete.
"""

from __future__ import annotations

import argparse
import os

REQUEST = "_ARGCOMPLETE"


def typed_words() -> list[str] | None:
    """The words typed before the one being completed, without the program; None on a normal run."""
    if REQUEST not in os.environ:
        return None
    from argcomplete.lexers import split_line

    line = os.environ.get("COMP_LINE", "")
    point = int(os.environ.get("COMP_POINT", len(line)))
    words = split_line(line, point)[3]
    # _ARGCOMPLETE is where the program's own words start: 1 for `spreadbus ...`,
    # 2 for `python script ...`, 3 for `python -m spreadbus ...`.
    return words[int(os.environ[REQUEST]):]


def complete(parser: argparse.ArgumentParser) -> None:
    """Write the completions for the typed line where the shell reads them, and exit."""
    from argcomplete import autocomplete

    autocomplete(parser)
