"""A deterministic, realistic benchmark dataset of facts and events, and a fast loader for it.

    python scripts/bench_data.py --total 200000 --embedder hashing

Layout (`subject_sizes`), all in project "bench":
- small subjects "s-0000", "s-0001", ... hold a quarter of the total, but at least half of it up to 2,500
  facts (so a smoke run still has dozens of them); each holds 20-200 facts, most near 45 (a long tail);
- of the rest, "big" holds four fifths, capped at 100,000 facts;
- "mid-0", "mid-1", ... share what remains, at most 10,000 facts each.
So 200,000 gives big 100k + 5 mids of 10k + ~1,100 small subjects; 1,000,000 gives big 100k + 65 mids of
10k + 250k in small subjects; 5,000 gives big 2,000 + one mid of 500 + 2,500 in small subjects.
Events: a tenth of a subject's fact count, at least 2.

Every subject draws from its own random stream (seeded by seed and subject id), independent of `total`: a
subject's texts are the same in every run that holds it, and "big" in a 5,000 run is the first 2,000 facts
of "big" in a 200,000 run. That keeps the embedding cache valid across totals.

Texts are English with some French (the share varies per subject), about a protagonist and a cast of 8-20
people (each with a relation, a city and a job) and 5-11 places, reused across the subject's facts, so names
overlap and facts link (sister -> lives in -> city). Timestamps are relative to `now` (default: today,
midnight UTC) so volatile facts stay mostly unexpired whatever the day; the texts never depend on it.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

if __package__ in (None, ""):  # run as `python scripts/bench_data.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.db import connection, transaction  # noqa: E402

from facts.text import normalise_text, text_hash  # noqa: E402
from hakimem.embeddings import _build  # noqa: E402

PROJECT = "bench"
EMBED_DIM = 384  # facts.models.EMBED_DIM, which cannot be imported before django.setup() (main runs it)
BIG_CAP = 100_000
MID_CAP = 10_000
SMALL_MIN, SMALL_MAX = 20, 200
HISTORY_DAYS = 730  # recorded_from / occurred_at spread over the last two years
REBUILD_ABOVE_ROWS = 20_000  # above this, drop the hnsw indexes around the COPY and build them after
HNSW_INDEXES = ("facts_fact_embedding_hnsw", "facts_event_embedding_hnsw")

# Embedding cache chunks are content-defined (a chunk ends after a text whose crc32 is 0 modulo
# CHUNK_SPREAD, once it holds CHUNK_MIN texts), not fixed 10k slices: the boundaries then depend on the
# texts alone, so a run whose text list shares long runs with an earlier one (200k then 1M: same "big",
# same first mids, same first small subjects) finds the same chunks even where the offsets differ.
CHUNK_MIN, CHUNK_SPREAD, CHUNK_MAX = 5_000, 5_000, 20_000
REDRAWS = 8  # fresh draws before a text already held gets a dated variant


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _pairs(items: list[str]) -> list[tuple[str, str]]:
    """'english|français' entries; one without '|' reads the same in both languages."""
    return [tuple(item.split("|")) if "|" in item else (item, item) for item in items]


# --- vocabulary -----------------------------------------------------------------------------------------

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
PLACES = _pairs([
    "Paris", "Lyon", "Marseille", "Toulouse", "Nice", "Nantes", "Strasbourg", "Montpellier", "Bordeaux", "Lille",
    "Rennes", "Reims", "Grenoble", "Dijon", "Angers", "Nîmes", "Annecy", "Brest", "Tours", "Amiens", "Limoges",
    "Perpignan", "Metz", "Besançon", "Orléans", "Rouen", "Caen", "Nancy", "Avignon", "Poitiers", "La Rochelle",
    "Biarritz", "Saint-Malo", "Chamonix", "Ajaccio", "Bastia", "Colmar", "Arles", "Aix-en-Provence", "Cannes",
    "Le Havre", "Clermont-Ferrand", "Bayonne", "Pau", "Vannes", "Quimper", "Lorient", "Troyes", "Chartres",
    "Versailles", "Brussels|Bruxelles", "Antwerp|Anvers", "Ghent|Gand", "Bruges", "Liège", "Geneva|Genève",
    "Lausanne", "Zurich", "Basel|Bâle", "Bern|Berne", "Luxembourg", "Montreal|Montréal", "Quebec City|Québec",
    "Toronto", "Vancouver", "London|Londres", "Edinburgh|Édimbourg", "Manchester", "Dublin", "Cork",
    "Lisbon|Lisbonne", "Porto", "Madrid", "Barcelona|Barcelone", "Seville|Séville", "Valencia|Valence", "Bilbao",
    "Granada|Grenade", "Rome", "Milan", "Florence", "Venice|Venise", "Naples", "Turin", "Bologna|Bologne",
    "Berlin", "Munich", "Hamburg|Hambourg", "Cologne", "Frankfurt|Francfort", "Vienna|Vienne",
    "Salzburg|Salzbourg", "Prague", "Budapest", "Warsaw|Varsovie", "Krakow|Cracovie", "Amsterdam", "Rotterdam",
    "Utrecht", "Copenhagen|Copenhague", "Stockholm", "Oslo", "Helsinki", "Reykjavik", "Athens|Athènes",
    "Thessaloniki|Thessalonique", "Istanbul", "Marrakesh|Marrakech", "Casablanca", "Tunis", "Dakar",
    "Cairo|Le Caire", "Cape Town|Le Cap", "Nairobi", "New York", "Boston", "Chicago", "San Francisco",
    "Los Angeles", "Seattle", "New Orleans|La Nouvelle-Orléans", "Mexico City|Mexico", "Buenos Aires",
    "Rio de Janeiro", "Lima", "Santiago", "Tokyo", "Kyoto", "Osaka", "Seoul|Séoul", "Beijing|Pékin", "Shanghai",
    "Hong Kong", "Singapore|Singapour", "Bangkok", "Hanoi|Hanoï", "Mumbai|Bombay", "Delhi", "Sydney",
    "Melbourne", "Auckland",
])
# French forms with '/' are masculine/feminine; the others are the same for both.
OCCUPATIONS = _pairs([
    "nurse|infirmier/infirmière", "architect|architecte", "dentist|dentiste", "journalist|journaliste",
    "photographer|photographe", "bookseller|libraire", "accountant|comptable", "lawyer|avocat/avocate",
    "paediatrician|pédiatre", "physiotherapist|kinésithérapeute", "psychologist|psychologue",
    "cardiologist|cardiologue", "veterinarian|vétérinaire", "florist|fleuriste", "airline pilot|pilote de ligne",
    "project manager|cheffe de projet", "data scientist|data scientist", "graphic designer|graphiste",
    "interpreter|interprète", "tour guide|guide touristique", "librarian|bibliothécaire",
    "urban planner|urbaniste", "geologist|géologue", "biologist|biologiste", "notary|notaire",
    "diplomat|diplomate", "midwife|sage-femme", "software engineer|ingénieur logiciel/ingénieure logicielle",
    "teacher|professeur/professeure", "baker|boulanger/boulangère", "chef|chef cuisinier/cheffe cuisinière",
    "electrician|électricien/électricienne", "plumber|plombier/plombière", "carpenter|menuisier/menuisière",
    "firefighter|pompier/pompière", "police officer|policier/policière", "pharmacist|pharmacien/pharmacienne",
    "surgeon|chirurgien/chirurgienne", "researcher|chercheur/chercheuse", "translator|traducteur/traductrice",
    "farmer|agriculteur/agricultrice", "winemaker|vigneron/vigneronne", "sommelier|sommelier/sommelière",
    "mechanic|mécanicien/mécanicienne", "taxi driver|chauffeur de taxi/chauffeuse de taxi",
    "flight attendant|steward/hôtesse de l'air", "web developer|développeur web/développeuse web",
    "product manager|chef de produit/cheffe de produit", "sales manager|responsable commercial/responsable commerciale",
    "HR manager|responsable RH", "civil servant|fonctionnaire", "social worker|assistant social/assistante sociale",
    "estate agent|agent immobilier/agente immobilière", "economist|économiste", "musician|musicien/musicienne",
    "actor|comédien/comédienne", "dancer|danseur/danseuse", "painter|peintre", "sculptor|sculpteur/sculptrice",
    "gardener|jardinier/jardinière", "hairdresser|coiffeur/coiffeuse", "optician|opticien/opticienne",
    "radiologist|radiologue", "dietitian|diététicien/diététicienne", "sports coach|coach sportif/coach sportive",
    "school principal|directeur d'école/directrice d'école", "PhD student|doctorant/doctorante",
    "consultant|consultant/consultante", "lecturer|maître de conférences", "data analyst|analyste de données",
])
COMPANIES = """Airbus Decathlon Michelin Ubisoft Doctolib Capgemini Thales Danone Renault Accor Criteo Qonto Ledger
Deezer Spotify Siemens Nestlé Philips IKEA Novartis Google Zalando Booking.com Alstom Schneider_Electric
Atelier_Moreau Studio_Nuances Cabinet_Lefèvre Clinique_du_Parc Librairie_Mollat Brasserie_Lipp""".split()
COMPANIES = [name.replace("_", " ") for name in COMPANIES]  # '_' joins multi-word names in the list above
# French forms carry their article, so the templates can contract "à les" into "aux" and "de le" into "du".
FOODS = _pairs([
    "sushi|les sushis", "ramen|les ramens", "couscous|le couscous", "paella|la paella",
    "ratatouille|la ratatouille", "croissants|les croissants", "dark chocolate|le chocolat noir",
    "goat cheese|le fromage de chèvre", "oysters|les huîtres", "mussels and fries|les moules-frites",
    "crêpes|les crêpes", "Thai curry|le curry thaï", "pho|le pho", "tacos|les tacos", "lasagna|les lasagnes",
    "risotto|le risotto", "pizza margherita|la pizza margherita", "tiramisu|le tiramisu",
    "lemon tart|la tarte au citron", "green tea|le thé vert", "espresso|l'expresso", "red wine|le vin rouge",
    "craft beer|la bière artisanale", "falafel|les falafels", "hummus|le houmous",
    "bouillabaisse|la bouillabaisse", "quiche lorraine|la quiche lorraine", "raclette|la raclette",
    "cheese fondue|la fondue savoyarde", "tagine|le tajine", "dumplings|les raviolis chinois", "kimchi|le kimchi",
    "ceviche|le ceviche", "gazpacho|le gazpacho", "apple pie|la tarte aux pommes", "macarons|les macarons",
    "pancakes|les pancakes", "avocado toast|les tartines à l'avocat", "strawberries|les fraises",
    "mango|la mangue", "olives|les olives", "Comté cheese|le comté", "smoked salmon|le saumon fumé",
])
HOBBIES = _pairs([
    "rock climbing|l'escalade", "hiking|la randonnée", "sailing|la voile", "surfing|le surf",
    "cycling|le vélo", "trail running|le trail", "swimming|la natation", "yoga|le yoga", "chess|les échecs",
    "photography|la photographie", "watercolour painting|l'aquarelle", "pottery|la poterie",
    "knitting|le tricot", "gardening|le jardinage", "baking|la pâtisserie",
    "birdwatching|l'observation des oiseaux", "playing the piano|le piano", "playing the guitar|la guitare",
    "singing in a choir|le chant choral", "board games|les jeux de société", "video games|les jeux vidéo",
    "skiing|le ski", "scuba diving|la plongée sous-marine", "fishing|la pêche", "calligraphy|la calligraphie",
    "woodworking|la menuiserie", "astronomy|l'astronomie", "reading crime novels|les romans policiers",
    "salsa dancing|la salsa", "tango|le tango", "judo|le judo", "fencing|l'escrime", "archery|le tir à l'arc",
    "origami|l'origami", "bouldering|le bloc", "crossword puzzles|les mots croisés",
    "amateur theatre|le théâtre amateur", "cooking Indian food|la cuisine indienne", "kayaking|le kayak",
    "stand-up paddling|le paddle",
])
SPORTS = _pairs([
    "tennis|au tennis", "badminton|au badminton", "squash|au squash", "football|au foot",
    "basketball|au basket", "volleyball|au volley", "padel|au padel", "golf|au golf",
    "table tennis|au ping-pong", "chess|aux échecs", "bridge|au bridge", "pétanque|à la pétanque",
])
OBJECTS = _pairs([
    "a red bicycle|un vélo rouge", "an old film camera|un vieil appareil photo argentique",
    "a vintage watch|une montre ancienne", "an e-reader|une liseuse", "a cast-iron pan|une poêle en fonte",
    "a wooden chess set|un jeu d'échecs en bois", "a blue wool scarf|une écharpe bleue en laine",
    "a leather notebook|un carnet en cuir", "a telescope|un télescope", "a sewing machine|une machine à coudre",
    "a ukulele|un ukulélé", "an electric scooter|une trottinette électrique", "a record player|une platine vinyle",
    "a coffee grinder|un moulin à café", "a hiking backpack|un sac de randonnée", "a drone|un drone",
    "a two-person tent|une tente deux places", "a sea kayak|un kayak de mer", "a gold necklace|un collier en or",
    "a laptop|un ordinateur portable", "a tablet|une tablette", "noise-cancelling headphones|un casque antibruit",
    "a fountain pen|un stylo plume", "a folding umbrella|un parapluie pliant", "an acoustic guitar|une guitare acoustique",
    "a painting by a local artist|un tableau d'un artiste local", "a bonsai tree|un bonsaï",
    "an espresso machine|une machine à expresso", "a snowboard|un snowboard", "a sourdough starter|un levain",
    "a mechanical keyboard|un clavier mécanique", "a pair of running shoes|une paire de chaussures de course",
])
ANIMALS = _pairs([
    "dog|un chien", "cat|un chat", "rabbit|un lapin", "parrot|un perroquet", "hamster|un hamster",
    "tortoise|une tortue", "horse|un cheval", "goldfish|un poisson rouge", "ferret|un furet", "canary|un canari",
    "guinea pig|un cochon d'Inde", "border collie|un border collie", "Maine Coon cat|un chat maine coon",
    "labrador|un labrador",
])
PET_NAMES = """Pixel Biscuit Moka Filou Caramel Luna Max Oslo Pistache Noisette Rocky Simba Chipie Gribouille Tofu
Pepper Olive Mango Ziggy Bandit Praline Sushi Nala Gaston Réglisse""".split()
PET_TREATS = ["carrots", "chicken treats", "tennis balls", "sunflower seeds", "long walks on the beach",
              "sleeping on the sofa", "cheese rinds", "catnip", "chasing pigeons", "car rides"]
ALLERGENS = _pairs([
    "peanuts|les arachides", "penicillin|la pénicilline", "cats|les chats", "pollen|le pollen",
    "shellfish|les fruits de mer", "bee stings|les piqûres d'abeille", "latex|le latex", "gluten|le gluten",
    "dust mites|les acariens", "kiwi|le kiwi", "sesame|le sésame", "eggs|les œufs",
])
CONDITIONS = _pairs([  # French form reads after "a": "Léa a des migraines"
    "back pain|mal au dos", "migraines|des migraines", "a sprained ankle|une entorse à la cheville",
    "hay fever|le rhume des foins", "asthma|de l'asthme", "insomnia|des insomnies",
    "high blood pressure|de l'hypertension", "a broken wrist|un poignet cassé", "tendinitis|une tendinite",
    "type 1 diabetes|un diabète de type 1", "eczema|de l'eczéma", "a knee injury|une blessure au genou",
    "anaemia|de l'anémie", "sciatica|une sciatique",
])
MEDICATIONS = ["vitamin D", "iron supplements", "an antihistamine", "a low dose of aspirin", "magnesium",
               "omega-3 capsules", "levothyroxine", "insulin", "melatonin", "a beta blocker"]
LANGUAGES = _pairs([
    "Spanish|l'espagnol", "German|l'allemand", "Italian|l'italien", "Japanese|le japonais",
    "Portuguese|le portugais", "Arabic|l'arabe", "Mandarin|le mandarin", "Dutch|le néerlandais",
    "Russian|le russe", "Korean|le coréen", "Swedish|le suédois", "Greek|le grec", "Polish|le polonais",
    "Turkish|le turc", "English|l'anglais",
])
STUDIES = ["law", "medicine", "architecture", "mathematics", "history", "economics", "biology",
           "computer science", "philosophy", "chemistry", "political science", "fine arts",
           "mechanical engineering", "literature", "psychology"]
DEPARTMENTS = _pairs(["marketing", "finance", "sales|commerciale", "research|recherche", "logistics|logistique",
                      "IT|informatique", "legal|juridique", "customer support|support client", "design",
                      "HR|RH"])
MUSIC = ["jazz", "classical music", "techno", "French rap", "bossa nova", "history podcasts", "lo-fi playlists",
         "opera", "K-pop", "indie rock", "film soundtracks"]
CUISINES = _pairs(["Italian|italien", "Japanese|japonais", "Lebanese|libanais", "Vietnamese|vietnamien",
                   "Ethiopian|éthiopien", "Peruvian|péruvien", "Korean|coréen", "Indian|indien", "Greek|grec",
                   "Mexican|mexicain", "Moroccan|marocain", "vegan|végan"])
FILM_GENRES = ["horror", "science-fiction", "documentary", "romantic comedy", "thriller", "animated", "western"]
STREETS = ["rue des Lilas", "rue Victor Hugo", "avenue Jean Jaurès", "boulevard Voltaire", "rue de la République",
           "Baker Street", "Elm Street", "Main Street", "Canal Street", "rue du Marché", "place Bellecour",
           "rue Mouffetard", "rue Oberkampf", "Calle Mayor", "Via Roma", "Kingsland Road", "rue Sainte-Catherine",
           "cours Julien", "rue Pasteur", "quai de la Fosse"]
SEASONS = ["spring", "summer", "autumn", "winter"]
MONTHS = _pairs(["January|janvier", "February|février", "March|mars", "April|avril", "May|mai", "June|juin",
                 "July|juillet", "August|août", "September|septembre", "October|octobre",
                 "November|novembre", "December|décembre"])
WEEKDAYS = _pairs(["Monday|lundi", "Tuesday|mardi", "Wednesday|mercredi", "Thursday|jeudi", "Friday|vendredi",
                   "Saturday|samedi", "Sunday|dimanche"])


class Relation(NamedTuple):
    en: str
    fr: str  # with its article; "masculine/feminine" when it depends on the person
    gender: str  # "f", "m", or "n" (either)
    family: bool  # shares the protagonist's surname


RELATIONS = [
    Relation("sister", "la sœur", "f", True), Relation("brother", "le frère", "m", True),
    Relation("mother", "la mère", "f", True), Relation("father", "le père", "m", True),
    Relation("daughter", "la fille", "f", True), Relation("son", "le fils", "m", True),
    Relation("cousin", "le cousin/la cousine", "n", False), Relation("aunt", "la tante", "f", False),
    Relation("uncle", "l'oncle", "m", False), Relation("grandmother", "la grand-mère", "f", True),
    Relation("grandfather", "le grand-père", "m", True), Relation("wife", "la femme", "f", False),
    Relation("husband", "le mari", "m", False), Relation("partner", "le compagnon/la compagne", "n", False),
    Relation("best friend", "le meilleur ami/la meilleure amie", "n", False),
    Relation("colleague", "le collègue/la collègue", "n", False),
    Relation("neighbour", "le voisin/la voisine", "n", False),
    Relation("flatmate", "le colocataire/la colocataire", "n", False),
    Relation("doctor", "le médecin/la médecin", "n", False),
    Relation("childhood friend", "l'ami d'enfance/l'amie d'enfance", "n", False),
    Relation("godmother", "la marraine", "f", False), Relation("godfather", "le parrain", "m", False),
    Relation("niece", "la nièce", "f", False), Relation("nephew", "le neveu", "m", False),
    Relation("mentor", "le mentor/la mentore", "n", False),
    Relation("piano teacher", "le professeur de piano/la professeure de piano", "n", False),
    Relation("landlord", "le propriétaire/la propriétaire", "n", False),
    Relation("running coach", "le coach de course/la coach de course", "n", False),
    Relation("sister-in-law", "la belle-sœur", "f", False), Relation("brother-in-law", "le beau-frère", "m", False),
]


def _gendered(text: str, gender: str) -> str:
    masculine, _, feminine = text.partition("/")
    return feminine if feminine and gender == "f" else masculine


def _an(noun: str) -> str:
    """English article by sound: an architect, an HR manager (an acronym reads letter by letter)."""
    word = noun.split()[0]
    vowel_sound = word[0] in "AEFHILMNORSX" if word.isupper() else word[0].lower() in "aeiou"
    return ("an " if vowel_sound else "a ") + noun


def _a(noun: str) -> str:
    """French "à" before a noun with its article or a place: au Havre, aux sushis, à la pénicilline."""
    if noun[:3].lower() == "le ":
        return "au " + noun[3:]
    if noun[:4].lower() == "les ":
        return "aux " + noun[4:]
    return "à " + noun


def _que(name: str) -> str:
    return ("qu'" if name[0].lower() in "aeiouyéèêàâîôœh" else "que ") + name


def _de(noun: str, *, elide_h: bool = False) -> str:
    """French "de": du Havre, des sushis, d'Annecy, d'Hugo (a first name's h is mute; a place's often not)."""
    if noun[:3].lower() == "le ":
        return "du " + noun[3:]
    if noun[:4].lower() == "les ":
        return "des " + noun[4:]
    vowels = "aeiouyéèêàâîôœ" + ("h" if elide_h else "")
    return ("d'" if noun[0].lower() in vowels else "de ") + noun


# --- subjects and their casts ---------------------------------------------------------------------------

class Person(NamedTuple):
    first: str
    last: str
    gender: str
    rel_en: str
    rel_fr: str
    city: tuple[str, str]
    job: tuple[str, str]  # French form already agreed with the person's gender


@dataclass(frozen=True)
class Cast:
    first: str
    last: str
    gender: str
    places: list[tuple[str, str]]  # the first is home
    people: list[Person]
    companies: list[str]
    pets: list[tuple[str, tuple[str, str]]]  # (name, animal)
    french_share: float


def subject_sizes(total: int, seed: int = 7) -> list[tuple[str, int]]:
    """(subject_id, fact count) for every subject, in load order; the rule is in the module docstring."""
    small_total = max(total // 4, min(2_500, total // 2))
    rest = total - small_total
    big = min(BIG_CAP, rest * 4 // 5)
    mid_total = rest - big
    sizes = [("big", big)] if big else []
    n_mid = -(-mid_total // MID_CAP)
    sizes += [(f"mid-{i}", mid_total // n_mid + (i < mid_total % n_mid)) for i in range(n_mid)]

    # The size stream does not depend on `total`: a larger run starts with the same small subjects.
    rng = random.Random(f"{seed}/sizes")
    remaining, index = small_total, 0
    while remaining > 0:
        size = min(SMALL_MAX, SMALL_MIN + int(rng.expovariate(1 / 25)))
        if remaining - size < SMALL_MIN:  # never leave a remainder too small to be a subject of its own
            size = remaining if remaining <= SMALL_MAX else remaining - SMALL_MIN
        sizes.append((f"s-{index:04d}", size))
        remaining -= size
        index += 1
    return sizes


def _cast(seed: int, subject_id: str) -> Cast:
    rng = random.Random(f"{seed}/{subject_id}/cast")
    gender = rng.choice("fm")
    first = rng.choice(FEMALE_NAMES if gender == "f" else MALE_NAMES)
    last = rng.choice(SURNAMES)
    places = rng.sample(PLACES, rng.randint(5, 11))
    pool = [(n, "f") for n in FEMALE_NAMES] + [(n, "m") for n in MALE_NAMES]
    people = []
    for name, person_gender in rng.sample(pool, rng.randint(8, 20) + 1):
        if name == first:
            continue
        relation = rng.choice([r for r in RELATIONS if r.gender in ("n", person_gender)])
        job_en, job_fr = rng.choice(OCCUPATIONS)
        people.append(Person(
            first=name,
            last=last if relation.family else rng.choice(SURNAMES),
            gender=person_gender,
            rel_en=relation.en,
            rel_fr=_gendered(relation.fr, person_gender),
            # most of the cast lives in one of the subject's places, which links "lives in" to travel facts
            city=rng.choice(places) if rng.random() < 0.7 else rng.choice(PLACES),
            job=(job_en, _gendered(job_fr, person_gender)),
        ))
    pets = [(name, rng.choice(ANIMALS)) for name in rng.sample(PET_NAMES, rng.randint(1, 3))]
    return Cast(first, last, gender, places, people, rng.sample(COMPANIES, rng.randint(2, 4)), pets,
                rng.choice((0.05, 0.1, 0.15, 0.25, 0.4)))


class _Slots(dict):
    """Template values, drawn on first use (str.format_map asks for each field), so a template pays only
    for the fields it has, and two fields of one template agree (city and a_city_fr name the same city)."""

    def __init__(self, cast: Cast, rng: random.Random):
        super().__init__()
        self.cast, self.rng = cast, rng
        self.p, self.q = rng.sample(cast.people, 2)

    def __missing__(self, key: str) -> str:
        value = self[key] = _SLOT_MAKERS[key](self)
        return value

    def place(self) -> tuple[str, str]:
        # mostly the subject's own places, sometimes anywhere: travel reaches beyond the usual cities
        return self.rng.choice(self.cast.places) if self.rng.random() < 0.75 else self.rng.choice(PLACES)


def _hour(s: _Slots) -> tuple[int, int]:
    return s.rng.randint(7, 20), s.rng.choice((0, 15, 30, 45))


_SLOT_MAKERS = {
    "me": lambda s: s.cast.first,
    "de_me": lambda s: _de(s.cast.first, elide_h=True),
    "que_me": lambda s: _que(s.cast.first),
    "home": lambda s: s.cast.places[0][0],
    "p": lambda s: s.p.first,
    "q": lambda s: s.q.first,
    "p_full": lambda s: f"{s.p.first} {s.p.last}",
    "de_p": lambda s: _de(s.p.first, elide_h=True),
    "que_p": lambda s: _que(s.p.first),
    "rel": lambda s: s.p.rel_en,
    "rel_fr": lambda s: s.p.rel_fr,
    "pcity": lambda s: s.p.city[0],
    "a_pcity_fr": lambda s: _a(s.p.city[1]),
    "a_pjob": lambda s: _an(s.p.job[0]),
    "pjob_fr": lambda s: s.p.job[1],
    "_city": lambda s: s.place(),
    "city": lambda s: s["_city"][0],
    "city_fr": lambda s: s["_city"][1],
    "a_city_fr": lambda s: _a(s["_city"][1]),
    "de_city_fr": lambda s: _de(s["_city"][1]),
    "_city2": lambda s: s.rng.choice([c for c in PLACES if c != s["_city"]]),
    "city2": lambda s: s["_city2"][0],
    "a_city2_fr": lambda s: _a(s["_city2"][1]),
    "_job": lambda s: s.rng.choice(OCCUPATIONS),
    "a_job": lambda s: _an(s["_job"][0]),
    "de_job_fr": lambda s: _de(_gendered(s["_job"][1], s.cast.gender), elide_h=True),
    "company": lambda s: s.rng.choice(s.cast.companies) if s.rng.random() < 0.7 else s.rng.choice(COMPANIES),
    "_food": lambda s: s.rng.choice(FOODS),
    "food": lambda s: s["_food"][0],
    "food_fr": lambda s: s["_food"][1],
    "_food2": lambda s: s.rng.choice([f for f in FOODS if f != s["_food"]]),
    "food2": lambda s: s["_food2"][0],
    "a_food2_fr": lambda s: _a(s["_food2"][1]),
    "_hobby": lambda s: s.rng.choice(HOBBIES),
    "hobby": lambda s: s["_hobby"][0],
    "hobby_fr": lambda s: s["_hobby"][1],
    "_sport": lambda s: s.rng.choice(SPORTS),
    "sport": lambda s: s["_sport"][0],
    "sport_fr": lambda s: s["_sport"][1],
    "_obj": lambda s: s.rng.choice(OBJECTS),
    "obj": lambda s: s["_obj"][0],
    "obj_fr": lambda s: s["_obj"][1],
    "_lang": lambda s: s.rng.choice(LANGUAGES),
    "lang": lambda s: s["_lang"][0],
    "lang_fr": lambda s: s["_lang"][1],
    "lang2": lambda s: s.rng.choice([lang for lang in LANGUAGES if lang != s["_lang"]])[0],
    "_cond": lambda s: s.rng.choice(CONDITIONS),
    "cond": lambda s: s["_cond"][0],
    "cond_fr": lambda s: s["_cond"][1],
    "_allergen": lambda s: s.rng.choice(ALLERGENS),
    "allergen": lambda s: s["_allergen"][0],
    "a_allergen_fr": lambda s: _a(s["_allergen"][1]),
    "med": lambda s: s.rng.choice(MEDICATIONS),
    "study": lambda s: s.rng.choice(STUDIES),
    "_dept": lambda s: s.rng.choice(DEPARTMENTS),
    "dept": lambda s: s["_dept"][0],
    "dept_fr": lambda s: s["_dept"][1],
    "music": lambda s: s.rng.choice(MUSIC),
    "_cuisine": lambda s: s.rng.choice(CUISINES),
    "a_cuisine": lambda s: _an(s["_cuisine"][0]),
    "cuisine_fr": lambda s: s["_cuisine"][1],
    "genre": lambda s: s.rng.choice(FILM_GENRES),
    "street": lambda s: s.rng.choice(STREETS),
    "season": lambda s: s.rng.choice(SEASONS),
    "doctor": lambda s: s.rng.choice(SURNAMES),
    "_pet": lambda s: s.rng.choice(s.cast.pets),
    "pet": lambda s: s["_pet"][0],
    "pet_animal": lambda s: s["_pet"][1][0],
    "pet_animal_fr": lambda s: s["_pet"][1][1],
    "pet_treat": lambda s: s.rng.choice(PET_TREATS),
    "pet_age": lambda s: s.rng.randint(1, 15),
    "_month": lambda s: s.rng.choice(MONTHS),
    "month": lambda s: s["_month"][0],
    "month_fr": lambda s: s["_month"][1],
    "_weekday": lambda s: s.rng.choice(WEEKDAYS),
    "weekday": lambda s: s["_weekday"][0],
    "weekday_fr": lambda s: s["_weekday"][1],
    "_hour": _hour,
    "hour": lambda s: "{}:{:02d}".format(*s["_hour"]),
    "hour_fr": lambda s: "{}h{:02d}".format(*s["_hour"]),
    "day": lambda s: s.rng.randint(1, 28),
    "year": lambda s: s.rng.randint(2012, 2025),
    "year_past": lambda s: s.rng.randint(1985, 2020),
    "year_birth": lambda s: s.rng.randint(1940, 2022),
    "year_future": lambda s: s.rng.randint(2026, 2030),
    "n_kids": lambda s: s.rng.randint(1, 4),
    "n_days": lambda s: s.rng.randint(2, 21),
    "n_months": lambda s: s.rng.choice((3, 6, 12)),
    "km": lambda s: s.rng.randint(3, 60),
    "price": lambda s: s.rng.choice((15, 25, 40, 60, 85, 120, 150, 240, 300, 450, 800, 1200, 2500)),
    "salary": lambda s: s.rng.randrange(1800, 6500, 50),
}


# --- templates ------------------------------------------------------------------------------------------
# (category, kind, template). Volatility is drawn per category (VOLATILITY below).

EN_FACTS = [
    ("family", "fact", "{p} is {me}'s {rel}."),
    ("family", "fact", "{me}'s {rel} {p} lives in {pcity}."),
    ("family", "fact", "{p} was born on {day} {month} {year_birth} in {city}."),
    ("family", "fact", "{p}'s birthday is on {month} {day}."),
    ("family", "fact", "{p} and {q} got married in {city} in {year}."),
    ("family", "fact", "{p} has {n_kids} children and lives near {city}."),
    ("relationships", "fact", "{p} introduced {me} to {q} at a party in {city}."),
    ("relationships", "fact", "{me} has known {p_full} since {year_past}, when they met in {city}."),
    ("relationships", "fact", "{p} and {q} have not spoken to each other since {month} {year}."),
    ("work", "fact", "{p} works as {a_pjob} at {company}."),
    ("work", "fact", "{me} started a new job as {a_job} at {company} in {month} {year}."),
    ("work", "fact", "{p} used to work at {company} before moving to {city}."),
    ("work", "fact", "{me} works from home on {weekday}s."),
    ("work", "fact", "{me}'s manager at {company} is {p_full}."),
    ("work", "fact", "{p} is training to become {a_job}."),
    ("work", "fact", "{me} earns about {salary} euros a month at {company}."),
    ("work", "fact", "{p} was promoted to head of the {dept} team at {company} in {year}."),
    ("place", "fact", "{me} lives in {home} with {p}."),
    ("place", "fact", "{me} moved from {city} to {city2} in {year}."),
    ("place", "fact", "{p} rents a small flat on {street} in {pcity}."),
    ("place", "fact", "{me}'s favourite café in {home} is on {street}."),
    ("place", "fact", "{p} owns a holiday house near {city}."),
    ("preference", "preference", "{me} loves {food}."),
    ("preference", "preference", "{p} does not like {food}."),
    ("preference", "preference", "{me} prefers {food} to {food2}."),
    ("preference", "preference", "{p}'s favourite hobby is {hobby}."),
    ("preference", "preference", "{me} would like to try {hobby} this {season}."),
    ("preference", "preference", "{me} prefers meetings before {hour} in the morning."),
    ("preference", "preference", "{p} hates {food} but loves {food2}."),
    ("preference", "preference", "{me} always orders {food} at restaurants in {city}."),
    ("preference", "preference", "{p} listens to {music} while working."),
    ("preference", "preference", "{me} would love {obj} as a birthday present."),
    ("health", "fact", "{me} is allergic to {allergen}."),
    ("health", "fact", "{p} has {cond} and sees Dr {doctor} every {n_months} months."),
    ("health", "fact", "{me} saw Dr {doctor} about {cond} on {day} {month} {year}."),
    ("health", "fact", "{p} has been running {km} km every week since {month}."),
    ("health", "fact", "{me} stopped drinking coffee in {year} because of {cond}."),
    ("health", "fact", "{p} takes {med} every morning."),
    ("pet", "fact", "{me} has a {pet_animal} called {pet}."),
    ("pet", "fact", "{pet} the {pet_animal} is {pet_age} years old and loves {pet_treat}."),
    ("pet", "fact", "{p} looks after {pet} when {me} travels."),
    ("pet", "fact", "{pet} had a check-up at the vet in {home} on {day} {month} {year}."),
    ("travel", "fact", "{me} visited {city} with {p} in {month} {year}."),
    ("travel", "fact", "{p} is planning a trip to {city} in {month}."),
    ("travel", "fact", "{me} has never been to {city} but would like to go."),
    ("travel", "fact", "{p} spent {n_days} days in {city} and loved the {food} there."),
    ("travel", "fact", "{me} flies to {city} every {month} for work at {company}."),
    ("education", "fact", "{p} studied {study} at university in {city}."),
    ("education", "fact", "{me} is learning {lang} and practises with {p} on {weekday}s."),
    ("education", "fact", "{p} speaks fluent {lang} and some {lang2}."),
    ("schedule", "fact", "{me} plays {sport} with {p} every {weekday} at {hour}."),
    ("schedule", "fact", "{p}'s wedding is planned for {day} {month} {year_future} in {city}."),
    ("schedule", "fact", "{me} has a dentist appointment on {weekday} at {hour}."),
    ("possession", "fact", "{me} bought {obj} in {city} for {price} euros."),
    ("possession", "fact", "{p} lent {me} {obj} in {month}."),
    ("finance", "fact", "{me} owes {p} {price} euros for the trip to {city}."),
    ("finance", "fact", "{me} is saving to buy a flat in {city} by {year_future}."),
]
FR_FACTS = [
    ("family", "fact", "{p} est {rel_fr} {de_me}."),
    ("family", "fact", "{p} habite {a_pcity_fr} depuis {year}."),
    ("family", "fact", "L'anniversaire {de_p} est le {day} {month_fr}."),
    ("work", "fact", "{p} travaille comme {pjob_fr} chez {company}."),
    ("work", "fact", "{me} a commencé un nouveau poste {de_job_fr} chez {company} en {month_fr} {year}."),
    ("work", "fact", "{p} a pris la tête de l'équipe {dept_fr} chez {company} en {year}."),
    ("preference", "preference", "{me} adore {food_fr}."),
    ("preference", "preference", "{p} n'aime pas du tout {food_fr}."),
    ("preference", "preference", "{me} préfère {food_fr} {a_food2_fr}."),
    ("preference", "preference", "Le loisir préféré {de_p} est {hobby_fr}."),
    ("preference", "preference", "{me} voudrait essayer {hobby_fr} cet été."),
    ("travel", "fact", "{me} a visité {city_fr} avec {p} en {month_fr} {year}."),
    ("travel", "fact", "{p} part {a_city_fr} en {month_fr} pour {n_days} jours."),
    ("travel", "fact", "{me} n'a jamais visité {city_fr} mais aimerait y aller."),
    ("health", "fact", "{me} est allergique {a_allergen_fr}."),
    ("health", "fact", "{p} a rendez-vous chez le docteur {doctor} le {day} {month_fr} à {hour_fr}."),
    ("health", "fact", "{me} a {cond_fr} depuis {year}."),
    ("pet", "fact", "{me} a {pet_animal_fr} qui s'appelle {pet}."),
    ("pet", "fact", "{p} garde {pet} quand {me} part en voyage."),
    ("education", "fact", "{p} parle couramment {lang_fr}."),
    ("schedule", "fact", "{me} joue {sport_fr} avec {p} tous les {weekday_fr}s à {hour_fr}."),
    ("place", "fact", "{me} a déménagé {de_city_fr} {a_city2_fr} en {year}."),
    ("possession", "fact", "{me} a acheté {obj_fr} {a_city_fr} pour {price} euros."),
    ("relationships", "fact", "{me} connaît {p_full} depuis {year_past}."),
]
EN_EVENTS = [
    "{me} went hiking with {p} near {city}.",
    "{me} had dinner with {p} and {q} at {a_cuisine} restaurant in {city}.",
    "{p} called {me} to say they got a new job at {company}.",
    "{me} visited {p} in {pcity} for the weekend.",
    "{me} saw Dr {doctor} about {cond}.",
    "{p} and {q} got engaged during a trip to {city}.",
    "{me} lost {obj} on the train to {city}.",
    "{me} celebrated {p}'s birthday with {a_cuisine} dinner.",
    "{pet} escaped from the garden and {p} found them on {street}.",
    "{me} took {pet} to the vet in {home} because of a limp.",
    "{me} gave a presentation at {company} about the {dept} budget.",
    "{me} and {p} watched a {genre} film in {city}.",
    "{p} helped {me} move furniture into the new flat.",
    "{me} missed the flight to {city} and took the next one.",
    "{me} ran the {city} half-marathon with {p}.",
    "{me} cooked {food} for {p} and {q}.",
    "{me} argued with {p} about the holidays in {city}.",
    "{p}'s baby was born at the hospital in {pcity}.",
]
FR_EVENTS = [
    "{me} a fait une randonnée avec {p} près {de_city_fr}.",
    "{me} a dîné avec {p} dans un restaurant {cuisine_fr} {a_city_fr}.",
    "{p} a appelé {me} pour annoncer son nouveau poste chez {company}.",
    "{me} a rendu visite à {p} {a_pcity_fr} le temps d'un week-end.",
    "{me} a perdu {obj_fr} dans le train pour {city_fr}.",
    "{me} a fêté l'anniversaire {de_p} autour d'un bon repas.",
    "{me} a emmené {pet} chez le vétérinaire.",
    "{p} et {q} se sont fiancés pendant un voyage {a_city_fr}.",
]
EN_QUERIES = [
    "Where does {p} work now?", "Where does {p} live?", "What is {p}'s job?", "Who is {p}?",
    "What does {me} like to eat?", "When did {me} visit {city}?", "Is {me} allergic to anything?",
    "What is the name of {me}'s {pet_animal}?", "Which languages does {p} speak?", "When is {p}'s birthday?",
    "Who looks after {pet} when {me} travels?", "What did {me} buy in {city}?", "How much does {me} owe {p}?",
    "Where did {p} and {q} get married?", "What hobby does {p} enjoy?", "Who is {me}'s manager?",
    "Where does {me}'s {rel} live?", "What does {me}'s {rel} do for a living?", "When did {me} move to {city}?",
    "Does {p} like {food}?", "What health problems does {p} have?", "When is {me}'s next dentist appointment?",
    "Who does {me} play {sport} with?", "What did {me} do with {p} last weekend?",
]
FR_QUERIES = [
    "Quand est-ce {que_p} a visité {city_fr} ?", "Où travaille {p} maintenant ?", "Où habite {p} ?",
    "Qu'est-ce {que_me} aime manger ?", "Quel est le loisir préféré {de_p} ?", "Qui est {rel_fr} {de_me} ?",
    "Quelles langues parle {p} ?", "Comment s'appelle l'animal {de_me} ?", "Quand est l'anniversaire {de_p} ?",
    "Est-ce {que_me} est allergique à quelque chose ?", "Qu'est-ce {que_me} a acheté {a_city_fr} ?",
]

# (permanent, stable, volatile) weights: plans and schedules change, family and health facts stay.
VOLATILITY = {"schedule": (40, 20, 40), "travel": (60, 25, 15), "work": (70, 30, 0), "place": (70, 30, 0),
              "preference": (75, 25, 0)}
VOLATILITY_DEFAULT = (95, 5, 0)
VOLATILITY_NAMES = ("permanent", "stable", "volatile")
# Recorded within these many days, so that most stay inside their TTL (stable 365, volatile 7 by default).
RECENT_DAYS = {"permanent": HISTORY_DAYS, "stable": 400, "volatile": 9}


# --- generators -----------------------------------------------------------------------------------------

def _today(now: datetime | None) -> datetime:
    return now or datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def _distinct(draw: Callable[[], tuple[str, bool, object]], seen: set[str], rng: random.Random) -> tuple[str, object]:
    """A text the subject does not hold yet (the database allows one active fact per normalised text and
    scope), with the payload `draw` returned alongside it. A few fresh draws first, so that a large subject
    moves on to other templates once it has said everything a small one can; then a dated variant."""
    for _ in range(REDRAWS):
        text, french, payload = draw()
        if normalise_text(text) not in seen:
            break
    else:
        base = text.rstrip(".")
        while normalise_text(text) in seen:
            date = f"{rng.randint(1, 28):02d}/{rng.randint(1, 12):02d}/{rng.randint(2024, 2026)}"
            text = f"{base} (note du {date})." if french else f"{base} (noted {date})."
    seen.add(normalise_text(text))
    return text, payload


def _draw_fact(cast: Cast, rng: random.Random) -> tuple[str, bool, tuple[str, str]]:
    french = rng.random() < cast.french_share
    category, kind, template = rng.choice(FR_FACTS if french else EN_FACTS)
    return template.format_map(_Slots(cast, rng)), french, (category, kind)


def _draw_event(cast: Cast, rng: random.Random) -> tuple[str, bool, None]:
    french = rng.random() < cast.french_share
    return rng.choice(FR_EVENTS if french else EN_EVENTS).format_map(_Slots(cast, rng)), french, None


def _ago(rng: random.Random, anchor: datetime, days: int) -> datetime:
    return anchor - timedelta(seconds=rng.randrange(days * 86_400))


def generate_facts(total: int, seed: int = 7, now: datetime | None = None) -> Iterator[dict]:
    """Facts for every subject of `subject_sizes(total, seed)`, subject after subject. Each is a dict of
    project_id, subject_id, text, recorded_from, valid_from (None for most), last_confirmed_at (=
    recorded_from), volatility, kind, category, importance."""
    anchor = _today(now)
    for subject_id, count in subject_sizes(total, seed):
        cast = _cast(seed, subject_id)
        rng = random.Random(f"{seed}/{subject_id}/facts")
        seen: set[str] = set()

        for _ in range(count):
            text, (category, kind) = _distinct(partial(_draw_fact, cast, rng), seen, rng)
            volatility = rng.choices(VOLATILITY_NAMES, VOLATILITY.get(category, VOLATILITY_DEFAULT))[0]
            recorded_from = _ago(rng, anchor, RECENT_DAYS[volatility])
            valid_from = recorded_from - timedelta(days=rng.randrange(365)) if rng.random() < 0.3 else None
            yield {
                "project_id": PROJECT, "subject_id": subject_id, "text": text,
                "recorded_from": recorded_from, "valid_from": valid_from, "last_confirmed_at": recorded_from,
                "volatility": volatility, "kind": kind, "category": category,
                "importance": round(rng.betavariate(2, 2), 2),
            }


def generate_events(total: int, seed: int = 7, now: datetime | None = None) -> Iterator[dict]:
    """Events for every subject: a tenth of its fact count, at least 2. Each is a dict of project_id,
    subject_id, text, occurred_at, recorded_at (a few hours to days later, never after `now`)."""
    anchor = _today(now)
    for subject_id, count in subject_sizes(total, seed):
        cast = _cast(seed, subject_id)
        rng = random.Random(f"{seed}/{subject_id}/events")
        seen: set[str] = set()

        for _ in range(max(2, round(count / 10))):
            text, _ = _distinct(partial(_draw_event, cast, rng), seen, rng)
            occurred_at = _ago(rng, anchor, HISTORY_DAYS)
            yield {
                "project_id": PROJECT, "subject_id": subject_id, "text": text, "occurred_at": occurred_at,
                "recorded_at": min(anchor, occurred_at + timedelta(seconds=rng.randrange(3 * 86_400))),
            }


def generate_queries(n: int, seed: int = 7, subject_id: str = "big") -> list[str]:
    """`n` distinct questions (a quarter in French) about the cast of `subject_id` as generated with the
    same `seed`, so that they name people and places the subject's facts hold. Fewer if the templates
    cannot make `n` distinct ones."""
    cast = _cast(seed, subject_id)
    rng = random.Random(f"{seed}/{subject_id}/queries")
    queries: dict[str, None] = {}  # insertion-ordered set
    for _ in range(n * 20):
        if len(queries) == n:
            break
        template = rng.choice(FR_QUERIES if rng.random() < 0.25 else EN_QUERIES)
        queries[template.format_map(_Slots(cast, rng))] = None
    return list(queries)


# --- embeddings -----------------------------------------------------------------------------------------

def _chunk_bounds(texts: list[str]) -> list[tuple[int, int]]:
    bounds, start = [], 0
    for i, text in enumerate(texts):
        size = i + 1 - start
        if size >= CHUNK_MAX or (size >= CHUNK_MIN and zlib.crc32(text.encode("utf-8")) % CHUNK_SPREAD == 0):
            bounds.append((start, i + 1))
            start = i + 1
    if start < len(texts):
        bounds.append((start, len(texts)))
    return bounds


def embed_cached(texts: list[str], provider: str, cache_dir: Path) -> np.ndarray:
    """Unit vectors (float32, (len(texts), 384)) for `texts`, encoded chunk by chunk; each chunk is kept in
    `cache_dir` as <provider>-<sha256 of the chunk's texts>.npy and never encoded again."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    embedder = _build(provider, EMBED_DIM, "", "", "", 10.0)
    out = np.empty((len(texts), EMBED_DIM), dtype=np.float32)
    bounds = _chunk_bounds(texts)
    for number, (start, end) in enumerate(bounds, 1):
        digest = hashlib.sha256()
        for text in texts[start:end]:
            digest.update(text.encode("utf-8") + b"\0")
        path = cache_dir / f"{provider}-{digest.hexdigest()}.npy"
        began = time.perf_counter()
        if path.exists():
            out[start:end] = np.load(path)
            how = "cached"
        else:
            out[start:end] = embedder.embed(texts[start:end])
            staging = path.with_suffix(".partial")  # an interrupted run must not leave a truncated cache file
            with staging.open("wb") as fh:
                np.save(fh, out[start:end])
            staging.replace(path)
            how = "encoded"
        _log(f"embed {provider}: chunk {number}/{len(bounds)} ({end - start} texts) {how} in "
             f"{time.perf_counter() - began:.1f}s")
    return out


