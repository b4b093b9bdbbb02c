"""The labelled contradiction set (eval/contradictions/pairs.jsonl) keeps its shape, and its harness
(bench/contradictions.py) counts what the write path answers."""

import importlib.util
import json
from collections import Counter
from pathlib import Path

import pytest

from bench import contradictions as harness
from facts.models import ConflictSet, Fact

ROOT = Path(__file__).resolve().parent.parent.parent
SET_DIR = ROOT / "eval" / "contradictions"
FIELDS = {"id", "lang", "kind", "category", "style", "split", "old", "new"}


def _pairs() -> list[dict]:
    return [
        json.loads(line) for line in (SET_DIR / "pairs.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def _build_module():
    spec = importlib.util.spec_from_file_location("contradictions_build", SET_DIR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_set_has_its_fields_balance_and_languages():
    # given the committed set
    pairs = _pairs()
    build = _build_module()

    # then every line has exactly the documented fields, with known values
    assert len(pairs) >= 300
    for p in pairs:
        assert set(p) == FIELDS, p
        assert (
            p["lang"] in ("en", "fr") and p["style"] in ("plain", "extractor", "chat") and p["split"] in ("dev", "test")
        )
        assert p["category"] in build.CATEGORIES[p["kind"]], p
        assert p["id"].startswith(f"{p['lang']}-{build.CATEGORIES[p['kind']][p['category']]}-"), p
        assert p["old"].strip() and p["new"].strip() and p["old"] != p["new"], p
    assert len({p["id"] for p in pairs}) == len(pairs)
    assert len({(p["old"], p["new"]) for p in pairs}) == len(pairs)

    # half contradictions, half compatible; about 55 % English; each (kind, lang) cut in two halves
    kinds = Counter(p["kind"] for p in pairs)
    assert kinds["contradiction"] == kinds["compatible"]
    assert 0.50 <= sum(p["lang"] == "en" for p in pairs) / len(pairs) <= 0.60
    halves = Counter((p["kind"], p["lang"], p["split"]) for p in pairs)
    for kind in ("contradiction", "compatible"):
        for lang in ("en", "fr"):
            assert abs(halves[(kind, lang, "dev")] - halves[(kind, lang, "test")]) <= 1

    # every category in both languages, every style in each (kind, lang)
    for kind, categories in build.CATEGORIES.items():
        for category in categories:
            for lang in ("en", "fr"):
                assert sum(1 for p in pairs if (p["category"], p["lang"]) == (category, lang)) >= 2, (category, lang)
        for lang in ("en", "fr"):
            assert {p["style"] for p in pairs if (p["kind"], p["lang"]) == (kind, lang)} == {
                "plain",
                "extractor",
                "chat",
            }


def test_the_set_is_what_build_py_makes_of_its_sources():
    build = _build_module()
    rebuilt = [{k: p[k] for k in build.FIELDS} for p in build.build()]
    assert rebuilt == _pairs(), "pairs.jsonl is stale: run python3 eval/contradictions/build.py"


@pytest.mark.django_db
def test_the_harness_counts_each_outcome_and_leaves_nothing_behind(tmp_path):
    # given a handful of the set's pairs, and two controls whose outcome no contradiction rule decides: the same
    # sentence written twice (de-duplicated) and two unrelated sentences (far below the similarity gate)
    chosen = [p for p in _pairs() if p["id"] in {"en-res-01", "en-near-01", "fr-age-01", "fr-add-01"}]
    controls = [
        {
            "id": "ctl-same",
            "lang": "en",
            "kind": "compatible",
            "category": "paraphrase",
            "style": "plain",
            "split": "dev",
            "old": "Wanda keeps bees on her allotment.",
            "new": "Wanda keeps bees on her allotment.",
        },
        {
            "id": "ctl-far",
            "lang": "fr",
            "kind": "contradiction",
            "category": "residence",
            "style": "plain",
            "split": "dev",
            "old": "Le train part de la gare à midi.",
            "new": "Xavier collectionne des timbres anciens.",
        },
    ]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in chosen + controls), encoding="utf-8")

    # when the harness runs them with the hashing embedder
    report = harness.run(pairs_path=path, embedder="hashing", project_id="eval-contra-test")

    # then every pair has one outcome, and the summary counts exactly those
    records = {r["id"]: r for r in report["pairs"]}
    assert len(records) == 6 and report["config"]["embedder"] == "hashing"
    assert all(r["outcome"] in ("conflict", "duplicate", "distinct") for r in records.values())
    assert records["ctl-same"]["outcome"] == "duplicate" and not records["ctl-same"]["correct"]
    assert records["ctl-same"]["similarity"] == pytest.approx(1.0, abs=1e-3)
    assert records["ctl-far"]["outcome"] == "distinct" and not records["ctl-far"]["correct"]
    assert records["ctl-far"]["similarity"] < 0.75
    overall = report["summary"]["overall"]
    assert overall["pairs"] == 6 and overall["contradictions"] == 3 and overall["compatible"] == 3
    conflicts = sum(1 for r in records.values() if r["kind"] == "contradiction" and r["outcome"] == "conflict")
    false_sets = sum(1 for r in records.values() if r["kind"] == "compatible" and r["outcome"] == "conflict")
    assert overall["recall"] == round(conflicts / 3, 4)
    assert overall["false_set_rate"] == round(false_sets / 3, 4)
    assert overall["deduplicated"] == 1 and overall["deduplicated_compatible"] == 1
    assert report["summary"]["by_lang"]["fr"]["pairs"] == 3
    missed = sum(sum(c["misses"].values()) for c in report["summary"]["by_category"].values())
    assert missed == sum(1 for r in records.values() if not r["correct"])
    assert "recall" in harness.format_report(report) and "ctl-same" in harness.format_errors(report)

    # and the eval project holds nothing afterwards
    assert not Fact.objects.filter(project_id="eval-contra-test").exists()
    assert not ConflictSet.objects.filter(project_id="eval-contra-test").exists()
