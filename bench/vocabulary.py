"""The benchmark dataset's vocabulary (bench/dataset.py draws from it): names, jobs, everyday things, health,
the calendar and the cast's relations; the places are in bench/places.py, the sentences that use them in
bench/templates.py. Plain data: the generator's rules, and every random draw, are in bench/dataset.py.

Bilingual entries read 'english|français' (`bilingual`); French forms carry their article where the templates
contract it. The order of every list is part of the dataset: a draw picks by position, so reordering or
inserting an entry changes the generated texts (and invalidates the embedding cache).
"""

from __future__ import annotations

from typing import NamedTuple


def bilingual(items: list[str]) -> list[tuple[str, str]]:
    """'english|français' entries; one without '|' reads the same in both languages."""
    return [tuple(item.split("|")) if "|" in item else (item, item) for item in items]


FEMALE_NAMES = """Camille Léa Chloé Manon Inès Sarah Emma Jade Louise Alice Lina Zoé Juliette Anna Rose Mila Clara
Eva Julia Nina Margaux Mathilde Pauline Élise Aurélie Céline Sophie Marie Claire Isabelle Nathalie Hélène Amélie
Valérie Agathe Coralie Bérénice Laure Océane Solène Gaëlle Olivia Sophia Charlotte Amelia Harper Evelyn Abigail
Emily Grace Hannah Lily Ava Mia Ruby Ivy Nora Giulia Chiara Francesca Lucía Carmen Elena Sofía Beatriz Ingrid
Astrid Freya Lena Greta Anouk Olga Natasha Yuki Aiko Mei Priya Ananya Leila Amira Yasmine Ama Zainab Larissa Samira
Elif Eleni Ioana Zofia Rania Margot Capucine Apolline Salomé""".split()
MALE_NAMES = """Hugo Lucas Louis Gabriel Jules Arthur Nathan Raphaël Adam Paul Tom Théo Maël Noah Ethan Victor Sacha
Martin Léon Antoine Baptiste Quentin Romain Julien Nicolas Thomas Pierre Olivier François Philippe Mathieu Benoît
Yann Rémi Guillaume Cédric Damien Fabien Loïc James William Benjamin Daniel Henry Jack Samuel David Joseph Michael
Owen Ryan Isaac Leo Aaron Oscar Felix Luca Marco Matteo Diego Javier Pablo Miguel João Tiago Lars Sven Anders Jonas
Klaus Pieter Dmitri Aleksandr Kenji Hiroshi Wei Jun Arjun Ravi Omar Youssef Karim Kofi Tunde Mateus Tariq Emre Nikos
Bogdan Tomasz Malik Bastien Gaspard Timothée""".split()
SURNAMES = """Martin Bernard Dubois Thomas Robert Richard Petit Durand Leroy Moreau Simon Laurent Lefebvre Michel
Garcia Bertrand Roux Vincent Fournier Morel Girard André Mercier Dupont Lambert Bonnet Legrand Garnier Faure
Rousseau Blanc Guérin Muller Roussel Perrin Morin Clément Gauthier Dumont Lopez Fontaine Chevalier Robin Smith
Johnson Williams Brown Jones Miller Davis Wilson Anderson Taylor Moore Jackson White Harris Clark Lewis Walker Young
King Wright Scott Green Baker Adams Nelson Hill Campbell Mitchell Carter Evans Turner Rossi Russo Ferrari Esposito
Bianchi Romano Silva Santos Oliveira Pereira Costa Fernández González Rodríguez Sánchez Novak Kowalski Nowak Jansen
Schmidt Schneider Fischer Weber Wagner Becker Hoffmann Nakamura Tanaka Sato Kim Park Chen Wang Zhang Patel Sharma
Singh Khan Haddad Mansour Okafor Mensah Diallo Traoré Nguyen Tran Ivanov Petrov Andersen Larsen Nielsen Eriksson
Johansson Yilmaz Kaya Papadopoulos""".split()
# French forms with '/' are masculine/feminine; the others are the same for both.
OCCUPATIONS = bilingual(
    [
        "nurse|infirmier/infirmière",
        "architect|architecte",
        "dentist|dentiste",
        "journalist|journaliste",
        "photographer|photographe",
        "bookseller|libraire",
        "accountant|comptable",
        "lawyer|avocat/avocate",
        "paediatrician|pédiatre",
        "physiotherapist|kinésithérapeute",
        "psychologist|psychologue",
        "cardiologist|cardiologue",
        "veterinarian|vétérinaire",
        "florist|fleuriste",
        "airline pilot|pilote de ligne",
        "project manager|cheffe de projet",
        "data scientist|data scientist",
        "graphic designer|graphiste",
        "interpreter|interprète",
        "tour guide|guide touristique",
        "librarian|bibliothécaire",
        "urban planner|urbaniste",
        "geologist|géologue",
        "biologist|biologiste",
        "notary|notaire",
        "diplomat|diplomate",
        "midwife|sage-femme",
        "software engineer|ingénieur logiciel/ingénieure logicielle",
        "teacher|professeur/professeure",
        "baker|boulanger/boulangère",
        "chef|chef cuisinier/cheffe cuisinière",
        "electrician|électricien/électricienne",
        "plumber|plombier/plombière",
        "carpenter|menuisier/menuisière",
        "firefighter|pompier/pompière",
        "police officer|policier/policière",
        "pharmacist|pharmacien/pharmacienne",
        "surgeon|chirurgien/chirurgienne",
        "researcher|chercheur/chercheuse",
        "translator|traducteur/traductrice",
        "farmer|agriculteur/agricultrice",
        "winemaker|vigneron/vigneronne",
        "sommelier|sommelier/sommelière",
        "mechanic|mécanicien/mécanicienne",
        "taxi driver|chauffeur de taxi/chauffeuse de taxi",
        "flight attendant|steward/hôtesse de l'air",
        "web developer|développeur web/développeuse web",
        "product manager|chef de produit/cheffe de produit",
        "sales manager|responsable commercial/responsable commerciale",
        "HR manager|responsable RH",
        "civil servant|fonctionnaire",
        "social worker|assistant social/assistante sociale",
        "estate agent|agent immobilier/agente immobilière",
        "economist|économiste",
        "musician|musicien/musicienne",
        "actor|comédien/comédienne",
        "dancer|danseur/danseuse",
        "painter|peintre",
        "sculptor|sculpteur/sculptrice",
        "gardener|jardinier/jardinière",
        "hairdresser|coiffeur/coiffeuse",
        "optician|opticien/opticienne",
        "radiologist|radiologue",
        "dietitian|diététicien/diététicienne",
        "sports coach|coach sportif/coach sportive",
        "school principal|directeur d'école/directrice d'école",
        "PhD student|doctorant/doctorante",
        "consultant|consultant/consultante",
        "lecturer|maître de conférences",
        "data analyst|analyste de données",
    ]
)
COMPANIES = """Airbus Decathlon Michelin Ubisoft Doctolib Capgemini Thales Danone Renault Accor Criteo Qonto Ledger
Deezer Spotify Siemens Nestlé Philips IKEA Novartis Google Zalando Booking.com Alstom Schneider_Electric
Atelier_Moreau Studio_Nuances Cabinet_Lefèvre Clinique_du_Parc Librairie_Mollat Brasserie_Lipp""".split()
COMPANIES = [name.replace("_", " ") for name in COMPANIES]  # '_' joins multi-word names in the list above
# French forms carry their article, so the templates can contract "à les" into "aux" and "de le" into "du".
FOODS = bilingual(
    [
        "sushi|les sushis",
        "ramen|les ramens",
        "couscous|le couscous",
        "paella|la paella",
        "ratatouille|la ratatouille",
        "croissants|les croissants",
        "dark chocolate|le chocolat noir",
        "goat cheese|le fromage de chèvre",
        "oysters|les huîtres",
        "mussels and fries|les moules-frites",
        "crêpes|les crêpes",
        "Thai curry|le curry thaï",
        "pho|le pho",
        "tacos|les tacos",
        "lasagna|les lasagnes",
        "risotto|le risotto",
        "pizza margherita|la pizza margherita",
        "tiramisu|le tiramisu",
        "lemon tart|la tarte au citron",
        "green tea|le thé vert",
        "espresso|l'expresso",
        "red wine|le vin rouge",
        "craft beer|la bière artisanale",
        "falafel|les falafels",
        "hummus|le houmous",
        "bouillabaisse|la bouillabaisse",
        "quiche lorraine|la quiche lorraine",
        "raclette|la raclette",
        "cheese fondue|la fondue savoyarde",
        "tagine|le tajine",
        "dumplings|les raviolis chinois",
        "kimchi|le kimchi",
        "ceviche|le ceviche",
        "gazpacho|le gazpacho",
        "apple pie|la tarte aux pommes",
        "macarons|les macarons",
        "pancakes|les pancakes",
        "avocado toast|les tartines à l'avocat",
        "strawberries|les fraises",
        "mango|la mangue",
        "olives|les olives",
        "Comté cheese|le comté",
        "smoked salmon|le saumon fumé",
    ]
)
HOBBIES = bilingual(
    [
        "rock climbing|l'escalade",
        "hiking|la randonnée",
        "sailing|la voile",
        "surfing|le surf",
        "cycling|le vélo",
        "trail running|le trail",
        "swimming|la natation",
        "yoga|le yoga",
        "chess|les échecs",
        "photography|la photographie",
        "watercolour painting|l'aquarelle",
        "pottery|la poterie",
        "knitting|le tricot",
        "gardening|le jardinage",
        "baking|la pâtisserie",
        "birdwatching|l'observation des oiseaux",
        "playing the piano|le piano",
        "playing the guitar|la guitare",
        "singing in a choir|le chant choral",
        "board games|les jeux de société",
        "video games|les jeux vidéo",
        "skiing|le ski",
        "scuba diving|la plongée sous-marine",
        "fishing|la pêche",
        "calligraphy|la calligraphie",
        "woodworking|la menuiserie",
        "astronomy|l'astronomie",
        "reading crime novels|les romans policiers",
        "salsa dancing|la salsa",
        "tango|le tango",
        "judo|le judo",
        "fencing|l'escrime",
        "archery|le tir à l'arc",
        "origami|l'origami",
        "bouldering|le bloc",
        "crossword puzzles|les mots croisés",
        "amateur theatre|le théâtre amateur",
        "cooking Indian food|la cuisine indienne",
        "kayaking|le kayak",
        "stand-up paddling|le paddle",
    ]
)
SPORTS = bilingual(
    [
        "tennis|au tennis",
        "badminton|au badminton",
        "squash|au squash",
        "football|au foot",
        "basketball|au basket",
        "volleyball|au volley",
        "padel|au padel",
        "golf|au golf",
        "table tennis|au ping-pong",
        "chess|aux échecs",
        "bridge|au bridge",
        "pétanque|à la pétanque",
    ]
)
OBJECTS = bilingual(
    [
        "a red bicycle|un vélo rouge",
        "an old film camera|un vieil appareil photo argentique",
        "a vintage watch|une montre ancienne",
        "an e-reader|une liseuse",
        "a cast-iron pan|une poêle en fonte",
        "a wooden chess set|un jeu d'échecs en bois",
        "a blue wool scarf|une écharpe bleue en laine",
        "a leather notebook|un carnet en cuir",
        "a telescope|un télescope",
        "a sewing machine|une machine à coudre",
        "a ukulele|un ukulélé",
        "an electric scooter|une trottinette électrique",
        "a record player|une platine vinyle",
        "a coffee grinder|un moulin à café",
        "a hiking backpack|un sac de randonnée",
        "a drone|un drone",
        "a two-person tent|une tente deux places",
        "a sea kayak|un kayak de mer",
        "a gold necklace|un collier en or",
        "a laptop|un ordinateur portable",
        "a tablet|une tablette",
        "noise-cancelling headphones|un casque antibruit",
        "a fountain pen|un stylo plume",
        "a folding umbrella|un parapluie pliant",
        "an acoustic guitar|une guitare acoustique",
        "a painting by a local artist|un tableau d'un artiste local",
        "a bonsai tree|un bonsaï",
        "an espresso machine|une machine à expresso",
        "a snowboard|un snowboard",
        "a sourdough starter|un levain",
        "a mechanical keyboard|un clavier mécanique",
        "a pair of running shoes|une paire de chaussures de course",
    ]
)
ANIMALS = bilingual(
    [
        "dog|un chien",
        "cat|un chat",
        "rabbit|un lapin",
        "parrot|un perroquet",
        "hamster|un hamster",
        "tortoise|une tortue",
        "horse|un cheval",
        "goldfish|un poisson rouge",
        "ferret|un furet",
        "canary|un canari",
        "guinea pig|un cochon d'Inde",
        "border collie|un border collie",
        "Maine Coon cat|un chat maine coon",
        "labrador|un labrador",
    ]
)
PET_NAMES = """Pixel Biscuit Moka Filou Caramel Luna Max Oslo Pistache Noisette Rocky Simba Chipie Gribouille Tofu
Pepper Olive Mango Ziggy Bandit Praline Sushi Nala Gaston Réglisse""".split()
PET_TREATS = [
    "carrots",
    "chicken treats",
    "tennis balls",
    "sunflower seeds",
    "long walks on the beach",
    "sleeping on the sofa",
    "cheese rinds",
    "catnip",
    "chasing pigeons",
    "car rides",
]
ALLERGENS = bilingual(
    [
        "peanuts|les arachides",
        "penicillin|la pénicilline",
        "cats|les chats",
        "pollen|le pollen",
        "shellfish|les fruits de mer",
        "bee stings|les piqûres d'abeille",
        "latex|le latex",
        "gluten|le gluten",
        "dust mites|les acariens",
        "kiwi|le kiwi",
        "sesame|le sésame",
        "eggs|les œufs",
    ]
)
CONDITIONS = bilingual(
    [  # French form reads after "a": "Léa a des migraines"
        "back pain|mal au dos",
        "migraines|des migraines",
        "a sprained ankle|une entorse à la cheville",
        "hay fever|le rhume des foins",
        "asthma|de l'asthme",
        "insomnia|des insomnies",
        "high blood pressure|de l'hypertension",
        "a broken wrist|un poignet cassé",
        "tendinitis|une tendinite",
        "type 1 diabetes|un diabète de type 1",
        "eczema|de l'eczéma",
        "a knee injury|une blessure au genou",
        "anaemia|de l'anémie",
        "sciatica|une sciatique",
    ]
)
MEDICATIONS = [
    "vitamin D",
    "iron supplements",
    "an antihistamine",
    "a low dose of aspirin",
    "magnesium",
    "omega-3 capsules",
    "levothyroxine",
    "insulin",
    "melatonin",
    "a beta blocker",
]
LANGUAGES = bilingual(
    [
        "Spanish|l'espagnol",
        "German|l'allemand",
        "Italian|l'italien",
        "Japanese|le japonais",
        "Portuguese|le portugais",
        "Arabic|l'arabe",
        "Mandarin|le mandarin",
        "Dutch|le néerlandais",
        "Russian|le russe",
        "Korean|le coréen",
        "Swedish|le suédois",
        "Greek|le grec",
        "Polish|le polonais",
        "Turkish|le turc",
        "English|l'anglais",
    ]
)
STUDIES = [
    "law",
    "medicine",
    "architecture",
    "mathematics",
    "history",
    "economics",
    "biology",
    "computer science",
    "philosophy",
    "chemistry",
    "political science",
    "fine arts",
    "mechanical engineering",
    "literature",
    "psychology",
]
DEPARTMENTS = bilingual(
    [
        "marketing",
        "finance",
        "sales|commerciale",
        "research|recherche",
        "logistics|logistique",
        "IT|informatique",
        "legal|juridique",
        "customer support|support client",
        "design",
        "HR|RH",
    ]
)
MUSIC = [
    "jazz",
    "classical music",
    "techno",
    "French rap",
    "bossa nova",
    "history podcasts",
    "lo-fi playlists",
    "opera",
    "K-pop",
    "indie rock",
    "film soundtracks",
]
CUISINES = bilingual(
    [
        "Italian|italien",
        "Japanese|japonais",
        "Lebanese|libanais",
        "Vietnamese|vietnamien",
        "Ethiopian|éthiopien",
        "Peruvian|péruvien",
        "Korean|coréen",
        "Indian|indien",
        "Greek|grec",
        "Mexican|mexicain",
        "Moroccan|marocain",
        "vegan|végan",
    ]
)
FILM_GENRES = ["horror", "science-fiction", "documentary", "romantic comedy", "thriller", "animated", "western"]
SEASONS = ["spring", "summer", "autumn", "winter"]
MONTHS = bilingual(
    [
        "January|janvier",
        "February|février",
        "March|mars",
        "April|avril",
        "May|mai",
        "June|juin",
        "July|juillet",
        "August|août",
        "September|septembre",
        "October|octobre",
        "November|novembre",
        "December|décembre",
    ]
)
WEEKDAYS = bilingual(
    [
        "Monday|lundi",
        "Tuesday|mardi",
        "Wednesday|mercredi",
        "Thursday|jeudi",
        "Friday|vendredi",
        "Saturday|samedi",
        "Sunday|dimanche",
    ]
)


