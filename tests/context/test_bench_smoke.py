"""The performance benchmark keeps working: a small run (hashing embedder, a few thousand facts) inside the
test database. Its figures are printed, not asserted against time budgets (timed tests flake); what is
asserted is that every measurement ran and that the two-phase path agrees with the full scan."""

import pytest

from facts.models import Fact
from bench import dataset, in_process


@pytest.mark.django_db(transaction=True)
def test_benchmark_smoke_run(tmp_path, capsys):
    report = in_process.run(total=3000, embedder="hashing", queries=8, ingest_batches=2, cache_dir=tmp_path)
    with capsys.disabled():
        in_process.print_report(report)
    assert set(report["subjects"]) == {"big", "mid", "small", "1k"}  # "1k": the ingested subject (200 facts here)
    assert report["subjects"]["1k"]["facts_in_scope"] == 200
    for result in report["subjects"].values():
        assert result["end_to_end_ms"]["n"] == result["assembler_ms"]["n"] == result["naive_full_scan_ms"]["n"] == 8
        assert 0 < result["trace_share_of_assembler"] < 1
        # hashing vectors make a poor hnsw graph (MiniLM figures: docs/performance.md); this only guards a collapse
        assert result["phase1_recall_top20"] >= 0.4
    assert report["subjects"]["small"]["phase1_recall_top20"] == 1.0  # a 50-fact scope is all candidates
    # every ingest batch was stored (bench_ingest asserts each 201), then its subject erased
    assert report["ingest"]["batch_ms"]["n"] == report["ingest"]["batches"] == 2
    assert not Fact.objects.filter(project_id=dataset.PROJECT, subject_id__startswith="ingest-").exists()
    assert report["load"]["facts"] == 3000
