"""The write-time verdict (conflict / duplicate / distinct) on a hand-written set of sentence pairs, with
their MiniLM similarities, so the thresholds and rules are grounded in measurements.

Each pair carries the verdict a curator would give. The MiniLM test prints the table and holds conflict
precision and recall, and duplicate precision, to floors: a rule change that hurts either fails CI.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings

from facts.verdicts import CONFLICT, DISTINCT, DUPLICATE, pair_verdict
from facts.text import _same_claim, analyse, contradiction_signal
from hakimem.embeddings import get_embedder, thresholds

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
    (
        "Hannah's car is a silver Skoda Fabia registered YK19 ZRT.",
        "Owen's van is a white Ford Transit registered YK21 ZTR.",
        DISTINCT,
    ),
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
    assert pair_verdict("The rent is 850 euros.", "The rent is 920 euros.", 0.74)[0] == DISTINCT  # a word rule
    assert pair_verdict("Paul lives in Nantes.", "Paul lives in Bordeaux.", 0.74)[0] == CONFLICT  # claims
    assert pair_verdict("Paul lives in Nantes.", "Paul lives in Bordeaux.", 0.29)[0] == DISTINCT  # below their floor
    assert pair_verdict("Paul lives in Bordeaux.", "Paul lives in Nantes.", 0.80)[0] == CONFLICT
    assert pair_verdict("Paul now lives in Nantes.", "Paul lives in Nantes.", 0.91)[0] == DISTINCT
    assert pair_verdict("Paul now lives in Nantes.", "Paul lives in Nantes.", 0.93)[0] == DUPLICATE
    assert pair_verdict("Ben is allergic to cats and dogs.", "Ben is allergic to cats.", 0.99)[0] == DISTINCT


def test_a_statement_negated_conflicts_below_the_word_rules_threshold():
    """One fact the other negated says by itself that both are about the same thing, as clashing claims do; "no
    longer", "anymore" and "ne ... plus" are the negation's, not content words that make the two differ."""
    stopped = pair_verdict("Amara no longer enjoys hiking.", "Amara enjoys hiking in the mountains.", 0.73)
    assert stopped[0] == CONFLICT and stopped[1].rule == "negation"
    assert pair_verdict("Amara no longer enjoys hiking.", "Amara enjoys hiking in the mountains.", 0.29)[0] == DISTINCT
    assert analyse("Inès ne joue plus du piano.").affirmed == analyse("Inès joue du piano.").affirmed
    # "plus" is a content word where nothing is negated ("plays more piano")
    assert analyse("Inès joue plus de piano.").affirmed == analyse("Inès joue de piano.").affirmed | {"plus"}


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
        print(
            f"conflict precision {conflict_p:.2f} recall {conflict_r:.2f}; "
            f"duplicate precision {duplicate_p:.2f} recall {duplicate_r:.2f}"
        )
    assert conflict_p >= 0.9 and conflict_r >= 0.8
    assert duplicate_p >= 0.99  # a false duplicate loses what the client wrote: never accept one


