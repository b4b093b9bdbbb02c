#!/usr/bin/env python3
"""Validate dataset.jsonl and noise.jsonl; print summary counts and warnings."""

import json
import os
import re
import sys
import unicodedata
from collections import Counter
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
TYPES = ["paraphrase", "exact_name", "temporal", "multi_hop", "update", "distractor", "no_answer"]
errors, warnings = [], []


def err(m):
    errors.append(m)


def warn(m):
    warnings.append(m)


STOP = set(
    """what which when where who whom whose why how does did do done doing have has had having is are was were be been
being the a an and or but of to in on at for with from by about into over after before under again than then that this these those
there their they them she her hers he him his its it i me my we our you your yet any some much many most more now these days still
ever also just only very can could should would will shall may might must not no nor so too own same other such each both few
le la les un une des du de d l et ou mais donc ni car que qui quoi quel quelle quels quelles quand comment pourquoi combien est sont
était étaient être été a ont avait avoir il elle ils elles son sa ses leur leurs lui se sur dans par pour avec sans sous chez vers
en au aux ce cet cette ces y ne pas plus moins tout tous toute toutes fait faire fais actuellement aujourd'hui maintenant encore
déjà jamais toujours est-ce qu'est-ce qu est-elle est-il a-t-il a-t-elle fait-elle fait-il elle-même lui-même""".split()
)


def norm(w):
    w = unicodedata.normalize("NFKD", w.lower())
    w = "".join(c for c in w if not unicodedata.combining(c))
    w = re.sub(r"^(l|d|qu|j|n|s|c|m|t)['’]", "", w)
    w = re.sub(r"['’]s$", "", w)
    return w


def content_keys(text):
    out = set()
    for w in re.findall(r"[\w'’-]+", text):
        n = norm(w)
        if len(n) < 4 or n in STOP or w.lower() in STOP:
            continue
        out.add(n[:5])
    return out


def nwords(t):
    return len(re.findall(r"[\w'’-]+", t))


def caps(text):
    toks = re.findall(r"[\w'’-]+", text)
    out = set()
    for i, t in enumerate(toks):
        t = re.sub(r"['’]s$", "", t)
        if t[:1].isupper() and i > 0:
            out.add(t)
    # first token too, if it is a name used elsewhere capitalised
    if toks:
        out.add(re.sub(r"['’]s$", "", toks[0]))
    return out


scopes = [json.loads(line) for line in open(os.path.join(HERE, "dataset.jsonl"), encoding="utf-8")]
noise = [json.loads(line) for line in open(os.path.join(HERE, "noise.jsonl"), encoding="utf-8")]

ids = [s["scope"] for s in scopes]
if len(ids) != len(set(ids)):
    err("duplicate scope ids")
type_count, type_lang = Counter(), Counter()
lang_count, split_count, split_lang = Counter(), Counter(), Counter()
q_total = f_total = e_total = 0
for s in scopes:
    sid = s["scope"]
    for k in ("scope", "lang", "split", "facts", "events", "questions"):
        if k not in s:
            err(f"{sid}: missing {k}")
    lang_count[s["lang"]] += 1
    split_count[s["split"]] += 1
    split_lang[(s["lang"], s["split"])] += 1
    fids = [f["id"] for f in s["facts"]]
    eids = [e["id"] for e in s["events"]]
    qids = [q["id"] for q in s["questions"]]
    allids = fids + eids
    for name, lst in (("fact", fids), ("event", eids), ("question", qids)):
        if len(lst) != len(set(lst)):
            err(f"{sid}: duplicate {name} ids")
    if len(set(allids)) != len(allids):
        err(f"{sid}: fact/event id clash")
    if not 25 <= len(fids) <= 35:
        err(f"{sid}: {len(fids)} facts")
    if not 5 <= len(eids) <= 8:
        err(f"{sid}: {len(eids)} events")
    if len(qids) != 10:
        err(f"{sid}: {len(qids)} questions")
    f_total += len(fids)
    e_total += len(eids)
    q_total += len(qids)
    seen = set()
    replaced = set()
    replacers = {}
    text_by = {f["id"]: f["text"] for f in s["facts"]}
    text_by.update({e["id"]: e["text"] for e in s["events"]})
    for f in s["facts"]:
        if "replaces" in f:
            r = f["replaces"]
            if r not in seen:
                err(f"{sid}: {f['id']} replaces {r} which is not earlier")
            if r in replaced:
                err(f"{sid}: {r} replaced twice")
            if r in replacers:
                err(f"{sid}: {r} is itself a replacement (chain)")
            replaced.add(r)
            replacers[f["id"]] = r
        seen.add(f["id"])
        n = nwords(f["text"])
        if not 6 <= n <= 30:
            err(f"{sid}/{f['id']}: {n} words")
    for e in s["events"]:
        try:
            dt = datetime.strptime(e["occurred_at"], "%Y-%m-%dT%H:%M:%SZ")
            if not 2024 <= dt.year <= 2026:
                err(f"{sid}/{e['id']}: year {dt.year}")
        except Exception:
            err(f"{sid}/{e['id']}: bad occurred_at {e['occurred_at']}")
        n = nwords(e["text"])
        if not 5 <= n <= 30:
            warn(f"{sid}/{e['id']}: {n} words")
    types_here = Counter()
    for q in s["questions"]:
        t = q["type"]
        types_here[t] += 1
        if t not in TYPES:
            err(f"{sid}/{q['id']}: bad type {t}")
        type_count[t] += 1
        type_lang[(t, s["lang"])] += 1
        n = nwords(q["text"])
        if not 4 <= n <= 20:
            err(f"{sid}/{q['id']}: question has {n} words")
        for g in q["gold"]:
            if g not in text_by:
                err(f"{sid}/{q['id']}: gold {g} missing")
            if g in replaced:
                err(f"{sid}/{q['id']}: gold {g} is superseded")
        if t == "no_answer" and q["gold"]:
            err(f"{sid}/{q['id']}: no_answer with gold")
        if t != "no_answer" and not q["gold"]:
            err(f"{sid}/{q['id']}: empty gold")
        if t == "temporal" and not any(g in eids for g in q["gold"]):
            err(f"{sid}/{q['id']}: temporal without event")
        if t == "update" and not all(g in replacers for g in q["gold"]):
            err(f"{sid}/{q['id']}: update gold not a replacement")
        if t == "multi_hop":
            if len(q["gold"]) < 2:
                err(f"{sid}/{q['id']}: multi_hop needs 2 gold")
            else:
                a, b = text_by[q["gold"][0]], text_by[q["gold"][1]]
                shared = caps(a) & caps(b)
                links = [w for w in shared if w not in q["text"]]
                if not links:
                    warn(f"{sid}/{q['id']}: multi_hop link name missing or in question: {shared}")
        if t == "paraphrase":
            ov = set()
            for g in q["gold"]:
                ov |= content_keys(q["text"]) & content_keys(text_by[g])
            if ov:
                warn(f"{sid}/{q['id']}: paraphrase overlap {sorted(ov)}")
        if t == "exact_name":
            toks = [
                w
                for w in re.findall(r"[\w-]+", q["text"])
                if re.search(r"\d", w) or (w[:1].isupper() and q["text"].index(w) > 0)
            ]
            if not any(all(tok in text_by[g] for tok in toks) for g in q["gold"]) or not toks:
                warn(f"{sid}/{q['id']}: exact_name identifier not verbatim in gold? {toks}")
    missing = [t for t in TYPES if not types_here[t]]
    if missing:
        warn(f"{sid}: missing types {missing}")

