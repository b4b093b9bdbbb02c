"""The write-time verdict (conflict / duplicate / distinct) on a hand-written set of sentence pairs, with
their MiniLM similarities, so the thresholds and rules are grounded in measurements.

Each pair carries the verdict a curator would give. The MiniLM test prints the table and holds conflict
precision and recall, and duplicate precision, to floors: a rule change that hurts either fails CI.
"""
import pytest

from facts.services import CONFLICT, DISTINCT, DUPLICATE, pair_verdict
from facts.text import contradiction_signal
from hakimem.embeddings import get_embedder

PAIRS = [  # (stored, new, verdict a curator would give)
    ("Marie is allergic to penicillin.", "Marie is not allergic to penicillin.", CONFLICT),
    ("Paul's birthday is on 3 May.", "Paul's birthday is on 5 June.", CONFLICT),
    ("Paul lives in Nantes.", "Paul lives in Bordeaux.", CONFLICT),
    ("Léa works at Airbus in Toulouse.", "Léa works at Thales in Toulouse.", CONFLICT),
    ("Tom has two children.", "Tom has three children.", CONFLICT),
    ("Tom has 2 children.", "Tom has 3 children.", CONFLICT),
    ("The rent is 850 euros a month.", "The rent is 920 euros a month.", CONFLICT),
    ("Sofia is married.", "Sofia is divorced.", CONFLICT),
    ("Hugo loves jazz.", "Hugo hates jazz.", CONFLICT),
    ("Marie aime le café.", "Marie n'aime pas le café.", CONFLICT),
    ("Julien habite à Lyon.", "Julien habite à Marseille.", CONFLICT),
    ("Le rendez-vous est le 12 mars.", "Le rendez-vous est le 14 mars.", CONFLICT),
    ("Anna drinks coffee every morning.", "Anna never drinks coffee.", CONFLICT),
    ("Ben's car is a blue Peugeot.", "Ben's car is a red Peugeot.", CONFLICT),
    ("Clara speaks Spanish.", "Clara does not speak Spanish.", CONFLICT),
    ("Hannah's car is a silver Skoda Fabia registered YK19 ZRT.", "Owen's van is a white Ford Transit registered YK21 ZTR.", DISTINCT),
    ("Flight AF1532 leaves Paris at 9:40.", "Flight AF1352 leaves Paris at 9:40.", CONFLICT),
    ("Paul lives in Nantes.", "Paul now lives in Nantes.", DUPLICATE),
    ("Paul lives in Nantes.", "paul lives in nantes!", DUPLICATE),
    ("Clara's sister is Emma.", "Emma is Clara's sister.", DUPLICATE),
    ("Marie works as a nurse.", "Marie is currently working as a nurse.", DUPLICATE),
    ("Julien habite à Lyon.", "Julien habite toujours à Lyon.", DUPLICATE),
    ("Paul lives in Nantes.", "Paul lives in Nantes with Marie.", DISTINCT),
    ("Paul likes tea.", "Paul likes green tea.", DISTINCT),
    ("Marie is a nurse.", "Marie works as a nurse in Lyon.", DISTINCT),
    ("Tom has two children.", "Tom's children go to school in Rennes.", DISTINCT),
    ("Léa plays the piano.", "Léa plays the violin too.", DISTINCT),
    ("Hugo visited Lisbon in May.", "Hugo visited Lisbon again.", DISTINCT),
    ("The meeting is on Monday.", "The meeting is in room 4.", DISTINCT),
    ("Sofia likes cats.", "Sofia has a cat named Pixel.", DISTINCT),
    ("Julien habite à Lyon.", "Julien aime Lyon.", DISTINCT),
    ("Marie boit du thé le matin.", "Marie boit du thé vert le matin.", DISTINCT),
    ("Anna runs on Sundays.", "Anna may run on Sundays.", DISTINCT),
    ("Paul works at the bakery.", "Paul has worked at the bakery since 2019.", DISTINCT),
    ("Ben is allergic to cats.", "Ben is allergic to cats and dogs.", DISTINCT),
    ("Clara's sister is Emma.", "Emma is Clara's older sister.", DISTINCT),
    ("Léa studied law in Paris.", "Léa studied law at the Sorbonne.", DISTINCT),
]


def test_rules_never_flag_a_sentence_against_itself():
    for stored, new, _ in PAIRS:
        assert contradiction_signal(stored, stored) is None
        assert contradiction_signal(new, new) is None


def test_verdict_thresholds_apply(settings):
    assert pair_verdict("Paul lives in Nantes.", "Paul lives in Bordeaux.", 0.74)[0] == DISTINCT
    assert pair_verdict("Paul lives in Bordeaux.", "Paul lives in Nantes.", 0.80)[0] == CONFLICT
    assert pair_verdict("Paul now lives in Nantes.", "Paul lives in Nantes.", 0.91)[0] == DISTINCT
    assert pair_verdict("Paul now lives in Nantes.", "Paul lives in Nantes.", 0.93)[0] == DUPLICATE
    assert pair_verdict("Ben is allergic to cats and dogs.", "Ben is allergic to cats.", 0.99)[0] == DISTINCT


@pytest.mark.minilm
def test_verdicts_with_minilm(settings, capsys):
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    embedder = get_embedder()
    rows = []
    for stored, new, truth in PAIRS:
        vs, vn = embedder.embed([stored, new])
        similarity = float(vs @ vn)
        verdict, signal = pair_verdict(new, stored, similarity)
        rows.append((stored, new, truth, similarity, verdict, signal.rule if signal else "-"))

    def precision_recall(label):
        tp = sum(1 for r in rows if r[2] == label and r[4] == label)
        fp = sum(1 for r in rows if r[2] != label and r[4] == label)
        fn = sum(1 for r in rows if r[2] == label and r[4] != label)
        return tp / max(tp + fp, 1), tp / max(tp + fn, 1)

    conflict_p, conflict_r = precision_recall(CONFLICT)
    duplicate_p, duplicate_r = precision_recall(DUPLICATE)
    with capsys.disabled():
        print("\nsimilarity  verdict    truth      rule              pair")
        for stored, new, truth, similarity, verdict, rule in rows:
            print(f"{similarity:10.3f}  {verdict:9}  {truth:9}  {rule:16}  {stored} | {new}")
        print(f"conflict precision {conflict_p:.2f} recall {conflict_r:.2f}; "
              f"duplicate precision {duplicate_p:.2f} recall {duplicate_r:.2f}")
    assert conflict_p >= 0.9 and conflict_r >= 0.8
    assert duplicate_p >= 0.99  # a false duplicate loses what the client wrote: never accept one