# --- conversational pairs ----------------------------------------------------------------------------------
# Real conversation, not sentences written to be facts. Two sources:
# - LoCoMo's development conversations (../shared/data/locomo-dev; CC BY-NC 4.0, so only references are kept
#   here and the texts are read at run time): pairs of chat turns or of extracted observations at MiniLM
#   similarity >= 0.75 where one side is negated and the other is not, the highest first, every k-th. The rule
#   that fired on any such pair opened 102 conflict sets on 788 turns. A reader calls none of them a
#   contradiction ("I haven't done pottery yet" / "I'm a big fan of pottery", said by two people).
# - our own dataset (eval/dataset.jsonl): every fact and the later fact that replaces it, which a reader
#   calls a contradiction (a price, an address, a schedule that changed).
LOCOMO_PAIRS = [  # (conversation, "turn" | "obs", turn id or observation index, the other), all DISTINCT
    ("conv-26", "turn", "D9:12", "D14:33"),  # MiniLM 0.963
    ("conv-26", "turn", "D1:1", "D5:15"),  # MiniLM 0.844
    ("conv-26", "turn", "D9:12", "D16:5"),  # MiniLM 0.824
    ("conv-26", "turn", "D2:13", "D19:3"),  # MiniLM 0.813
    ("conv-26", "turn", "D4:9", "D18:23"),  # MiniLM 0.803
    ("conv-26", "turn", "D3:18", "D18:23"),  # MiniLM 0.795
    ("conv-26", "turn", "D5:15", "D13:18"),  # MiniLM 0.786
    ("conv-26", "turn", "D9:12", "D14:35"),  # MiniLM 0.777
    ("conv-26", "turn", "D5:6", "D16:11"),  # MiniLM 0.770
    ("conv-26", "turn", "D18:11", "D18:23"),  # MiniLM 0.765
    ("conv-26", "turn", "D13:12", "D17:13"),  # MiniLM 0.760
    ("conv-26", "turn", "D9:16", "D14:34"),  # MiniLM 0.754
    ("conv-26", "obs", 21, 149),  # MiniLM 0.816
    ("conv-26", "obs", 47, 149),  # MiniLM 0.796
    ("conv-26", "obs", 46, 149),  # MiniLM 0.775
    ("conv-26", "obs", 14, 149),  # MiniLM 0.763
    ("conv-26", "obs", 20, 149),  # MiniLM 0.751
    ("conv-30", "turn", "D14:20", "D17:8"),  # MiniLM 0.913
    ("conv-30", "turn", "D17:12", "D19:10"),  # MiniLM 0.843
    ("conv-30", "turn", "D3:14", "D8:5"),  # MiniLM 0.824
    ("conv-30", "turn", "D4:10", "D19:1"),  # MiniLM 0.811
    ("conv-30", "turn", "D6:18", "D7:14"),  # MiniLM 0.800
    ("conv-30", "turn", "D1:4", "D1:24"),  # MiniLM 0.791
    ("conv-30", "turn", "D2:11", "D3:14"),  # MiniLM 0.784
    ("conv-30", "turn", "D9:12", "D15:21"),  # MiniLM 0.776
    ("conv-30", "turn", "D2:16", "D9:13"),  # MiniLM 0.770
    ("conv-30", "turn", "D4:17", "D5:22"),  # MiniLM 0.764
    ("conv-30", "turn", "D11:22", "D14:6"),  # MiniLM 0.759
    ("conv-30", "turn", "D14:9", "D17:15"),  # MiniLM 0.754
    ("conv-30", "obs", 31, 32),  # MiniLM 0.958
    ("conv-30", "obs", 33, 115),  # MiniLM 0.863
    ("conv-30", "obs", 114, 144),  # MiniLM 0.842
    ("conv-30", "obs", 33, 142),  # MiniLM 0.819
    ("conv-30", "obs", 49, 143),  # MiniLM 0.795
    ("conv-30", "obs", 129, 167),  # MiniLM 0.774
]


def _locomo_texts():
    from bench.locomo import DEFAULT_DATA, load_conversations

    if not DEFAULT_DATA.exists():
        pytest.skip(f"LoCoMo development data not found at {DEFAULT_DATA}")
    return {c.sample_id: c for c in load_conversations(DEFAULT_DATA)}


def _conversational_pairs() -> list[tuple[str, str, str]]:
    conversations = _locomo_texts()
    pairs = []
    for sample, kind, x, y in LOCOMO_PAIRS:
        conv = conversations[sample]
        if kind == "turn":
            text = {t.dia_id: t.text for t in conv.turns}
            pairs.append((text[x], text[y], DISTINCT))
        else:
            pairs.append((conv.observations[x].text, conv.observations[y].text, DISTINCT))
    dataset = Path(django_settings.BASE_DIR) / "eval" / "dataset.jsonl"
    for line in dataset.read_text(encoding="utf-8").splitlines():
        scope = json.loads(line)
        text = {f["id"]: f["text"] for f in scope["facts"]}
        pairs += [(text[f["replaces"]], f["text"], CONFLICT) for f in scope["facts"] if f.get("replaces")]
    return pairs


