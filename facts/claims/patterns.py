"""The predicates the reader recognises, English and French: a table of (attribute, kind, pattern), tried in
order over each sentence (apostrophes made straight). The holder is read from the words before the match; `v` is
the value's span, cut at the first clause word (with, since, and, ...)."""

from __future__ import annotations

import re

from facts.claims.clashes import COUNT, DATE, LEVEL, POLAR, SINGLE, STATE
from facts.claims.words import _fold

_ADV = r"(?:(?:now|currently|still|also|recently|just|actually|finally|officially|already|full-time|part-time|maintenant|actuellement|désormais|toujours|aussi|récemment|enfin)\s+)*"
# "'s" is "is" only before what a verb takes ("she's a nurse", "he's based in"): "Paul's pilot licence" and
# "Isabel's editor" are possessives.
_BE = (
    r"(?:is|are|am|'re|'m|'s(?=\s+(?:an?|now|still|currently|also|just|recently|no|not|based|settled|living|"
    r"staying|married|single|divorced|engaged|dating|seeing|with|originally|employed|hired|working|allergic|"
    r"\d)\b))"
)

_PATTERNS: list[tuple[str, str, re.Pattern]] = []  # (attribute, kind, pattern)


def _p(attribute: str, kind: str, pattern: str) -> None:
    _PATTERNS.append((attribute, kind, re.compile(pattern, re.IGNORECASE)))


