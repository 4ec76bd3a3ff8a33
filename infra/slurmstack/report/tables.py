"""Tables that are never cut: rich tables on a terminal, plain aligned text elsewhere.

On a terminal, a cell too wide for its column wraps (long words fold) instead of ending in
an ellipsis; through a pipe or into a file, a table is plain text as wide as its widest cell,
so nothing depends on a terminal width that is not there.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table


@dataclass
class Grid:
    """One table as data: a title, columns (right-aligned or not), rows, bold rows."""

    title: str
    columns: list[str]
    right: set[str] = field(default_factory=set)
    rows: list[list[str]] = field(default_factory=list)
    bold: set[int] = field(default_factory=set)  # indexes of rows drawn in bold

    def add(self, *cells: str, bold: bool = False) -> None:
        if bold:
            self.bold.add(len(self.rows))
        self.rows.append(list(cells))


def rich_table(grid: Grid) -> Table:
    table = Table(title=grid.title, title_justify="left")
    for col in grid.columns:
        # fold: a cell wider than its column wraps, long words included; never an ellipsis.
        table.add_column(col, justify="right" if col in grid.right else "left", overflow="fold")
    for index, row in enumerate(grid.rows):
        table.add_row(*row, style="bold" if index in grid.bold else None)
    return table


def plain_table(grid: Grid) -> str:
    """The table as text, each column as wide as its widest cell, two spaces apart."""
    rows = [grid.columns, *grid.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(grid.columns))]

    def line(cells: list[str]) -> str:
        out = []
        for col, cell, width in zip(grid.columns, cells, widths, strict=True):
            out.append(cell.rjust(width) if col in grid.right else cell.ljust(width))
        return "  ".join(out).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([grid.title, line(grid.columns), rule, *(line(r) for r in grid.rows)])


def print_grid(grid: Grid, console: Console) -> None:
    if console.is_terminal:
        console.print(rich_table(grid))
    else:
        console.print()
        console.print(plain_table(grid), soft_wrap=True, markup=False, highlight=False)
