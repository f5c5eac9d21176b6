"""The exceptions of spantree: one class per family of error kinds.

Every exception carries the stable ``kind`` string (the same as the
``"kind"`` of the command's error records), the batch ``item`` it concerns
(``None`` for errors of the whole call) and the ``arc`` it names:
``(head, dependent)``, ``(head, dependent, label)`` on labeled graphs, or
``None``.
"""

from __future__ import annotations

from typing import Optional, Tuple


class SpantreeError(Exception):
    """Base class of every spantree error."""

    def __init__(
        self,
        kind: str,
        message: str,
        item: Optional[int] = None,
        arc: Optional[Tuple[int, ...]] = None,
    ):
        self.kind = kind
        self.item = item
        self.arc = arc
        self.message = message
        where = "" if item is None else f"batch item {item}: "
        super().__init__(f"{where}{message} [{kind}]")


class InputError(SpantreeError, ValueError):
    """The scores of an item are not a valid graph: NaN (``not_a_number``),
    ``+inf`` (``infinite``) on an arc (column 0 and the diagonal are
    ignored, whatever they hold), a length outside
    ``1..N`` (``empty``, ``mismatch``), an order outside its domain
    (``parameter``), a weight too large for the ``f64`` backend
    (``overflow``)."""


class NoTreeError(InputError):
    """No spanning tree: some word cannot be reached from the root through
    allowed arcs (``no_spanning_tree``); ``Z = 0``."""


class DivergenceError(SpantreeError, ValueError):
    """A divergence is ``+inf`` where a finite value is needed (its
    gradient): ``p`` gives probability to an arc that ``q`` forbids
    (``infinite_divergence``); ``arc`` names it."""


class NumericalError(SpantreeError, ArithmeticError):
    """The backend's numbers failed (``numerical``): a singular pivot or an
    overflow; the ``accurate``, ``log`` or ``exact`` backend avoids it."""


class UsageError(SpantreeError, ValueError):
    """A call that cannot run at all: an unknown backend, rooting or
    quantity, a quantity the backend cannot give (``unsupported``: the exact
    backend has no logarithms), arrays of the wrong shape (``shape``)."""


_BY_KIND = {
    "no_spanning_tree": NoTreeError,
    "infinite_divergence": DivergenceError,
    "numerical": NumericalError,
    "unsupported": UsageError,
    "unknown_backend": UsageError,
    "unknown_rooting": UsageError,
    "unknown_quantity": UsageError,
    "usage": UsageError,
    "shape": UsageError,
}


def error_of(kind: str, message: str, item=None, arc=None) -> SpantreeError:
    """The exception of a kind (``InputError`` for the validation kinds)."""
    if arc is not None:
        head, dependent, label = arc
        arc = (head, dependent) if label is None else (head, dependent, label)
    return _BY_KIND.get(kind, InputError)(kind, message, item, arc)
