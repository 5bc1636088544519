"""Table 1 of the SPECTER paper as markdown, from saved results, beside the paper's own rows."""

from scidocs_eval.leaderboard.table1 import (
    COLUMNS,
    PaperRow,
    Table1Row,
    our_row,
    paper_rows,
    paper_table1_rows,
    render_table1,
    table1_row,
)

__all__ = ["COLUMNS", "PaperRow", "Table1Row", "our_row", "paper_rows", "paper_table1_rows", "render_table1",
           "table1_row"]
