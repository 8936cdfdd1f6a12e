"""Published figures a judge check is shown beside, cited as facts: the RAGChecker paper's meta-evaluation.

Source: Ru et al., "RAGChecker: A Fine-grained Framework for Diagnosing Retrieval-Augmented Generation" (NeurIPS 2024
Datasets and Benchmarks; arXiv 2408.08067), Section 4.2, Table 2 "Correlation results with Human Evaluation of
Correctness, Completeness, and Overall Assessment" (the best metric of each baseline framework; the full table is the
paper's Table 5, Appendix C, not quoted here). Figures are Pearson and Spearman x 100 as printed, copied verbatim from
two independent text extractions of the paper (the arXiv HTML of v2 and a PDF parse) that agree on every cell.
The data and the script behind them: amazon-science/RAGChecker, `data/meta_evaluation/` (`human_labeled_data.json`,
`meta_eval.py`, read at 657d54ba07ace0fe545ed0e9905032b5b73c5278; data unchanged at 6091f08c00e676e87a970f2aeb4a23a484746348).

The unit (meta_eval.py, and the paper's text: "the correlation between h_i and e_i"): per aspect, the framework's
score of answer 2 minus its score of answer 1, min-max rescaled to [-2, 2], against each annotator's preference label
in -2..2 (the pair's difference repeated for both annotators: 560 points). BLEU, ROUGE and BERTScore are the CRUD-RAG
repository's implementations. "Human" is annotator 1 against annotator 2 on the 280 pairs, the upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass

DIMENSIONS: tuple[str, ...] = ("correctness", "completeness", "overall")


@dataclass(frozen=True)
class Citation:
    """Where a published table comes from."""

    paper: str
    table: str
    repository: str
    commit: str

    def short(self) -> str:
        """One line: paper, table, repository@commit."""
        return f"{self.paper}, {self.table}; data and script {self.repository}@{self.commit[:8]}"


@dataclass(frozen=True)
class PublishedRow:
    """One framework's published correlations with the human labels: (Pearson, Spearman) x 100 per dimension."""

    framework: str
    metric: str
    correctness: tuple[float, float]
    completeness: tuple[float, float]
    overall: tuple[float, float]

    def of(self, dimension: str) -> tuple[float, float]:
        """(Pearson, Spearman) x 100 on one dimension."""
        if dimension not in DIMENSIONS:
            raise KeyError(f"no dimension {dimension!r}: one of {', '.join(DIMENSIONS)}")
        value: tuple[float, float] = getattr(self, dimension)
        return value


RAGCHECKER_CITATION = Citation(
    paper="Ru et al. 2024, RAGChecker (arXiv 2408.08067)", table="Table 2 (Sec. 4.2)",
    repository="amazon-science/RAGChecker", commit="657d54ba07ace0fe545ed0e9905032b5b73c5278")

RAGCHECKER_TABLE_2: tuple[PublishedRow, ...] = (
    PublishedRow("BLEU", "BLEU-avg", (38.89, 35.32), (32.13, 21.85), (35.14, 29.42)),
    PublishedRow("ROUGE", "ROUGE-L", (31.75, 31.72), (47.88, 45.67), (43.10, 43.21)),
    PublishedRow("BERTScore", "BERTScore", (30.34, 27.05), (37.93, 40.05), (33.51, 35.57)),
    PublishedRow("TruLens", "Answer Relevance", (35.01, 27.37), (37.24, 37.91), (35.15, 33.59)),
    PublishedRow("ARES", "Answer Relevance", (18.63, 16.84), (20.13, 18.13), (17.81, 16.26)),
    PublishedRow("RAGAS", "Answer Similarity", (41.07, 43.21), (53.16, 61.35), (48.31, 57.23)),
    PublishedRow("CRUD-RAG", "Recall", (30.93, 27.13), (45.11, 43.76), (41.25, 39.71)),
    PublishedRow("RAGChecker", "Same metric as human", (49.66, 46.95), (60.67, 58.11), (61.93, 60.90)),
    PublishedRow("Human", "Annotator correlation", (63.67, 59.19), (71.91, 68.36), (70.09, 68.89)),
)

PUBLISHED_SUITES: dict[str, tuple[Citation, tuple[PublishedRow, ...]]] = {
    "ragchecker-meta": (RAGCHECKER_CITATION, RAGCHECKER_TABLE_2)}


def published_row(framework: str, table: tuple[PublishedRow, ...] = RAGCHECKER_TABLE_2) -> PublishedRow:
    """The row of a framework in a published table."""
    for row in table:
        if row.framework == framework:
            return row
    raise KeyError(f"no published row for {framework!r}")


def published_for(suite: str) -> tuple[Citation, tuple[PublishedRow, ...]] | None:
    """The citation and published rows to show beside a check on `suite`, or None when nothing was published for it."""
    return PUBLISHED_SUITES.get(suite)
