"""A structured reading of a fact: who it is about, which attribute, which value. Two facts that give one holder
two values of an attribute that holds one value at a time (where someone lives, works, their age, birth date,
partner, number of children, a preference or habit and its reverse) cannot both be true now, however they are
worded: "Bob lives in Berlin, in Kreuzberg." / "Bob moved to Munich." is a contradiction at cosine 0.77 that
the word-level rules of facts.text, which need the same sentence with one slot changed, never see.

Rules, English and French, that a curator can read and predict; no model. A sentence the patterns do not
recognise gives no claim and so no contradiction: precision first, a missed pair is left to the word rules.

The reader, by concern: words (tokens, folding, the word lists), holders (who a clause is about), patterns (the
predicates, English and French), values (reading a value from its span), reader (a text's sentences to claims),
clashes (what a claim is, and when two cannot both hold).
"""

from facts.claims.clashes import ANYONE, Claim, Clash, clash, contradiction, same_holder
from facts.claims.reader import read

__all__ = ["ANYONE", "Claim", "Clash", "clash", "contradiction", "read", "same_holder"]
