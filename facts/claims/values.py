"""Reading a claim's value from its span: numbers, dates, places and names, a job whatever its gender, the head of
an object ('black coffee in the morning' -> coffee)."""

from __future__ import annotations

import re

from facts.claims.words import _CUT_WORDS, _VALUE_STOP, _fold, _names, _tokens

_MONTH_NUMBERS = {
    _fold(m): i
    for i, names in enumerate(
        [
            "january janvier jan",
            "february février fevrier feb",
            "march mars mar",
            "april avril apr",
            "may mai",
            "june juin jun",
            "july juillet jul",
            "august août aout aug",
            "september septembre sep sept",
            "october octobre oct",
            "november novembre nov",
            "december décembre decembre dec",
        ],
        start=1,
    )
    for m in names.split()
}
_NUMBER_WORDS = {
    "plus": 0,
    "un seul": 1,
    "une seule": 1,
    "a single": 1,
    "only one": 1,
    "just one": 1,
    "no": 0,
    "zero": 0,
    "aucun": 0,
    "aucune": 0,
    "pas": 0,
    "pas d'": 0,
    "pas de": 0,
    "any": 0,
    "jamais eu": 0,
    "one": 1,
    "un": 1,
    "une": 1,
    "two": 2,
    "deux": 2,
    "three": 3,
    "trois": 3,
    "four": 4,
    "quatre": 4,
    "five": 5,
    "cinq": 5,
    "six": 6,
    "seven": 7,
    "sept": 7,
    "eight": 8,
    "huit": 8,
    "nine": 9,
    "neuf": 9,
    "ten": 10,
    "dix": 10,
}
_COUNT_NOUNS = {
    _fold(k): v
    for v, ks in {
        "children": "children child kids kid enfants enfant",
        "sons": "sons son fils boys garçons",
        "daughters": "daughters daughter filles fille girls",
        "fish": "fish goldfish poissons poisson",
        "horses": "horses horse chevaux cheval",
        "rabbits": "rabbits rabbit lapins lapin",
        "cars": "cars car voitures voiture",
        "grandchildren": "grandchildren petits-enfants",
        "pets": "pets pet animaux animal",
        "dogs": "dogs dog chiens chien",
        "cats": "cats cat chats chat",
        "siblings": "siblings",
        "brothers": "brothers frères freres",
        "sisters": "sisters sœurs soeurs",
    }.items()
    for k in ks.split()
}
_EXISTS = {
    _fold(k): v
    for v, ks in {
        "children": "son daughter kids children child fils fille enfants enfant",
        "pets": "dog cat puppy kitten chien chienne chat chatte chiot",
    }.items()
    for k in ks.split()
}
_MARITAL = {
    _fold(k): v
    for v, ks in {
        "married": "married mariée marié épousé épousée husband wife mari femme épouse époux",
        "single": "single célibataire",
        "divorced": "divorced divorcé divorcée",
        "widowed": "widowed widower widow veuf veuve",
        "engaged": "engaged fiancé fiancée",
        "separated": "separated séparé séparée",
        "in_relationship": "in a relationship en couple",
        "pacsed": "pacsé pacsée",
    }.items()
    for k in [ks] + ks.split()
    if k
}


_NUMBER_NAMES = (
    {
        w: i
        for i, w in enumerate(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
            "seventeen eighteen nineteen twenty".split()
        )
    }
    | {
        w: i
        for i, w in enumerate(
            "zéro un deux trois quatre cinq six sept huit neuf dix onze douze treize quatorze quinze seize".split()
        )
    }
    | {"vingt": 20}
)


_TENS = {
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "vingt": 20,
    "trente": 30,
    "quarante": 40,
    "cinquante": 50,
    "soixante": 60,
}


def _number(word: str) -> int | None:
    """A number written in digits or words, up to ninety-nine ('twenty-eight', 'trente-deux')."""
    word = word.casefold()
    if word.isdigit():
        return int(word)
    tens, _, unit = re.sub(r"-et-", "-", word).replace(" ", "-").partition("-")
    if tens in _TENS and unit:
        units = _NUMBER_NAMES.get(unit)
        return _TENS[tens] + units if units is not None and 0 < units < 10 else None
    return _TENS.get(word, _NUMBER_NAMES.get(word))