nl = Counter(n["lang"] for n in noise)
ntexts = [n["text"].lower() for n in noise]
if len(ntexts) != len(set(ntexts)):
    err("duplicate noise lines")
for lang in ("en", "fr"):
    if nl[lang] < 300:
        err(f"noise {lang}: {nl[lang]} < 300")
# noise must not contain person names used in the dataset
names = set()
for s in scopes:
    for f in s["facts"] + s["events"]:
        for w in re.findall(r"\b[A-ZÀ-Ý][\w’'-]+", f["text"]):
            names.add(re.sub(r"['’]s$", "", w))
for n in noise:
    toks = set(re.sub(r"['’]s$", "", w) for w in re.findall(r"\b[A-ZÀ-Ý][\w’'-]+", n["text"]))
    hit = [w for w in toks if w in names and n["text"].find(w) > 0]
    if hit:
        warn(f"noise mentions dataset name(s) {hit}: {n['text']}")
# near-duplicate noise (Jaccard on content keys)
keys = [(n["lang"], content_keys(n["text"]), n["text"]) for n in noise]
for i in range(len(keys)):
    for j in range(i + 1, len(keys)):
        if keys[i][0] != keys[j][0]:
            continue
        a, b = keys[i][1], keys[j][1]
        if a and b and len(a & b) / len(a | b) >= 0.6:
            warn(f"near-duplicate noise: {keys[i][2]} || {keys[j][2]}")
for n in noise:
    w = nwords(n["text"])
    if not 5 <= w <= 30:
        warn(f"noise length {w}: {n['text']}")

for t in TYPES:
    if type_count[t] < 40:
        err(f"type {t}: {type_count[t]} < 40")
if q_total < 440:
    err(f"{q_total} questions < 440")
for lang in ("en", "fr"):
    if lang_count[lang] < 22:
        err(f"{lang_count[lang]} {lang} scopes < 22")

print(
    f"scopes: {len(scopes)}  by lang: {dict(lang_count)}  by split: {dict(split_count)}  lang×split: {dict(split_lang)}"
)
print(f"facts: {f_total}  events: {e_total}  questions: {q_total}")
print("questions per type (total / en / fr):")
for t in TYPES:
    print(f"  {t:12s} {type_count[t]:4d} / {type_lang[(t, 'en')]:3d} / {type_lang[(t, 'fr')]:3d}")
qs = Counter((s["split"]) for s in scopes for q in s["questions"])
print(f"questions per split: {dict(qs)}")
print(f"noise lines: {dict(nl)}")
print(f"superseded facts (replaces): {sum(1 for s in scopes for f in s['facts'] if 'replaces' in f)}")
for w in warnings:
    print("WARN", w)
for e in errors:
    print("ERROR", e)
print("OK" if not errors else f"{len(errors)} ERRORS")
sys.exit(1 if errors else 0)
