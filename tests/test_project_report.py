"""The project report's summary says what was searched, not what was chosen for the search."""

from __future__ import annotations

from sgcc.project.report import ProjectReport


def _summary(**fields) -> str:
    report = ProjectReport(root="/p", workload=["./run"], project_share=0.62, coverage=0.91, **fields)
    return next(ln for ln in report.summary().splitlines() if ln.startswith("sgcc: workload: "))


def test_the_workload_line_says_the_share_searched_and_what_was_chosen_when_less():
    # cmark, PGO + LTO adopted: "searched: 91% of those" beside "0 translation unit(s) searched".
    assert _summary(searched_share=0.0).endswith("(the project's code: 62% of its instructions; searched: 0% of "
                                                 "those, of 91% chosen for the search)")
    assert _summary(searched_share=0.91).endswith("searched: 91% of those)")