def _cut(span: str) -> str:
    """A value's words up to the first clause word: 'Munich with his wife' -> 'Munich'."""
    kept = []
    for token in re.split(r"(\s+|,)", span):
        if _fold(token.strip()) in _CUT_WORDS:
            break
        kept.append(token)
    return "".join(kept).strip(" ,")


def _value_words(span: str) -> frozenset:
    """A place's, employer's or person's value: its proper names if it has any ('a flat in Kreuzberg' ->
    {kreuzberg}), otherwise its content words ('the local bakery' -> {local, bakery})."""
    tokens = _tokens(span)
    names = _names(tokens, first_at_start=False)
    if names:
        return frozenset(n[:-2] if n.endswith("'s") else n for n in names)
    words = {_stem(_fold(t)) for t in tokens if _fold(t) not in _VALUE_STOP and not _fold(t).isdigit() and len(t) > 1}
    return frozenset(words)


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "s", "e"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _job(word: str) -> str:
    """One form of a job's name whatever its gender: serveuse/serveur, infirmière/infirmier, avocate/avocat."""
    for feminine, masculine in (("euse", "eur"), ("trice", "teur"), ("ienne", "ien"), ("iere", "ier"), ("ere", "er")):
        if word.endswith(feminine):
            return word[: -len(feminine)] + masculine
    return _stem(word)


def _object_head(span: str) -> str | None:
    """The object of a preference or habit, reduced to its head: 'black coffee in the morning' -> 'coffee'; past a
    gerund ('wearing a wristwatch' -> 'wristwatch') and through 'of' ('the sound of chalk' -> 'chalk')."""
    words = [_fold(t) for t in _tokens(_cut(span))]
    words = [w[2:] if w.startswith("d'") and len(w) > 2 else w for w in words]  # d'alcool
    if "of" in words[:4]:
        words = words[words.index("of") + 1 :]
    words = [w for w in words if w not in _MEASURES]
    content = [w for w in words if w not in _VALUE_STOP and w not in _TIME_WORDS and not w.isdigit() and len(w) > 1]
    if len(content) > 1 and content[0].endswith("ing"):
        content = content[1:]
    if not content:
        return None
    head = _stem(content[0])
    return _KINDS_OF.get(head, head)


_FAVOURITE_KINDS = {
    _stem(_fold(w)): kind
    for kind, words in {
        "book": "book books novel novels livre livres roman romans",
        "food": "food dish dishes meal meals plat plats repas",
        "film": "film films movie movies",
        "song": "song songs track tracks chanson chansons morceau",
        "band": "band bands group groupe groupes",
        "writer": "writer writers author authors écrivain écrivaine auteur autrice",
        "color": "color colors couleur couleurs",
        "drink": "drink drinks boisson boissons",
        "city": "city cities ville villes",
        "season": "season seasons saison saisons",
        "sport": "sport sports",
        "game": "game games jeu jeux",
    }.items()
    for w in words.split()
}
# A drink's measure says nothing of what is drunk: "a glass of wine", "une goutte d'alcool".
_MEASURES = {
    _fold(w)
    for w in "glass glasses cup cups bottle bottles pint pints drop drops verre verres tasse tasses bouteille goutte".split()
}
# One habit whatever the drink: wine, beer and spirits are alcohol.
_KINDS_OF = {
    _stem(_fold(w)): kind
    for kind, words in {
        "alcohol": "alcohol alcool wine wines vin beer beers bière whisky vodka gin rum rhum booze",
    }.items()
    for w in words.split()
}

_TIME_WORDS = {
    _fold(w)
    for w in """
    every each morning mornings evening evenings night nights day days daily weekly weekend weekends week
    often always usually sometimes regularly much lot lots very really anymore more any all kinds sort kind
    tous toutes chaque matin matins soir soirs jour jours semaine week-end souvent toujours parfois beaucoup
    vraiment plus du de la le les des un une trop peu
""".split()
}