# --- loading --------------------------------------------------------------------------------------------

# pgvector's text form ("%.7g" per value; the halfvec column rounds), with one % per row instead of one per value:
# formatting is the COPY's main cost on the Python side.
_VECTOR_ROW = "[" + ",".join(["%.7g"] * EMBED_DIM) + "]"

FACT_COPY = ("COPY facts_fact (id, project_id, subject_id, text, text_hash, embedding, status, category, kind, "
             "importance, volatility, valid_from, recorded_from, last_confirmed_at, metadata) FROM STDIN")
EVENT_COPY = ("COPY facts_event (id, project_id, subject_id, text, occurred_at, embedding, metadata, recorded_at) "
              "FROM STDIN")


def _index_definitions(cursor) -> dict[str, str]:
    """The hnsw indexes' CREATE INDEX statements, as the migrations made them, by index name."""
    cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [list(HNSW_INDEXES)])
    return dict(cursor.fetchall())


def _copy_rows(cursor, facts, fact_vectors, events, event_vectors, seed: int) -> None:
    ids = random.Random(f"{seed}/ids")

    def new_id() -> uuid.UUID:
        return uuid.UUID(int=ids.getrandbits(128), version=4)

    fact_ids = [new_id() for _ in facts]
    event_ids = [new_id() for _ in events]
    # Rows go in in the order a live service would have written them (by time, subjects interleaved), so
    # a subject's rows are spread over the table as in production, not packed into adjacent pages.
    with cursor.copy(FACT_COPY) as copy:
        for i in sorted(range(len(facts)), key=lambda i: facts[i]["recorded_from"]):
            f = facts[i]
            copy.write_row((
                fact_ids[i], f["project_id"], f["subject_id"], f["text"], text_hash(f["text"]),
                _VECTOR_ROW % tuple(fact_vectors[i].tolist()), "active", f["category"], f["kind"],
                f["importance"], f["volatility"], f["valid_from"], f["recorded_from"], f["last_confirmed_at"], "{}",
            ))
    with cursor.copy(EVENT_COPY) as copy:
        for i in sorted(range(len(events)), key=lambda i: events[i]["recorded_at"]):
            e = events[i]
            copy.write_row((
                event_ids[i], e["project_id"], e["subject_id"], e["text"], e["occurred_at"],
                _VECTOR_ROW % tuple(event_vectors[i].tolist()), "{}", e["recorded_at"],
            ))