_V = r"(?P<v>[^.;!?\n]{1,80})"
# residence: a current state (lives, is based, has moved to); "used to live", "lived" are the past
_p(
    "residence",
    SINGLE,
    rf"\b(?<!used to )(?:lives|live|living|resides|reside|residing|{_BE}\s+{_ADV}(?:based|settled|living|staying)|(?:has|have|'s|'ve|just)?\s*(?:moved|relocated)(?:\s+back)?)\s+{_ADV}(?:in|to|at|near)\s+{_V}",
)
_p(
    "residence",
    SINGLE,
    r"\b(?:rents|owns|has bought|bought|shares|loue|possède|a acheté)\s+(?:an?|un|une|the|la|le)\s+(?:small\s+|big\s+|tiny\s+|new\s+|petit\s+|grand\s+)?(?:apartment|flat|house|studio|place|home|room|appartement|maison|studio|logement)\b(?P<v>[^.;!?\n]{1,80})",
)
_p("residence", SINGLE, rf"\b(?:home|hometown)\s+is\s+(?:now\s+)?(?:in\s+)?{_V}")
_p("residence", SINGLE, rf"\b(?:calls)\s+{_V}\s+home\b")
_p(
    "residence",
    SINGLE,
    rf"\b(?:habite|habitent|habites|vit|vis|vivent|réside|résident|reside|est installée?|s'est installée?|est basée?|a déménagé|ont déménagé|déménagé|vient de déménager|s'est établie?)\s+{_ADV}(?:à|a|au|aux|en|dans|près de|sur)\s+{_V}",
)
# employer
_p(
    "employer",
    SINGLE,
    rf"\b(?:works|work|working|{_BE}\s+{_ADV}working)\s+{_ADV}(?:at|for)\s+(?P<v>(?!home\b|free\b|night\b|a living\b)[^.;!?\n]{{1,80}})",
)
_p(
    "employer",
    SINGLE,
    rf"\b(?:{_BE}\s+{_ADV}(?:employed|hired)\s+(?:by|at)|(?:has|have|'s|'ve|just)?\s*(?:joined|been hired by|started (?:a (?:new )?job|working) at|signed with))\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})",
)
_p(
    "employer",
    SINGLE,
    rf"\b(?:{_BE}\s+{_ADV}an?|works as(?:\s+an?)?)\s+[\w -]{{2,40}}?\s+(?:at|for|with)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})",
)
_p(
    "employer",
    SINGLE,
    rf"\b(?:est|suis|sont|travaille comme)\s+{_ADV}(?:[\w'-]+\s+){{1,3}}?(?:chez|pour)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})",
)
_p(
    "employer",
    SINGLE,
    r"\b(?:has been|'s been|is now|'s now|is still)\s+(?:with|at)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{0,60})",
)
_p(
    "employer",
    SINGLE,
    r"\b(?:(?:has|have|'s|'ve)\s+been\s+(?:employed|hired|working)\s+(?:by|at|for)|started\s+(?:a\s+(?:new\s+)?job\s+)?(?:at|with)|(?:employer|workplace)\s+is\s+(?:now\s+)?|(?:employeur|boîte)\s+(?:est|c'est)\s+(?:maintenant\s+|désormais\s+)?|(?:ai|a|ont|as)\s+commencé\s+(?:à\s+(?:travailler|bosser)\s+)?chez)\s*(?P<v>(?-i:[A-Z])[^.;!?\n]{0,60})",
)
_p(
    "employer",
    SINGLE,
    rf"\b(?:travaille|travaillent|travailles|bosse)\s+{_ADV}(?:chez|pour|à la|au sein de|dans l'entreprise)\s+{_V}",
)
_p(
    "employer",
    SINGLE,
    rf"\b(?:est|sont)\s+{_ADV}(?:employée?s?|salariée?s?|embauchée?s?|recrutée?s?)\s+(?:par|chez|à|au|de|d')\s*{_V}",
)
_p(
    "employer",
    SINGLE,
    rf"\b(?:a|ont|vient de)\s+{_ADV}(?:rejoint|rejoindre|intégré|intégrer)\s+(?:l'équipe de\s+|la société\s+|l'entreprise\s+)?(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,60}})",
)
# age
_AGE = (
    r"(?:\d{1,3}|(?:twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)(?:[- ](?:one|two|three|four|five|six|"
    r"seven|eight|nine))?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    r"sixteen|seventeen|eighteen|nineteen|(?:vingt|trente|quarante|cinquante|soixante)(?:-(?:et-un|deux|trois|"
    r"quatre|cinq|six|sept|huit|neuf))?|un|deux|trois|quatre|cinq|six|sept|huit|neuf|dix|onze|douze|"
    r"treize|quatorze|quinze|seize)"
)
_p("age", SINGLE, rf"\b{_BE}\s+{_ADV}(?:now\s+)?(?P<v>{_AGE})(?:\s+years?\s+old|\s+yo\b|\s*(?=[.;!?,]|$))")
_p("age", SINGLE, rf"\b(?:turned|is turning|turning|just turned|aged|age is|age:)\s+(?P<v>{_AGE})\b")
_p(
    "age",
    SINGLE,
    r"\b(?:celebrated|celebrating|is celebrating)\s+(?:my|his|her|their)\s+(?P<v>\d{1,3})(?:st|nd|rd|th)\s+birthday",
)
_p(
    "age",
    SINGLE,
    rf"\b(?<!y )(?:a|ai|as|avons|ont|vient d'avoir|a eu|fête ses|a fêté ses|fêté mes|vient de fêter ses)\s+{_ADV}(?P<v>{_AGE})\s+ans\b",
)
_p("age", SINGLE, r"\b(?:soufflé|souffler|soufflera)\s+(?:ses|mes|leurs)\s+(?P<v>\d{1,3})\s+bougies")
_p("age", SINGLE, r"\bâgée?\s+de\s+(?P<v>\d{1,3})\s+ans\b")
_p("age", SINGLE, rf"\b(?:as|being|comme)\s+(?:an?|un|une)\s+(?P<v>{_AGE})-year-old\b")
_p("age", SINGLE, r"\bà\s+(?P<v>\d{1,3})\s+ans\s+passés\b")
# "in his early twenties": every age of the decade's third
_p(
    "age",
    SINGLE,
    r"\bin\s+(?:his|her|their|my|our)\s+(?P<third>early|mid|late)?[- ]?(?P<v>twenties|thirties|forties|fifties|sixties|seventies|eighties)\b",
)
_p("birth", DATE, r"\bje\s+suis\s+de\s+(?P<v>(?:19|20)\d\d)\b(?!\s+(?:à|au))")  # "moi, je suis de 1988"
# birth
_p("birth", DATE, r"\b(?:was|were|is|'s)?\s*born\s+(?:on|in)\s+(?P<v>[^.;!?\n]{1,40})")
_p(
    "birth",
    DATE,
    r"\b(?<!wedding )(?:birthday|birth date|date of birth|d\.o\.b\.?)\s+(?:is\s+)?(?:on\s+)?(?P<v>[^.;!?\n]{1,40})",
)
_p("birth", DATE, r"\b(?:(?:est|suis|sont)\s+)?(?:née?s?)\s+(?:le|en)\s+(?P<v>[^.;!?\n]{1,40})")
_p(
    "birth",
    DATE,
    r"\b(?:anniversaire(?!\s+de\s+mariage)|date de naissance)(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?\s+(?:est|tombe)\s+(?:le\s+|en\s+)?(?P<v>[^.;!?\n]{1,40})",
)
_p("birthplace", SINGLE, r"\b(?:was|were|is|'s)?\s*born\s+(?:and raised\s+)?in\s+(?P<v>(?!\d)[^.;!?\n\d]{1,60})")
_p(
    "birthplace",
    SINGLE,
    r"\b(?:(?:est|suis|sont)\s+)?(?:née?s?|originaire)\s+(?:à|a|au|en|de|d')\s*(?P<v>(?!\d)[^.;!?\n\d]{1,60})",
)
_p(
    "birthplace",
    SINGLE,
    r"\b(?:birthplace|place of birth|lieu de naissance)\s+(?:is|est)\s+(?P<v>(?-i:[A-Z])[^.;!?\n\d]{0,60})",
)
_p("birthplace", SINGLE, rf"\b(?:{_BE}\s+originally from|(?:comes|come) from)\s+(?P<v>(?-i:[A-Z])[^.;!?\n\d]{{0,60}})")
# partner and marital state
_p(
    "partner",
    SINGLE,
    rf"\b(?:{_BE}\s+{_ADV}(?:married|engaged|wed)\s+to|{_BE}\s+{_ADV}(?:dating|seeing|with)|(?:has|have)\s+(?:been\s+)?(?:married|dating))\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})",
)
_p(
    "partner",
    SINGLE,
    r"\b(?:wife|husband|partner|spouse|girlfriend|boyfriend|fiancée?)(?:'s name)?(?:\s*,|\s+is called|\s+is named|\s+named|\s+is|(?=\s))\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{0,40})",
)
_p(
    "partner",
    SINGLE,
    rf"\b(?:{_BE}\s+{_ADV}(?:dating|seeing|engaged to|married to|in a relationship with)|(?:has|have) a (?:girlfriend|boyfriend|partner))\s+(?:someone\s+|a (?:man|woman|guy|girl)\s+)?(?:named|called)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})",
)
_p("partner", SINGLE, rf"\b(?:sort|sors|sortent)\s+{_ADV}avec\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})")
_p(
    "partner",
    SINGLE,
    rf"\b(?:est|sont|suis)\s+{_ADV}(?:mariée?|fiancée?|en couple|pacsée?)\s+(?:à|a|avec)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{{0,40}})",
)
_p(
    "partner",
    SINGLE,
    r"\b(?:femme|mari|épouse|époux|compagne|compagnon|copine|copain|conjointe?)(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?(?:\s*,|\s+s'appelle|\s+est)\s+(?P<v>(?-i:[A-Z])[^.;!?\n]{0,40})",
)
_p(
    "marital",
    STATE,
    rf"\b{_BE}\s+{_ADV}(?:not\s+)?(?P<v>married|single|divorced|widowed|engaged|separated|in a relationship)\b",
)
_p(
    "marital",
    STATE,
    rf"\b(?:est|suis|sont)\s+{_ADV}(?P<v>mariée?|célibataire|divorcée?|veuf|veuve|fiancée?|séparée?|pacsée?|en couple)\b",
)
_p(
    "marital",
    STATE,
    rf"\b(?:{_BE}\s+(?:an?\s+)?(?P<v>widower|widow)|(?:has|have)\s+never\s+(?:been\s+)?(?P<never>married)|ne s'est jamais (?P<jamais>mariée?))\b",
)
_p("marital", STATE, r"\b(?:got|has got|have got|just got|recently got)\s+(?P<v>married|divorced|engaged)\b")
_p("marital", STATE, r"\b(?<!not )(?<!never )(?:(?:has|have|a|ai|ont)\s+)?(?P<v>married|épousée?)\s+(?=(?-i:[A-Z]))")
_p(
    "partner",
    SINGLE,
    r"\b(?<!not )(?<!never )(?<!is )(?<!was )(?<!got )(?:(?:has|have|a|ai|ont)\s+)?(?:married|épousée?)\s+(?P<v>(?-i:[A-Z])[\w-]+)",
)
_p(
    "marital",
    STATE,
    r"\b(?:my|our|mon|ma|notre)\s+(?P<v>husband|wife|mari|femme|épouse|époux)\b(?!\s*'s)(?<!ex-husband)",
)
# counts: children, kids, sons, daughters, pets, dogs, cats
_NUMBER = r"(?:un seul|une seule|a single|only one|just one|no|zero|one|two|three|four|five|six|seven|eight|nine|ten|a|an|\d{1,2}|aucun|aucune|pas d'|pas de|un|une|deux|trois|quatre|cinq|six|sept|huit|neuf|dix)"
_COUNTED = (
    r"(?:children|child|kids|kid|sons|son|daughters|daughter|boys|girls|garçons|grandchildren|pets|pet|dogs|dog|cats|cat|siblings|"
    r"brothers|sisters|goldfish|fish|horses|horse|rabbits|rabbit|hamsters|hamster|birds|bird|chickens|cars|car|"
    r"enfants|enfant|fils|filles|fille|petits-enfants|animaux|animal|chiens|chien|chats|chat|frères|sœurs|soeurs|"
    r"poissons|poisson|chevaux|cheval|lapins|lapin|oiseaux|oiseau|poules|voitures|voiture)"
)
_p(
    "count",
    COUNT,
    rf"\b(?:my|his|her|their|our|mes|ses|leurs|nos)\s+(?P<v>two|three|four|five|six|seven|eight|nine|ten|\d{{1,2}}|deux|trois|quatre|cinq|six|sept|huit|neuf|dix)\s+(?P<n>{_COUNTED})\b",
)
_p("count", COUNT, rf"\b(?:n'a|n'ai|n'ont)\s+qu'(?P<v>un|une)\s+(?P<n>{_COUNTED})\b")
_p(
    "count",
    COUNT,
    rf"\b(?:has|have|'s got|'ve got|has got|have got|now has|keeps|keep|owns|own|adopted|has adopted|just adopted|a adopté|ai adopté)\s+(?P<v>{_NUMBER})\s+(?:(?:young|little|grown|adult|small|lovely|beautiful|wonderful)\s+)?(?P<n>{_COUNTED})\b",
)
_p(
    "count",
    COUNT,
    rf"\b(?:doesn't have|does not have|don't have|do not have|has never had|never had)\s+(?P<v>any)\s+(?P<n>{_COUNTED})\b",
)
_p("count", COUNT, r"\b(?:doesn't|does not|don't|do not)\s+(?:own|have)\s+(?P<none>a|an)\s+(?P<n>car|dog|cat|pet)\b")
_p("count", COUNT, rf"\b(?:a|ai|as|avons|ont)\s+(?P<v>{_NUMBER})\s*(?P<n>{_COUNTED})\b")
_p("count", COUNT, rf"\b(?:n'a|n'ai|n'ont)\s+(?P<v>pas|aucun|plus|jamais eu)\s+(?:d'|de\s+|d')?(?P<n>{_COUNTED})\b")
_p(
    "count",
    COUNT,
    rf"\b(?:no longer has|no longer have|doesn't have|don't have)\s+(?P<v>any)\s+(?P<n>{_COUNTED})\s+(?:any\s*more|now)\b",
)
_p(
    "count",
    COUNT,
    rf"\b(?:all|both)\s+(?P<v>{_NUMBER})?\s*(?:of\s+)?(?P<h>(?-i:[A-Z])[\w-]*'s|my|his|her|their|our)\s+(?P<n>{_COUNTED})\b",
)
_p(
    "count",
    COUNT,
    r"\b(?:le|la|les)\s+(?P<exists>fils|fille|filles|enfants|enfant|chien|chienne|chat|chatte)\s+(?P<h>(?:de|d')\s*(?:l'utilisateur|l'utilisatrice|(?-i:[A-Z])[\w-]+))",
)
_p("count", COUNT, r"\b(?P<h>(?:the\s+)?user's)\s+(?P<exists>son|daughter|kids|children|child|dog|cat)\b")
# "my son", "sa fille", "Diego walks his dog": there are children, or pets
_p(
    "count",
    COUNT,
    r"\b(?P<h>my|his|her|their|our|mon|ma|mes|son|sa|ses|notre|nos|leur|leurs|(?-i:[A-Z])[\w-]*'s)\s+(?:(?:eldest|oldest|youngest|little|baby|older|younger|new|aînée?|cadette?|petite?|grande?|plus jeune|benjamine?)\s+)?(?P<exists>son|daughter|kids|children|child|fils|fille|enfants|enfant|dog|cat|puppy|kitten|chien|chienne|chat|chatte|chiot)\b",
)
_p(
    "count",
    COUNT,
    rf"\b(?:father|mother|dad|mom|mum|parent|père|mère|papa|maman)\s+(?:of|de)\s+(?P<v>{_NUMBER})(?:\s+(?P<n>{_COUNTED}))?\b",
)
# occupation
_p(
    "occupation",
    SINGLE,
    r"\b(?:works|work|working)\s+(?:full-time\s+|part-time\s+|full time\s+|part time\s+)?as\s+(?:an?\s+)?(?P<v>[^.;!?\n]{1,50})",
)
_p(
    "occupation",
    SINGLE,
    r"\b(?:occupation|job|profession|métier)\s*(?::|is|est)\s*(?:an?\s+|un\s+|une\s+)?(?P<v>(?=\S)(?!(?:il|elle|he|she|they|je|j'|i)\b)[^.;!?\n]{1,50})",
)
_p("occupation", SINGLE, rf"\b(?:travaille|travaillent)\s+{_ADV}comme\s+(?P<v>[^.;!?\n]{{1,50}})")
_JOBS = """
    nurse teacher doctor physician engineer developer programmer lawyer attorney accountant architect designer chef
    cook waiter waitress pilot student journalist writer author artist musician photographer pharmacist dentist vet
    veterinarian firefighter policeman policewoman electrician plumber carpenter mechanic farmer baker butcher
    cashier consultant analyst researcher scientist professor lecturer librarian translator salesman saleswoman
    receptionist secretary therapist psychologist surgeon paramedic midwife barista bartender hairdresser retired
    unemployed freelancer entrepreneur nanny cleaner caregiver tutor coach trainer actor actress dancer singer
    infirmier infirmière professeur prof enseignant enseignante médecin docteur ingénieur ingénieure développeur
    développeuse avocat avocate comptable architecte cuisinier cuisinière serveur serveuse pilote étudiant étudiante
    journaliste écrivain écrivaine auteur autrice artiste musicien musicienne photographe pharmacien pharmacienne
    dentiste vétérinaire pompier policier policière électricien électricienne plombier menuisier mécanicien
    agriculteur agricultrice boulanger boulangère boucher bouchère caissier caissière consultante chercheur
    chercheuse scientifique bibliothécaire traducteur traductrice vendeur vendeuse secrétaire thérapeute psychologue
    chirurgien chirurgienne sage-femme chauffeur barman coiffeur coiffeuse retraité retraitée chômeur chômeuse
    entrepreneuse nounou aide-soignant aide-soignante kiné kinésithérapeute instituteur institutrice comédien
    comédienne danseur danseuse chanteur chanteuse notaire paralegal banker plombière graphiste graphic
    designer nurse's ux copywriter editor manager director ceo cto salesperson realtor estate agent postman
    postwoman courier soldier officer sailor fisherman miner welder surveyor optician radiologist
    physiotherapist physio psychiatrist counsellor counselor social worker banquier banquière directeur
    directrice rédacteur rédactrice commercial commerciale facteur factrice militaire marin pêcheur opticien
    opticienne radiologue psychiatre éducateur éducatrice agent immobilier ouvrier ouvrière gendarme
""".split()
_JOB = "|".join(sorted((re.escape(j) for j in _JOBS), key=len, reverse=True))
_p(
    "occupation",
    SINGLE,
    rf"\b(?:est devenue?|{_BE}|est|suis|sont|became|has become|now works as|works as)\s+{_ADV}(?:an?\s+|un\s+|une\s+)?(?P<v>(?:[\w-]+\s+){{0,2}}?(?:{_JOB}))\b(?!\s+(?:at heart|by training|de formation))",
)

_WEEKDAY = (
    r"(?:mondays?|tuesdays?|wednesdays?|thursdays?|fridays?|saturdays?|sundays?|lundis?|mardis?|mercredis?|"
    r"jeudis?|vendredis?|samedis?|dimanches?)"
)
_p(
    "schedule",
    SINGLE,
    rf"\b(?P<n>[\w-]+\s+(?:class|classes|lesson|lessons|practice|training|session|sessions|club))\s+(?:is\s+|are\s+|takes place\s+)?{_ADV}(?:now\s+)?(?:on|every)\s+(?P<v>{_WEEKDAY})",
)
_p(
    "schedule",
    SINGLE,
    rf"\b(?:cours|séance|séances|entraînement|entraînements)\s+(?P<n>(?:de|d')\s*[\w-]+)\s*,?\s+(?:c'est|est|a lieu|ont lieu)\s+(?:maintenant\s+|désormais\s+)?(?:le|les|chaque)\s+(?P<v>{_WEEKDAY})",
)

_p(
    "schedule",
    SINGLE,
    rf"\b(?:have|has|j'ai|ai|a)\s+(?P<n>[\w-]+(?:\s+(?:class|lesson|practice|training))?)\s+(?:on|every|le|les|chaque)\s+(?P<v>{_WEEKDAY})",
)
# studies: one subject at a time
_p(
    "studies",
    SINGLE,
    r"\b(?:studies|is studying|majors in|is majoring in|étudie|étudies|fait des études de|fait des études d')\s+(?P<v>[^.;!?\n]{1,50})",
)

_p(
    "vehicle",
    SINGLE,
    r"\b(?:drives|drive|is driving|conduit|conduis|roule en|roulent en)\s+(?:an?|une?|the|la|le|sa|son|his|her|my|ma|mon)?\s*(?P<v>[^.;!?\n]{1,40})",
)

_p(
    "allergy",
    POLAR,
    rf"\b(?P<pos>{_BE}\s+{_ADV}(?:severely\s+|very\s+|mildly\s+)?allergic\s+to|(?:est|suis|sont)\s+{_ADV}(?:très\s+)?allergiques?\s+(?:à|au|aux|a))\s+(?P<v>[^.;!?\n]{{1,40}})",
)
_p(
    "allergy",
    POLAR,
    rf"\b(?P<neg>(?:{_BE}\s+not|isn't|aren't|'m not|(?:est|suis|sont)\s+(?:pas|plus))\s+allergi(?:c|que|ques))\b(?!\s+(?:to|à|au|aux))(?P<v>)",
)
_p(
    "allergy",
    POLAR,
    rf"\b(?P<neg>(?:{_BE}\s+not|'m not|isn't)\s+allergic\s+to\s+(?:anything|any\s+\w+)|(?:n'a|n'ai|a|ai|j'ai)\s+jamais\s+eu\s+(?:la moindre|d'|aucune|une)\s*allergies?|(?:no|aucune)\s+(?:known\s+|food\s+|alimentaire\s+)?allerg(?:y|ies|ie)\b|(?:has|have)\s+no\s+(?:known\s+)?allerg(?:y|ies)|(?:doesn't|does not|don't)\s+have\s+any\s+allerg(?:y|ies)|n'a\s+(?:aucune|pas d')\s*allergies?|n'ai\s+(?:aucune|pas d')\s*allergies?)\b(?P<v>)",
)

# favourites
_p(
    "favourite",
    SINGLE,
    r"\b(?P<n>(?:favou?rite|preferred)\s+[\w-]+(?:\s+[\w-]+){0,3}?)\s+(?:is|are|has become|is now)\s+(?P<v>[^.;!?\n]{1,50})",
)
_p(
    "favourite",
    SINGLE,
    r"\b(?P<n>[\w-]+(?:\s+[\w-]+)?\s+(?:préférée?s?|favorie?s?))(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?\s*,?\s+(?:est|sont|c'est|reste)\s+(?P<v>[^.;!?\n]{1,50})",
)
# preferences and habits: a yes or a no about one object
_LIKE_POS = r"(?:likes|like|loves|love|enjoys|enjoy|adores|adore|is (?:a (?:big |huge )?fan of|fond of|into|crazy about)|'s (?:a (?:big |huge )?fan of|into)|am (?:a (?:big |huge )?fan of|into)|aime|aimes|aiment|adore|adores|adorent|apprécie|raffole de|est fan de|est fan d')"
_LIKE_NEG = r"(?:(?<!n')(?:aime|aimes|supporte|supportes)\s+(?:plus|pas)(?!\s+que)|dislikes|dislike|hates|hate|detests|can't stand|cannot stand|can't bear|cannot bear|can't listen to|can't watch|can't eat|doesn't like|does not like|don't like|do not like|doesn't enjoy|does not enjoy|don't enjoy|no longer likes|no longer enjoys|doesn't love|(?:is|'s|am) not (?:a fan of|fond of|into)|(?:is|'s) no longer (?:a fan of|into)|n'aime pas|n'aime plus|n'aime guère|déteste|détestent|détestes|ne supporte pas|ne supporte plus|n'apprécie pas|n'apprécie plus|a horreur des|a horreur du|a horreur de|a horreur d')"
_p("likes", POLAR, rf"\b(?P<neg>{_LIKE_NEG})\s+(?P<v>[^.;!?\n]{{1,50}})")
_p("likes", POLAR, rf"\b(?P<pos>{_LIKE_POS})\s+(?P<v>[^.;!?\n]{{1,50}})")

_HABIT_VERBS = {  # folded verb form -> the habit's verb
    "drinks": "drink",
    "drink": "drink",
    "drinking": "drink",
    "boit": "drink",
    "bois": "drink",
    "boire": "drink",
    "smokes": "smoke",
    "smoke": "smoke",
    "smoking": "smoke",
    "fume": "smoke",
    "fumes": "smoke",
    "fumer": "smoke",
    "eats": "eat",
    "eat": "eat",
    "eating": "eat",
    "mange": "eat",
    "manges": "eat",
    "manger": "eat",
    "plays": "play",
    "play": "play",
    "playing": "play",
    "joue": "play",
    "jouer": "play",
    "runs": "run",
    "run": "run",
    "running": "run",
    "court": "run",
    "courir": "run",
    "goes": "go",
    "go": "go",
    "going": "go",
    "va": "go",
    "aller": "go",
    "drives": "drive",
    "drive": "drive",
    "driving": "drive",
    "conduit": "drive",
    "conduire": "drive",
    "cycles": "cycle",
    "cycling": "cycle",
    "bikes": "cycle",
    "biking": "cycle",
    "swims": "swim",
    "swim": "swim",
    "swimming": "swim",
    "nage": "swim",
    "nager": "swim",
    "practises": "practise",
    "practices": "practise",
    "practising": "practise",
    "practicing": "practise",
    "pratique": "practise",
    "pratiquer": "practise",
    "uses": "use",
    "use": "use",
    "using": "use",
    "utilise": "use",
    "utiliser": "use",
    "takes": "take",
    "take": "take",
    "taking": "take",
    "prend": "take",
    "prendre": "take",
    "walks": "walk",
    "walk": "walk",
    "walking": "walk",
    "meditates": "meditate",
    "meditate": "meditate",
    "meditating": "meditate",
    "médite": "meditate",
    "méditer": "meditate",
    "cooks": "cook",
    "cook": "cook",
    "cooking": "cook",
    "cuisine": "cook",
    "cuisiner": "cook",
    "reads": "read",
    "read": "read",
    "reading": "read",
    "lit": "read",
    "lire": "read",
    "watches": "watch",
    "watch": "watch",
    "watching": "watch",
    "regarde": "watch",
    "regarder": "watch",
    "vapes": "smoke",
    "vaping": "smoke",
    "played": "play",
    "smoked": "smoke",
    "drunk": "drink",
    "eaten": "eat",
    "cycled": "cycle",
    "swum": "swim",
    "ran": "run",
    "jogs": "run",
    "jogging": "run",
    "jog": "run",
    "nagé": "swim",
    "fumé": "smoke",
    "bu": "drink",
    "joué": "play",
    "couru": "run",
    "vélo": "cycle",
    "velo": "cycle",
    "bike": "cycle",
    "bicycle": "cycle",
}
# Verbs whose habit is the verb itself, whatever follows: "cycles to work" and "no longer cycles" are one habit.
_INTRANSITIVE = {"smoke", "run", "cycle", "swim", "walk", "meditate"}
_HABIT_VERB = "|".join(sorted(_HABIT_VERBS, key=len, reverse=True))
_HABIT_NEG = (
    r"(?:n'(?:a|ai|as|ont|avons)\s+(?:jamais|plus|pas)|(?:haven't|hasn't|has not|have not|never|no longer)\s+touch(?:ed|es)?|(?:n'a|n'ai|n'ont)\s+(?:plus|jamais|pas)\s+touché\s+(?:à|au|aux)|doesn't|does not|don't|do not|never|no longer|hardly ever|hasn't|haven't|has not|have not|has stopped|have stopped|stopped|has quit|"
    r"have quit|quit|has given up|have given up|gave up|gives up|given up|has cut out|cut out|"
    r"ne|n'|a arrêté de|a arrêté d'|ont arrêté de|arrêté de|a arrêté|ai arrêté|a cessé de|a renoncé à|ne \w+ plus|ne \w+ jamais)"
)
_PLAIN_NEGATIONS = {
    "doesn't",
    "does not",
    "don't",
    "do not",
    "never",
    "no longer",
    "hardly ever",
    "ne",
    "n'",
    "hasn't",
    "haven't",
    "has not",
    "have not",
}
_p(
    "habit",
    POLAR,
    rf"\b(?P<neg>{_HABIT_NEG})\s+(?:(?:drinking|eating)\s+)?(?P<verb>{_HABIT_VERB})?\s*(?:plus\s+|jamais\s+|pas\s+|any\s*more\s+)?(?P<v>[^.;!?\n]{{0,40}})",
)
_p("habit", POLAR, rf"\b(?P<pos>(?P<verb>{_HABIT_VERB}))\b\s*(?P<v>[^.;!?\n]{{0,40}})")
# diet as a habit of eating meat
_p(
    "diet",
    POLAR,
    rf"\b(?P<neg>(?:{_BE}|est|suis|sont|became|has become|devenue?)\s+(?:now\s+|a\s+|an\s+|un\s+|une\s+|strictly\s+|fully\s+)*(?:vegetarian|vegan|végétarienne?|végétalienne?|végane?|vegane?|pescatarian|pescetarian|pescétarienne?))\b(?P<v>)",
)
_p(
    "diet",
    POLAR,
    rf"\b(?P<pos>(?:{_BE}|est|suis)\s+(?:no longer|not|not a|plus|pas|n'est plus|n'est pas)\s+(?:a\s+|an\s+)?(?:vegetarian|vegan|végétarienne?|végane?))\b(?P<v>)",
)
_p(
    "diet",
    POLAR,
    r"\b(?P<pos>(?:eats|eat|is eating|started eating|mange|mangent|mange régulièrement|mange souvent|eats regularly|regularly eats|often eats|remange|a recommencé à manger|remis à manger|s'est remise? à manger|me suis remise? à manger)\s+(?:meat|de la viande|viande|steak|chicken|beef|pork|du poulet|du bœuf|du boeuf|everything|anything|de tout))\b(?P<v>)",
)
_p(
    "diet",
    POLAR,
    r"\b(?P<neg>(?:doesn't|does not|don't|never|no longer|has stopped|stopped|gave up)\s+(?:eat|eats|eating)\s+(?:meat|any meat)|ne mange (?:plus|pas|jamais)\s+(?:de\s+)?viande|a arrêté (?:de manger )?(?:la )?viande)\b(?P<v>)",
)
_p(
    "diet",
    POLAR,
    r"\b(?P<neg>(?:follows|follow|is on|'s on|am on|'m on|eats|eat|suit|suis|est|fait|mange)\s+(?:an?\s+|un\s+|une\s+|the\s+)?(?:strict\s+|strictly\s+|strictement\s+|régime\s+)?)(?P<diet>keto|ketogenic|low-carb|gluten-free|paleo|paléo|cétogène|sans gluten)\b(?P<v>)",
)
_p(
    "diet",
    POLAR,
    r"\b(?P<neg>(?:{_BE}|est|suis|sont)\s+)(?P<diet>coeliac|celiac|cœliaque|coeliaque|intolérante? au gluten|gluten intolerant)\b(?P<v>)".replace(
        "{_BE}", _BE
    ),
)
# nationality
_NATIONALITY_WORDS = {
    "fr": "french français française",
    "de": "german allemand allemande",
    "es": "spanish espagnol espagnole",
    "it": "italian italien italienne",
    "gb": "british britannique english anglais anglaise",
    "us": "american américain américaine",
    "ca": "canadian canadien canadienne",
    "be": "belgian belge",
    "ch": "swiss suisse",
    "pt": "portuguese portugais portugaise",
    "nl": "dutch néerlandais néerlandaise",
    "jp": "japanese japonais japonaise",
    "cn": "chinese chinois chinoise",
    "br": "brazilian brésilien brésilienne",
    "ma": "moroccan marocain marocaine",
    "dz": "algerian algérien algérienne",
    "pl": "polish polonais polonaise",
    "ie": "irish irlandais irlandaise",
    "se": "swedish suédois suédoise",
    "in": "indian indien indienne",
    "mx": "mexican mexicain mexicaine",
    "au": "australian australien australienne",
    "dk": "danish dane danois danoise",
    "no": "norwegian norvégien norvégienne",
    "fi": "finnish finlandais finlandaise",
    "at": "austrian autrichien autrichienne",
    "gr": "greek grec grecque",
    "tr": "turkish turc turque",
    "ru": "russian russe",
    "ua": "ukrainian ukrainien ukrainienne",
    "tn": "tunisian tunisien tunisienne",
    "sn": "senegalese sénégalais sénégalaise",
    "ar": "argentinian argentine argentin",
    "kr": "korean coréen coréenne",
    "vn": "vietnamese vietnamien vietnamienne",
    "ng": "nigerian nigérian nigériane",
    "lb": "lebanese libanais libanaise",
    "eg": "egyptian égyptien égyptienne",
    "co": "colombian colombien colombienne",
    "cz": "czech tchèque",
    "hu": "hungarian hongrois hongroise",
    "ro": "romanian roumain roumaine",
    "scot": "scottish écossais écossaise",
    "nz": "new_zealander néo-zélandais néo-zélandaise",
    "sg": "singaporean singapourien singapourienne",
    "my": "malaysian malaisien malaisienne",
    "id": "indonesian indonésien indonésienne",
    "ph": "filipino filipina philippin philippine",
    "th": "thai thaïlandais thaïlandaise",
    "pk": "pakistani pakistanais pakistanaise",
    "ir": "iranian iranien iranienne",
    "il": "israeli israélien israélienne",
    "za": "south_african sud-africain sud-africaine",
    "cl": "chilean chilien chilienne",
    "pe": "peruvian péruvien péruvienne",
    "ve": "venezuelan vénézuélien vénézuélienne",
    "cu": "cuban cubain cubaine",
    "ht": "haitian haïtien haïtienne",
    "ci": "ivorian ivoirien ivoirienne",
    "cm": "cameroonian camerounais camerounaise",
    "gh": "ghanaian ghanéen ghanéenne",
    "ke": "kenyan kényan kényane",
    "et": "ethiopian éthiopien éthiopienne",
    "lu": "luxembourgish luxembourgeois luxembourgeoise",
    "is": "icelandic islandais islandaise",
    "hr": "croatian croate",
    "rs": "serbian serbe",
    "bg": "bulgarian bulgare",
    "sk": "slovak slovaque",
    "si": "slovenian slovène",
    "lt": "lithuanian lituanien lituanienne",
    "lv": "latvian letton lettone",
    "ee": "estonian estonien estonienne",
    "al": "albanian albanais albanaise",
    "wal": "welsh gallois galloise",
    "qc": "québécois québécoise",
}
# "new_zealander": one name of two words ("new" alone is no nationality)
_NATIONALITIES = {_fold(w.replace("_", " ")): c for c, words in _NATIONALITY_WORDS.items() for w in words.split()}
_NATIONALITY = "|".join(
    sorted((w.replace("_", " ") for words in _NATIONALITY_WORDS.values() for w in words.split()), key=len, reverse=True)
)
_p(
    "nationality",
    SINGLE,
    rf"\b(?:{_BE}|est|suis|became|has become|est devenue?)\s+{_ADV}(?:a\s+|an\s+)?(?P<v>{_NATIONALITY})(?:\s+(?:citizen|national|citoyen|citoyenne))?\b(?!\s+(?:food|cuisine|wine|film|movie|music|teacher|course|class))",
)
_p(
    "nationality",
    SINGLE,
    rf"\b(?:holds|has|have|a)\s+(?:only\s+)?(?:an?\s+|la\s+|un\s+)?(?P<v>{_NATIONALITY})\s+(?:citizenship|nationality|passport|passeport)",
)
_p("nationality", SINGLE, rf"\bnationalité\s+(?P<v>{_NATIONALITY})\b")
_p(
    "nationality",
    SINGLE,
    rf"\b(?:has|have|a)\s+(?:the\s+|la\s+)?(?:nationalité\s+)?(?P<v>{_NATIONALITY})\s+(?:nationality|citizenship)?",
)

# native language: one at a time, and it does not change ("English was my first language" still holds)
_LANGUAGE_WORDS = {
    "en": "english anglais",
    "fr": "french français",
    "es": "spanish espagnol castillan",
    "de": "german allemand",
    "it": "italian italien",
    "pt": "portuguese portugais",
    "ar": "arabic arabe",
    "ru": "russian russe",
    "el": "greek grec",
    "pl": "polish polonais",
    "cs": "czech tchèque",
    "sk": "slovak slovaque",
    "tl": "tagalog filipino",
    "zh": "mandarin chinese chinois",
    "yue": "cantonese cantonais",
    "ja": "japanese japonais",
    "ko": "korean coréen",
    "hi": "hindi",
    "ur": "urdu ourdou",
    "bn": "bengali bengalese",
    "pa": "punjabi pendjabi",
    "ta": "tamil tamoul",
    "te": "telugu télougou",
    "tr": "turkish turc",
    "nl": "dutch néerlandais flemish flamand",
    "sv": "swedish suédois",
    "no": "norwegian norvégien",
    "da": "danish danois",
    "fi": "finnish finnois",
    "hu": "hungarian hongrois",
    "ro": "romanian roumain",
    "uk": "ukrainian ukrainien",
    "sr": "serbian serbe",
    "hr": "croatian croate",
    "bg": "bulgarian bulgare",
    "he": "hebrew hébreu",
    "fa": "persian farsi persan",
    "sw": "swahili",
    "yo": "yoruba",
    "ig": "igbo",
    "ha": "hausa haoussa",
    "am": "amharic amharique",
    "wo": "wolof",
    "ber": "berber berbère tamazight kabyle",
    "ca": "catalan",
    "eu": "basque",
    "br": "breton",
    "oc": "occitan",
    "vi": "vietnamese vietnamien",
    "th": "thai thaï",
    "ms": "malay malais",
    "id": "indonesian indonésien",
    "ln": "lingala",
    "ht": "creole créole",
    "sq": "albanian albanais",
    "hy": "armenian arménien",
    "ka": "georgian géorgien",
    "lt": "lithuanian lituanien",
    "lv": "latvian letton",
    "et": "estonian estonien",
    "is": "icelandic islandais",
    "ga": "irish irlandais gaelic gaélique",
    "cy": "welsh gallois",
}
_LANGUAGES = {_fold(w): c for c, words in _LANGUAGE_WORDS.items() for w in words.split()}
_LANGUAGE = "|".join(sorted((w for words in _LANGUAGE_WORDS.values() for w in words.split()), key=len, reverse=True))
_NATIVE = r"(?:native language|native tongue|mother tongue|first language|langue maternelle|première langue)"
_OWNER = r"(?P<h>my|his|her|their|our|the user's|user's|(?-i:[A-Z])[\w-]*'s|ma|sa|leur|notre)"
# "is actually Cape Verdean creole": adverbs, then up to two capitalised words before the language
_p(
    "native_language",
    SINGLE,
    rf"\b{_OWNER}\s+{_NATIVE}\s+(?:is|was|has always been)\s+{_ADV}(?:(?-i:[A-Z])[\w-]+\s+){{0,2}}(?P<v>{_LANGUAGE})\b",
)
_p(
    "native_language",
    SINGLE,
    rf"\b(?:the\s+|le\s+|l')?(?P<v>{_LANGUAGE})\s+(?:is|was|est|reste)\s+{_OWNER}\s+(?:only\s+|real\s+|true\s+|seule\s+|vraie\s+|unique\s+)?{_NATIVE}",
)
_p(
    "native_language",
    SINGLE,
    rf"\b{_NATIVE}(?P<h>\s+(?:de|d'|of)\s*[\w' -]{{1,40}}?)?\s*,?\s+(?:est|c'est|reste|is|was)\s+(?:le\s+|l'|la\s+)?(?P<v>{_LANGUAGE})\b",
)
_p("native_language", SINGLE, rf"\b(?:{_BE}\s+an?\s+)?native\s+(?P<v>{_LANGUAGE})\s+speaker\b")
_p("native_language", SINGLE, rf"\b(?:{_BE}\s+an?\s+)?native speaker of\s+(?P<v>{_LANGUAGE})\b")

# religion: one at a time; "none" for an atheist or someone of no religion
_RELIGION_WORDS = {
    "catholic": "catholic catholique catholicism catholicisme",
    "protestant": "protestant protestante protestantism protestantisme evangelical évangélique lutheran luthérien "
    "luthérienne methodist méthodiste baptist baptiste anglican anglicane",
    "orthodox": "orthodox orthodoxe",
    "christian": "christian chrétien chrétienne christianity christianisme",
    "muslim": "muslim musulman musulmane islam",
    "jewish": "jewish jew juif juive judaism judaïsme",
    "hindu": "hindu hindou hindoue hinduism hindouisme",
    "buddhist": "buddhist bouddhiste buddhism bouddhisme",
    "sikh": "sikh sikhism sikhisme",
    "none": "atheist athée agnostic agnostique",
}
_RELIGIONS = {_fold(w): c for c, words in _RELIGION_WORDS.items() for w in words.split()}
_RELIGION = "|".join(sorted((w for words in _RELIGION_WORDS.values() for w in words.split()), key=len, reverse=True))
_p(
    "religion",
    SINGLE,
    rf"\b(?:{_BE}|became|has become)\s+{_ADV}(?:an?\s+)?(?:(?:devout|practi[sc]ing|observant|committed|strict|orthodox|born-again|lifelong|convinced)\s+)?(?P<v>{_RELIGION})\b(?!\s+(?:school|church|hospital|university|college|charity|food|holidays?|festival|wedding|community|friends?|family|neighbou?rs?|colleagues?|art|music|history|tradition|cemetery|mosque|temple|synagogue|area|country|region|name))",
)
_p(
    "religion",
    SINGLE,
    rf"\b(?:est|suis|sont|se dit|se déclare|se considère comme|est devenue?)\s+{_ADV}(?:une?\s+)?(?:(?:fervente?|pratiquante?|croyante?|convaincue?)\s+)?(?P<v>{_RELIGION})\b(?!\s+(?:d'origine|de culture|de naissance))",
)
_p(
    "religion",
    SINGLE,
    rf"\b(?:converted|has converted|have converted|s'est convertie?|se sont convertie?s|me suis convertie?|t'es convertie?)\s+(?:to\s+|à\s+l'|au\s+|à\s+la\s+|à\s+)?(?P<v>{_RELIGION})\b",
)
_p(
    "religion",
    SINGLE,
    r"\b(?P<none>(?:doesn't|does not|don't|do not)\s+(?:follow|practi[sc]e|belong to|have)\s+(?:any|a)\s+religion|(?:has|have)\s+no\s+religion|(?:ne\s+pratique|ne\s+pratiquent|n'a|n'ai|n'appartient à|n'appartiens à)\s+aucune\s+religion|(?:est|suis|sont)\s+sans\s+religion)\b(?P<v>)",
)

# health: a chronic condition, named (yes or no), or any ("no medical conditions", "en parfaite santé")
_CONDITION_WORDS = {
    "diabetes": "diabetes diabetic diabète diabétique",
    "asthma": "asthma asthmatic asthme asthmatique",
    "hypertension": "hypertension hypertensive hypertendu hypertendue|high blood pressure|tension artérielle",
    "migraine": "migraine migraines",
    "epilepsy": "epilepsy epileptic épilepsie épileptique",
    "arthritis": "arthritis arthrite polyarthrite arthrose",
    "coeliac": "coeliac celiac cœliaque coeliaque|coeliac disease|celiac disease|maladie cœliaque",
    "crohn": "crohn's crohn|maladie de crohn",
    "sclerosis": "multiple sclerosis|sclérose en plaques",
    "eczema": "eczema eczéma",
    "psoriasis": "psoriasis",
    "cholesterol": "high cholesterol|cholestérol",
    "heart": "heart disease|heart condition|maladie cardiaque",
    "apnea": "sleep apnea|sleep apnoea|apnée du sommeil",
    "lupus": "lupus",
    "fibromyalgia": "fibromyalgia fibromyalgie",
}


def _condition_terms(words: str) -> list[str]:
    single, *multi = words.split("|")
    return single.split() + multi


_CONDITIONS = {_fold(t): c for c, words in _CONDITION_WORDS.items() for t in _condition_terms(words)}
_CONDITION = "|".join(
    sorted(
        (re.escape(t) for words in _CONDITION_WORDS.values() for t in _condition_terms(words)), key=len, reverse=True
    )
)
_CONDITION_ADJ = r"(?:(?:a|an|type [12]|type one|type two|chronic|severe|mild|bad|exercise-induced|chronique|chroniques|sévère|de type [12])\s+)*"
_p(
    "condition",
    POLAR,
    rf"\b(?P<pos>has|have|'s got|'ve got|has got|have got|suffers from|suffer from|suffering from|lives with|living with|is managing|managing|manages|(?:has|have) been (?:managing|living with|treated for|diagnosed with)|was diagnosed with|were diagnosed with|diagnosed with|takes medication for|is being treated for|is on medication for)\s+{_CONDITION_ADJ}(?P<v>{_CONDITION})\b",
)
_p(
    "condition",
    POLAR,
    rf"\b(?P<pos>(?:{_BE}|est|suis|sont)\s+{_ADV})(?P<v>diabetic|asthmatic|epileptic|diabétique|asthmatique|épileptique|hypertendue?|coeliac|celiac|cœliaque|coeliaque)\b",
)
_p(
    "condition",
    POLAR,
    rf"\b(?P<pos>a|ai|as|ont|avons)\s+(?:du\s+|de l'|de la\s+|des\s+|une?\s+)(?:(?:type [12]|chronique|sévère)\s+)?(?P<v>{_CONDITION})\b",
)
_p(
    "condition",
    POLAR,
    rf"\b(?P<pos>souffre|souffrent|souffres|vit avec|vis avec|(?:est|suis) atteinte?)\s+(?:d[eu]\s+|de l'|de la\s+|des\s+|d'une?\s+|d'|une?\s+)?(?:(?:type [12]|chronique|sévère)\s+)?(?P<v>{_CONDITION})\b",
)
_p(
    "condition",
    POLAR,
    rf"\b(?P<neg>(?:has|have) never (?:had|suffered from|been diagnosed with)|never had|(?:doesn't|does not|don't|do not) (?:have|suffer from)|(?:has|have) no|no longer (?:has|have|suffers from))\s+(?:(?:any|a|an)\s+)?{_CONDITION_ADJ}(?P<v>{_CONDITION})\b",
)
_p(
    "condition",
    POLAR,
    r"\b(?P<neg>(?:is not|isn't|'s not|am not|'m not|are not|aren't|n'est|ne suis|ne sont)\s+(?:pas\s+|plus\s+)?)(?P<v>diabetic|asthmatic|epileptic|diabétique|asthmatique|épileptique)\b",
)
_p(
    "condition",
    POLAR,
    rf"\b(?P<neg>(?:n'a|n'ai|n'avoir|n'ont)\s+(?:jamais|pas|plus)\s+(?:eu\s+|souffert\s+)?)(?:d[e']\s*|de l'|du\s+|la moindre\s+|le moindre\s+|aucune?\s+)?{_CONDITION_ADJ}(?P<v>{_CONDITION})",
)
_p(
    "condition",
    POLAR,
    r"\b(?P<neg>(?:no|never had (?:any|a)|(?:doesn't|does not|don't|do not) have (?:any|a)|without any)\s+(?:(?:known|chronic|long-term|serious|underlying|major)\s+)*(?:medical conditions?|health (?:conditions?|problems|issues)|chronic (?:illness|illnesses|disease|diseases|conditions?))|in (?:perfect|excellent) health|perfectly healthy|(?:n'a|n'ai|n'avoir|n'ont)\s+(?:jamais\s+eu|aucun|aucune|pas)\s+(?:de\s+|d'|le moindre\s+|la moindre\s+)?(?:problèmes? de santé|maladies? chroniques?|soucis? de santé|pathologies?)|en (?:parfaite|excellente|pleine) santé|aucun (?:problème de santé|antécédent médical))\b(?P<v>)",
)

# education: the highest level reached, 0 no higher education, 1 higher education or a first degree, 2 master's, 3
# doctorate; "has a PhD" says at least 3, "never went to university" at most 0
_DEGREE_WORDS = {  # folded -> level
    0: "high school diploma|a-levels|a levels|gcses|baccalaureat|bac|brevet|cap",
    1: "bachelor's|bachelors|bachelor's degree|bachelor degree|undergraduate degree|university degree|college degree|"
    "first degree|ba|bsc|b.sc.|b.a.|diplome universitaire|bac+3",
    2: "master's|masters|master's degree|master|ma|msc|m.sc.|mba|mastere|bac+5",
    3: "phd|ph.d.|doctorate|doctoral degree|doctorat|dphil",
}
_DEGREES = {t: level for level, words in _DEGREE_WORDS.items() for t in words.split("|")}
# Abbreviations only in capitals ("ma" is French for "my"), "master" only as a degree ("a master plan" is not one).
_DEGREE = (
    r"(?:(?-i:PhD|Ph\.D\.|DPhil|MBA|MSc|M\.Sc\.|MA|BA|BSc|B\.Sc\.|B\.A\.|GCSEs|A-levels|A levels|CAP)|bachelor's degree|"
    r"bachelor degree|bachelor's|bachelors|undergraduate degree|university degree|college degree|first degree|"
    r"master's degree|master's|masters|master(?=\s+(?:en|de|d'|in|of|[12])\b)|mastère|doctoral degree|doctorate|doctorat|"
    r"diplôme universitaire|bac\+[35]|high school diploma|baccalauréat|bac|brevet)"
)
_p(
    "education",
    LEVEL,
    rf"\b(?P<min>has|have|holds|hold|earned|has earned|completed|has completed|obtained|has obtained|received|'s got|'ve got)\s+(?:an?\s+|his\s+|her\s+|my\s+|their\s+)?(?P<v>{_DEGREE})(?=[\s.,;!?]|$)(?!\s+(?:student|programme|program|course|candidate|application|scholarship|position|thesis|supervisor|studentship|place|offer))",
)
_p(
    "education",
    LEVEL,
    rf"\b(?P<min>possède|possèdent|a obtenu|ai obtenu|ont obtenu|a|ai|ont|est titulaire d'|suis titulaire d')\s*(?:un|une|son|sa|mon|ma|leur)\s+(?P<v>{_DEGREE})(?=[\s.,;!?]|$)(?!\s+(?:en cours|à préparer))",
)
_p(
    "education",
    LEVEL,
    rf"\b(?:highest\s+(?:qualification|degree|level of education|diploma|education)\s+is\s+(?:an?\s+|the\s+)?|plus haut diplôme\s*,?\s+(?:est|c'est)\s+(?:un\s+|une\s+|le\s+|la\s+|l')?)(?P<exact>{_DEGREE})(?=[\s.,;!?]|$)",
)
_p(
    "education",
    LEVEL,
    r"\b(?P<max>never went to|didn't go to|did not go to|never attended|never studied at|never set foot in a)\s+(?:a\s+)?(?:university|college|uni)\b",
)
_p(
    "education",
    LEVEL,
    r"\b(?P<max>(?:has|have)\s+no\s+(?:university\s+|college\s+|higher\s+)?degree|(?:doesn't|does not|don't|do not)\s+have\s+a\s+(?:university\s+|college\s+)?degree|left school at (?:1[0-8]|sixteen|fifteen|seventeen|eighteen)|dropped out of (?:high |secondary )?school|never finished (?:high |secondary )?school)\b",
)
_p(
    "education",
    LEVEL,
    r"\b(?P<max>n'(?:a|ai|ont|avoir)\s+jamais\s+(?:fait\s+d'études(?:\s+supérieures)?|été\s+à\s+l'université|été\s+à\s+la\s+fac|mis\s+les\s+pieds\s+à\s+(?:la\s+fac|l'université))|(?:a|ai|ont|avoir)\s+arrêté\s+(?:ses|mes|leurs|les|l')\s*(?:études|école)\s+(?:après\s+le\s+(?:bac|lycée|brevet)|au\s+lycée|au\s+collège|à\s+(?:1[0-8])\s+ans|en\s+(?:troisième|seconde|première|terminale))|n'(?:a|ai)\s+(?:pas|aucun)\s+(?:de\s+)?diplôme|n'(?:a|ai)\s+pas\s+(?:le\s+)?bac)\b",
)
_p(
    "education",
    LEVEL,
    r"\b(?P<attended>(?:a|ai|ont|avoir)\s+fait\s+(?:ses|mes|leurs|des)\s+études\s+(?:supérieures|universitaires|de\s+médecine|de\s+droit|d'ingénieur|à\s+l'université|à\s+la\s+fac)|graduated\s+from\s+(?:university|college|uni|the\s+University|(?-i:[A-Z])[\w-]+\s+(?:University|College))|(?:is\s+an?\s+|a\s+)university\s+graduate|(?:est|suis)\s+diplômée?\s+(?:de\s+l'université|d'une?\s+(?:master|doctorat|licence|école)))\b",
)

# contact details: one of each kind at a time
_p(
    "phone",
    SINGLE,
    r"\b(?P<k>mobile|cell|work|home|office|landline|portable|fixe)?\s*(?:phone number|phone|number|numéro(?:\s+de\s+(?:téléphone|portable))?|téléphone)(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?\s*(?:is now|is|est maintenant|est désormais|est|:|c'est)?\s*:?\s*(?:now\s+|maintenant\s+|désormais\s+)?(?:le\s+)?(?P<v>\+?\d[\d .-]{6,18}\d)\b",
)
_p(
    "phone",
    SINGLE,
    r"\b(?:changed|switched|changé)\s+(?:(?:his|her|my|their|de)\s+)?(?:phone\s+)?(?:number|numéro)\s*[:,]?\s*(?:it's\s+|c'est\s+)?(?:now\s+|maintenant\s+|désormais\s+)?(?:le\s+)?(?P<v>\+?\d[\d .-]{6,18}\d)\b",
)
_p(
    "email",
    SINGLE,
    r"\b(?P<k>work|personal|pro|perso|professionnelle|personnelle)?\s*(?:e-?mail(?:\s+address)?|adresse\s+(?:e-?mail|mail|électronique)|courriel)(?P<h>\s+(?:de|d')\s*[\w' -]{1,40}?)?\s*(?:is now|is|est maintenant|est désormais|est|:|c'est)?\s*[:,]?\s*(?:now\s+|maintenant\s+)?(?P<v>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)",
)

# shifts: nights or days
_SHIFTS = {
    "night": "night",
    "nights": "night",
    "graveyard": "night",
    "nuit": "night",
    "day": "day",
    "days": "day",
    "jour": "day",
    "journée": "day",
    "journee": "day",
    "evening": "evening",
    "soir": "evening",
}
_p(
    "shift",
    SINGLE,
    rf"\b(?:works|work|working|travaille|travaillent|travailles)\s+{_ADV}(?:the\s+|on\s+)?(?P<v>night|day|evening|graveyard)\s+shifts?\b(?!\s+(?:and|or)\s+(?:night|day|evening))(?!\s+(?:on|every|twice|once|sometimes|occasionally|this|next|last|tomorrow|tonight)\b)",
)
_p(
    "shift",
    SINGLE,
    rf"\b(?:works|work|working)\s+{_ADV}(?P<v>nights|days)\b(?!\s+(?:and|or)\s+(?:nights|days))(?!\s+(?:a|per|each|every|off|in|at|on|when|this|last|next)\b)",
)
_p(
    "shift",
    SINGLE,
    rf"\b(?:travaille|travaillent|travailles)\s+{_ADV}(?:de\s+|en\s+)(?P<v>nuit|jour|journée)\b(?!\s+(?:comme|et|ou)\s+(?:de\s+|en\s+)?(?:nuit|jour|journée))",
)
_p(
    "shift",
    SINGLE,
    r"\bne\s+travaill\w*\s+(?:désormais\s+|plus\s+|maintenant\s+)?qu'(?:en\s+|de\s+)(?P<v>nuit|jour|journée)\b",
)