def _date_parts(span: str) -> frozenset:
    tokens = [_fold(t) for t in _tokens(span)[:6]]
    parts = set()
    for i, token in enumerate(tokens):
        if re.fullmatch(r"(1[89]|20)\d\d", token):
            parts.add(f"y:{token}")
        elif token in _MONTH_NUMBERS and (token != "may" or i > 0 or len(tokens) > 1):
            parts.add(f"m:{_MONTH_NUMBERS[token]}")
        elif re.fullmatch(r"\d{1,2}(st|nd|rd|th|er)?", token):
            day = int(re.match(r"\d+", token).group())
            if 1 <= day <= 31:
                parts.add(f"d:{day}")
    if not any(p.startswith("m:") for p in parts):
        parts = {p for p in parts if not p.startswith("d:")}
    return frozenset(parts)


# Foods by what a diet leaves out: a vegan eats no meat, fish, eggs or dairy; keto no grain; gluten-free no wheat.
_FOOD_GROUPS = {
    "meat": "meat steak steaks chicken beef pork lamb bacon ham sausage sausages burger burgers veal turkey viande "
    "poulet boeuf bœuf porc agneau jambon saucisse saucisses veau dinde",
    "fish": "fish salmon tuna cod seafood shellfish shrimp shrimps prawns mussels oysters sardines anchovies sushi "
    "poisson poissons saumon thon cabillaud crevettes crevette moules huîtres huitres sardines",
    "egg": "egg eggs oeuf oeufs œuf œufs",
    "dairy": "cheese milk yoghurt yogurt yoghurts yogurts butter cream dairy fromage fromages lait yaourt yaourts beurre",
    "grain": "pasta rice bread potatoes noodles pizza pâtes pates riz pain baguette",
    "gluten": "pasta bread pizza noodles wheat couscous pâtes pates pain baguette blé ble",
}
FOODS: dict[str, set[str]] = {}
for _group, _words in _FOOD_GROUPS.items():
    for _word in _words.split():
        FOODS.setdefault(_fold(_word), set()).add(_group)
# A word before a food that says it is not the real thing, or none of it: "vegan cheese", "gluten-free bread".
_FOOD_QUALIFIERS = {
    _fold(w)
    for w in """
    vegan vegetarian veggie plant-based gluten-free dairy-free lactose-free meat-free fake mock imitation soy tofu
    cauliflower almond oat coconut no less without végétal végétale végétalien végane vegane sans pas jamais
    """.split()
}
# The same after the food, as French puts it: "fromage végétal", "lait d'amande", "pain sans gluten".
_FOOD_QUALIFIERS_AFTER = {
    _fold(w)
    for w in "végétal végétale végétaux vegan végane vegane sans amande soja avoine coco substitute free".split()
}
# What each diet leaves out.
DIETS = {
    _fold(w): groups
    for words, groups in (
        ("vegan végan végane vegane végétalien végétalienne", ("meat", "fish", "egg", "dairy")),
        ("vegetarian végétarien végétarienne", ("meat", "fish")),
        ("pescatarian pescetarian pescétarien pescétarienne", ("meat",)),
        ("keto ketogenic low-carb paleo paléo cétogène", ("grain",)),
        ("gluten-free coeliac celiac cœliaque coeliaque gluten", ("gluten",)),
    )
    for w in words.split()
}


def food_groups(span: str) -> set[str]:
    """The food groups a span eaten names: 'pasta or rice with most meals' -> {grain, gluten}; a food after a
    qualifier is not counted ('gluten-free bread')."""
    groups: set[str] = set()
    words = [_fold(t) for t in _tokens(_cut(span))]
    for i, word in enumerate(words):
        before, after = words[max(0, i - 2) : i], [w.removeprefix("d'") for w in words[i + 1 : i + 3]]
        if (
            word in FOODS
            and not any(w in _FOOD_QUALIFIERS for w in before)
            and _FOOD_QUALIFIERS_AFTER.isdisjoint(after)
        ):
            groups |= FOODS[word]
    return groups
