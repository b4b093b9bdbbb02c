"""What a claim is (who, which attribute, which value) and when two claims cannot both hold."""

from __future__ import annotations

from dataclasses import dataclass

SINGLE, POLAR, COUNT, STATE, DATE, LEVEL = "single", "polar", "count", "state", "date", "level"


# Who a third-person pronoun with no name before it stands for: the scope's subject, named or not ("Priya
# lives in Leeds." / "She moved to Bristol."), so it matches a name or the subject (same_holder).
ANYONE = "~"


@dataclass(frozen=True)
class Claim:
    holder: str  # "bob", "self", "bob/daughter", "self/wife"
    attribute: str  # "residence", "employer", "likes:coffee", "count:children", ...
    kind: str  # SINGLE: one value at a time; POLAR: a yes or a no; COUNT; STATE (marital); DATE (birth); LEVEL
    # (education: "min:N" and/or "max:N", a level reached at least or at most)
    value: frozenset  # folded words, numbers, or date parts ("y:2019", "m:5", "d:3")
    positive: bool = True
    shown: str = ""  # the value as written, for the curator

    @property
    def key(self) -> tuple[str, str]:
        return (self.holder, self.attribute)


def same_holder(a: str, b: str) -> bool:
    """Whether two holders can be one person: equal, or a pronoun's (ANYONE) and a name or the subject, also as
    the owner of a relation ("~/wife" and "antoine/wife")."""
    if a == b:
        return True
    owner_a, _, rest_a = a.partition("/")
    owner_b, _, rest_b = b.partition("/")
    if rest_a != rest_b or ANYONE not in (owner_a, owner_b):
        return False
    other = owner_b if owner_a == ANYONE else owner_a
    return other != "other" and not other.startswith("thing:")


@dataclass(frozen=True)
class Clash:
    """Why two claims cannot both hold: the attribute, whose it is, and the two values as written."""

    attribute: str
    holder: str
    new: str
    old: str
    rule: str  # different_value: two values of one attribute; reversed: a yes and a no

    @property
    def detail(self) -> str:
        return f"{self.attribute} of {self.holder}: {self.new!r} against {self.old!r}"


_MARITAL_CLASH = {
    frozenset(p)
    for p in [
        ("married", "single"),
        ("married", "divorced"),
        ("married", "widowed"),
        ("single", "engaged"),
        ("single", "in_relationship"),
        ("divorced", "engaged"),
        ("single", "pacsed"),
        ("married", "separated"),
        ("never_married", "married"),
        ("never_married", "divorced"),
        ("never_married", "widowed"),
        ("never_married", "separated"),
    ]
}


def clash(new: Claim, old: Claim) -> Clash | None:
    """The two claims' disagreement, or None when both can hold: another holder or attribute, one value inside
    the other (more specific), the same value, additive attributes, or a past state."""
    if new.attribute != old.attribute or new.kind != old.kind or not same_holder(new.holder, old.holder):
        return None
    found = False
    if new.kind == SINGLE:
        found = bool(new.value) and bool(old.value) and not (new.value & old.value) and not _within(new, old)
    elif new.kind == POLAR:
        found = new.positive != old.positive
    elif new.kind == COUNT:
        a, b = _count(new.value), _count(old.value)
        if "any" in new.value | old.value:  # "has a dog" says there are pets, not how many
            found = a is not None and b is not None and (a == 0) != (b == 0)
        else:
            found = a is not None and b is not None and a != b
    elif new.kind == STATE:
        found = any(frozenset((x, y)) in _MARITAL_CLASH for x in new.value for y in old.value)
    elif new.kind == DATE:
        parts_new = {p[0]: p for p in new.value}
        parts_old = {p[0]: p for p in old.value}
        found = any(parts_new[k] != parts_old[k] for k in parts_new.keys() & parts_old.keys())
    elif new.kind == LEVEL:
        found = _bound(new, "min") > _bound(old, "max") or _bound(old, "min") > _bound(new, "max")
    if not found:
        return None
    holder = old.holder if new.holder.startswith(ANYONE) else new.holder
    return Clash(
        attribute=new.attribute,
        holder=holder,
        new=new.shown,
        old=old.shown,
        rule="reversed" if new.kind == POLAR else "different_value",
    )


# Values one of which is a kind of the other: a Catholic is a Christian.
_KIND_OF = {"religion": {"catholic": "christian", "protestant": "christian", "orthodox": "christian"}}


def _within(a: Claim, b: Claim) -> bool:
    kinds = _KIND_OF.get(a.attribute)
    if not kinds:
        return False
    return any(kinds.get(x) in b.value for x in a.value) or any(kinds.get(x) in a.value for x in b.value)


def _bound(claim: Claim, side: str) -> float:
    levels = [int(v.split(":")[1]) for v in claim.value if v.startswith(side + ":")]
    if not levels:
        return -1.0 if side == "min" else float("inf")
    return float(max(levels) if side == "min" else min(levels))


def _count(value: frozenset) -> int | None:
    for v in value:
        if v in ("some", "any"):  # "a dog" is one dog
            return 1
        if v.isdigit():
            return int(v)
    return None


def contradiction(new_claims: tuple[Claim, ...], old_claims: tuple[Claim, ...]) -> Clash | None:
    """The first pair of claims, one of each fact, that cannot both hold."""
    if not new_claims or not old_claims:
        return None
    by_attribute = {}
    for claim in old_claims:
        by_attribute.setdefault(claim.attribute, []).append(claim)
    for claim in new_claims:
        for other in by_attribute.get(claim.attribute, ()):
            found = clash(claim, other)
            if found is not None:
                return found
    return None
