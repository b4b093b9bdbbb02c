#!/usr/bin/env python3
"""Build and validate the hakimem evaluation dataset.

Sources (hand-written) live in src/:
  src/en_*.txt, src/fr_*.txt  -- scopes, in a small line format (see README.md)
  src/noise_en.txt, src/noise_fr.txt -- one background fact per line
Outputs: dataset.jsonl, noise.jsonl (next to this script).
"""

import json
import re
import glob
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "src")
TYPES = ["paraphrase", "exact_name", "temporal", "multi_hop", "update", "distractor", "no_answer"]


def split_for(scope_id):
    # Deterministic, content-blind rule fixed before writing: every 4th scope
    # of each language (numbers 04, 08, 12, 16, 20) is held out.
    n = int(scope_id.split("-")[1])
    return "heldout" if n % 4 == 0 else "dev"


def parse_scopes(path):
    scopes, cur = [], None
    for ln, raw in enumerate(open(path, encoding="utf-8"), 1):
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        where = f"{os.path.basename(path)}:{ln}"
        if line.startswith("@scope"):
            _, sid, lang = line.split()
            cur = {"scope": sid, "lang": lang, "split": split_for(sid), "facts": [], "events": [], "questions": []}
            scopes.append(cur)
            continue
        parts = [p.strip() for p in line.split(" | ")]
        head = parts[0]
        if head.startswith("f"):
            assert len(parts) == 2, where
            hp = head.split()
            fact = {"id": hp[0], "text": parts[1]}
            if len(hp) > 1:
                assert hp[1].startswith("<"), where
                fact["replaces"] = hp[1][1:]
            cur["facts"].append(fact)
        elif head.startswith("e"):
            assert len(parts) == 3, where
            cur["events"].append({"id": head, "text": parts[2], "occurred_at": parts[1]})
        elif head.startswith("q"):
            assert len(parts) == 4, where
            gold = [] if parts[2] == "-" else parts[2].split(",")
            cur["questions"].append({"id": head, "text": parts[3], "type": parts[1], "gold": gold})
        else:
            raise ValueError(f"bad line {where}: {line}")
    return scopes


def words(s):
    return re.findall(r"[\w'’-]+", s)


def main():
    scopes = []
    for p in sorted(glob.glob(os.path.join(SRC, "en_*.txt"))) + sorted(glob.glob(os.path.join(SRC, "fr_*.txt"))):
        scopes += parse_scopes(p)
    noise = []
    for lang in ("en", "fr"):
        for line in open(os.path.join(SRC, f"noise_{lang}.txt"), encoding="utf-8"):
            if line.strip() and not line.startswith("#"):
                noise.append({"lang": lang, "text": line.strip()})

    with open(os.path.join(HERE, "dataset.jsonl"), "w", encoding="utf-8") as f:
        for s in scopes:
            f.write(json.dumps(s, ensure_ascii=False) + "\n")
    with open(os.path.join(HERE, "noise.jsonl"), "w", encoding="utf-8") as f:
        for n in noise:
            f.write(json.dumps(n, ensure_ascii=False) + "\n")
    print(f"wrote {len(scopes)} scopes, {len(noise)} noise lines")


if __name__ == "__main__":
    main()