def load(total: int, provider: str, cache_dir: Path, seed: int = 7, *, rebuild_indexes: bool | None = None,
         now: datetime | None = None) -> dict:
    """Replace project "bench" with the dataset for `total` facts; returns counts, timings (seconds) and the
    hnsw index sizes (MB).

    With more than REBUILD_ABOVE_ROWS rows (or rebuild_indexes=True), the two hnsw indexes are dropped
    before the COPY and built again after it, in the same transaction: 200k facts + 20k events load in
    ~12 s + ~40 s of builds, against ~270 s of COPY into the live indexes. The tables stay locked (reads and
    writes of every project wait) until that transaction commits, and the build covers every project's
    rows: do not load while something else uses the database."""
    from facts.services import project_erase  # needs the apps loaded: django.setup(), which main runs

    began = time.perf_counter()
    anchor = _today(now)
    facts = list(generate_facts(total, seed, anchor))
    events = list(generate_events(total, seed, anchor))
    result = {"total": total, "provider": provider, "seed": seed, "facts": len(facts), "events": len(events),
              "subjects": len(subject_sizes(total, seed)), "generate_s": round(time.perf_counter() - began, 2)}
    _log(f"generated {len(facts)} facts and {len(events)} events in {result['generate_s']}s")

    mark = time.perf_counter()
    fact_vectors = embed_cached([f["text"] for f in facts], provider, cache_dir)
    event_vectors = embed_cached([e["text"] for e in events], provider, cache_dir)
    result["embed_s"] = round(time.perf_counter() - mark, 2)

    rebuild = len(facts) + len(events) > REBUILD_ABOVE_ROWS if rebuild_indexes is None else rebuild_indexes
    result["index_strategy"] = "rebuild" if rebuild else "keep"
    with connection.cursor() as cursor:
        mark = time.perf_counter()
        with transaction.atomic():
            # The previous run's rows, with the traces of its context calls on these facts.
            project_erase(project_id=PROJECT)
        # Frees the deleted rows' space for the COPY, and their entries in the hnsw graphs, which a COPY into
        # a kept index would otherwise grow around. A few seconds even for 200k deleted rows.
        cursor.execute("VACUUM facts_fact, facts_event")
        result["delete_s"] = round(time.perf_counter() - mark, 2)
        _log(f"deleted the previous rows in {result['delete_s']}s; copying ({result['index_strategy']} hnsw)")

        # One transaction from DROP to CREATE: other sessions wait on the lock rather than ever finding the
        # tables without their hnsw indexes, and an interrupted load rolls the indexes back with the rows.
        with transaction.atomic():
            definitions = _index_definitions(cursor) if rebuild else {}
            for name in definitions:
                cursor.execute(f"DROP INDEX {name}")
            mark = time.perf_counter()
            _copy_rows(cursor, facts, fact_vectors, events, event_vectors, seed)
            result["copy_s"] = round(time.perf_counter() - mark, 2)
            _log(f"copied in {result['copy_s']}s")
            if rebuild:
                # The copied rows queued the deferred foreign-key checks (superseded_by, source_event), and
                # CREATE INDEX refuses a table with pending trigger events: run them now rather than at
                # commit (the same work, earlier).
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                cursor.execute("SET LOCAL maintenance_work_mem = '1GB'")
                for name, definition in definitions.items():
                    mark = time.perf_counter()
                    cursor.execute(definition)
                    result[f"{name}_build_s"] = round(time.perf_counter() - mark, 2)
                    _log(f"built {name} in {result[f'{name}_build_s']}s")
        mark = time.perf_counter()
        # What autovacuum would do after a bulk insert: statistics for the planner, and the visibility map
        # that lets the exact dense leg read facts_fact_scope_vectors without visiting the heap.
        cursor.execute("VACUUM (ANALYZE) facts_fact, facts_event")
        result["analyze_s"] = round(time.perf_counter() - mark, 2)
        for name in HNSW_INDEXES:
            cursor.execute("SELECT pg_relation_size(%s::regclass)", [name])
            result[f"{name}_mb"] = round(cursor.fetchone()[0] / 2**20, 1)
    result["total_s"] = round(time.perf_counter() - began, 2)
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--total", type=int, default=200_000, help="number of facts (default 200000)")
    parser.add_argument("--embedder", choices=("sentence-transformers", "hashing"), default="hashing")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--cache-dir", type=Path, default=Path(__file__).resolve().parent.parent / "var" / "bench-cache")
    parser.add_argument("--hnsw", choices=("auto", "keep", "rebuild"), default="auto",
                        help=f"drop and rebuild the hnsw indexes around the COPY (auto: above {REBUILD_ABOVE_ROWS} rows)")
    args = parser.parse_args(argv)

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hakimem.settings")
    os.environ["HAKI_EMBED_PROVIDER"] = args.embedder
    import django

    django.setup()
    rebuild = {"auto": None, "keep": False, "rebuild": True}[args.hnsw]
    print(json.dumps(load(args.total, args.embedder, args.cache_dir, args.seed, rebuild_indexes=rebuild), indent=2))


if __name__ == "__main__":
    main()