@pytest.mark.minilm
def test_conversational_pairs_with_minilm(settings, capsys):
    """Precision holds on conversation: no false conflict among the LoCoMo pairs. Recall on our own updates is
    printed, not held: it is 0.00 (measured), since a rule needs the same slot and every one of these updates
    is reworded; applications send them as PATCH, which supersedes the old fact without conflict detection."""
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    pairs = _conversational_pairs()
    assert len(pairs) >= 60
    embedder = get_embedder()
    verdicts = []
    for old, new, truth in pairs:
        vo, vn = embedder.embed([old, new])
        verdicts.append((truth, pair_verdict(new, old, float(vo @ vn))[0]))
    tp = sum(1 for t, v in verdicts if t == CONFLICT and v == CONFLICT)
    fp = sum(1 for t, v in verdicts if t != CONFLICT and v == CONFLICT)
    fn = sum(1 for t, v in verdicts if t == CONFLICT and v != CONFLICT)
    precision = f"{tp / (tp + fp):.2f}" if tp + fp else "- (no conflict opened)"
    with capsys.disabled():
        print(
            f"\nconversational pairs: {len(pairs)} ({sum(t == DISTINCT for t, _ in verdicts)} LoCoMo, distinct; "
            f"{sum(t == CONFLICT for t, _ in verdicts)} updates of our dataset, conflicts): "
            f"conflict precision {precision}, recall {tp / max(tp + fn, 1):.2f} ({tp} found, {fp} false)"
        )
    assert fp == 0


@pytest.mark.minilm
def test_no_two_turns_of_the_development_conversations_conflict(settings, capsys):
    """Every pair of turns (and of extracted observations) of both conversations above the conflict threshold, and
    below it down to the claims' floor every pair the negation rule may take (one side negated; the claims are the
    next test's): not one conflict. Before the negation rule required the same claim, 1,965 turn pairs above the
    conflict threshold did."""
    settings.HAKI_EMBED_PROVIDER = "sentence-transformers"
    embedder, limits = get_embedder(), thresholds()
    checked, conflicts = 0, []
    for conv in _locomo_texts().values():
        for texts in ([t.text for t in conv.turns], [o.text for o in conv.observations]):
            vectors = np.asarray(embedder.embed(texts))
            similarity = vectors @ vectors.T
            read = [analyse(text) for text in texts]
            for i, j in zip(*np.where(np.triu(similarity, 1) >= limits.claim_min_similarity)):
                checked += 1
                if similarity[i, j] < limits.conflict_min_similarity:  # only the negation rule may fire here
                    if read[i].negated != read[j].negated and _same_claim(read[i].affirmed, read[j].affirmed):
                        conflicts.append((conv.sample_id, int(i), int(j)))
                    continue
                if pair_verdict(texts[j], texts[i], float(similarity[i, j]))[0] == CONFLICT:
                    conflicts.append((conv.sample_id, int(i), int(j)))
    with capsys.disabled():
        print(f"\n{checked} pairs of turns or observations read, {len(conflicts)} conflicts")
    assert checked > 150_000
    assert conflicts == []


def test_no_two_turns_of_the_development_conversations_make_claims_that_clash():
    """The claims rules hold at any similarity from 0.3 up, so every pair of turns (and of observations) is read,
    not only the alike ones: not one pair of the ~600k gives one person two values of one attribute."""
    from itertools import combinations

    from facts.claims import contradiction, read

    read_any, clashes = 0, []
    for conv in _locomo_texts().values():
        for texts in ([t.text for t in conv.turns], [o.text for o in conv.observations]):
            claims = [read(text) for text in texts]
            read_any += sum(1 for c in claims if c)
            clashes += [
                (conv.sample_id, i, j)
                for i, j in combinations(range(len(texts)), 2)
                if contradiction(claims[j], claims[i]) is not None
            ]
    assert read_any > 100  # the rules do read chat: this is not an empty pass
    assert clashes == []