class Relation(NamedTuple):
    en: str
    fr: str  # with its article; "masculine/feminine" when it depends on the person
    gender: str  # "f", "m", or "n" (either)
    family: bool  # shares the protagonist's surname


RELATIONS = [
    Relation("sister", "la sœur", "f", True),
    Relation("brother", "le frère", "m", True),
    Relation("mother", "la mère", "f", True),
    Relation("father", "le père", "m", True),
    Relation("daughter", "la fille", "f", True),
    Relation("son", "le fils", "m", True),
    Relation("cousin", "le cousin/la cousine", "n", False),
    Relation("aunt", "la tante", "f", False),
    Relation("uncle", "l'oncle", "m", False),
    Relation("grandmother", "la grand-mère", "f", True),
    Relation("grandfather", "le grand-père", "m", True),
    Relation("wife", "la femme", "f", False),
    Relation("husband", "le mari", "m", False),
    Relation("partner", "le compagnon/la compagne", "n", False),
    Relation("best friend", "le meilleur ami/la meilleure amie", "n", False),
    Relation("colleague", "le collègue/la collègue", "n", False),
    Relation("neighbour", "le voisin/la voisine", "n", False),
    Relation("flatmate", "le colocataire/la colocataire", "n", False),
    Relation("doctor", "le médecin/la médecin", "n", False),
    Relation("childhood friend", "l'ami d'enfance/l'amie d'enfance", "n", False),
    Relation("godmother", "la marraine", "f", False),
    Relation("godfather", "le parrain", "m", False),
    Relation("niece", "la nièce", "f", False),
    Relation("nephew", "le neveu", "m", False),
    Relation("mentor", "le mentor/la mentore", "n", False),
    Relation("piano teacher", "le professeur de piano/la professeure de piano", "n", False),
    Relation("landlord", "le propriétaire/la propriétaire", "n", False),
    Relation("running coach", "le coach de course/la coach de course", "n", False),
    Relation("sister-in-law", "la belle-sœur", "f", False),
    Relation("brother-in-law", "le beau-frère", "m", False),
]
