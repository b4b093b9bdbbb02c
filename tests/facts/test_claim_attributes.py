"""The claims reader on the attributes people and extractors state about themselves: native language, religion,
chronic conditions, education, phone and email, shifts, what a diet leaves out, ages in words and decades. Each
contradiction must be read as one, each compatible pair (a more specific value, another person, another kind of
number, a past state, a qualified food) must not. Sentences written for this test, not taken from the evaluation
sets."""

import pytest

from facts.claims import contradiction, read

CONTRADICTIONS = [
    # native language
    ("Lena's mother tongue is German.", "Lena's native language is Dutch; she learnt German at twenty."),
    ("Portuguese is my first language.", "my native language is actually Cape Verdean creole"),
    ("La langue maternelle de Yanis est le kabyle.", "Yanis dit que sa langue maternelle est l'arabe."),
    ("L'espagnol est ma langue maternelle.", "Ma langue maternelle, c'est le catalan."),
    # religion
    ("Omar is a practising Muslim.", "Omar is an atheist these days."),
    ("The user is Jewish.", "User does not follow any religion."),
    ("Agnès est protestante.", "Agnès s'est convertie au bouddhisme."),
    # chronic conditions, named or any
    ("I have epilepsy and can't drive.", "never had epilepsy, that was my cousin"),
    ("User was diagnosed with coeliac disease.", "The user has no medical conditions."),
    ("Hugo souffre d'arthrose.", "Hugo n'a jamais eu le moindre problème de santé."),
    ("Inès est asthmatique.", "Inès n'a jamais eu d'asthme."),
    # education: a degree held against no higher education, or a lower highest qualification
    ("Priya holds a PhD in economics.", "Priya never went to university."),
    ("The user has a master's degree.", "The user's highest qualification is a bachelor's degree."),
    ("Marc a un master de droit.", "Marc a arrêté ses études après le bac."),
    # contact
    ("Tom's mobile number is 07700 900123.", "Tom has a new mobile number: 07700 900456."),
    ("My email is jo.b@example.org.", "my email is now jo.bright@example.net"),
    # shifts
    ("Sara works night shifts at the depot.", "Sara works days now, seven to three."),
    ("Le fils de Paul travaille de nuit.", "Le fils de Paul ne travaille qu'en journée."),
    # diets against what is eaten
    ("Mia is vegan.", "Mia eats eggs every morning."),
    ("I'm vegetarian.", "I eat salmon twice a week"),
    ("Ravi follows a keto diet.", "Ravi eats rice with every meal."),
    ("Léo suit un régime sans gluten.", "Léo mange du pain tous les jours."),
    # ages in words, a decade, a time of life
    ("Kate is thirty-two.", "Kate is 45."),
    ("Bilal is in his late twenties.", "Bilal is 41."),
    ("J'ai 22 ans.", "à 40 ans passés, je dors mal"),
    ("Je suis née en 1975.", "Moi, je suis de 1981."),
    # French relation possessive: the brother's job, then another
    ("Le frère de Nina est boulanger.", "Le frère de Nina est devenu plombier."),
]

COMPATIBLE = [
    ("Lena's mother tongue is German.", "Lena also speaks fluent Dutch."),
    ("I am a Christian.", "I'm a practising Catholic."),
    ("Omar is a practising Muslim.", "Omar's brother is an atheist."),
    ("Omar is an atheist.", "Omar used to be a practising Muslim."),
    ("I have epilepsy.", "My sister has never had epilepsy."),
    ("Hugo is diabetic.", "Hugo has type 2 diabetes."),
    ("Priya holds a PhD in economics.", "Priya has a master's degree from LSE."),
    ("Priya never went to university.", "Priya's daughter holds a PhD."),
    ("Tom's mobile number is 07700 900123.", "Tom's work phone number is 020 7946 0018."),
    ("Le numéro de Zoé est le 06 12 34 56 78.", "Zoé's number is +33 6 12 34 56 78."),
    ("My email is jo.b@example.org.", "My work email is jbright@acme.example."),
    ("Sara works night shifts.", "Sara's husband works day shifts."),
    ("Elle travaille de jour comme de nuit.", "Elle travaille de nuit."),
    ("Mia is vegan.", "Mia eats vegan cheese on toast."),
    ("Léo suit un régime sans gluten.", "Léo mange des pâtes sans gluten."),
    ("Noa est végétalienne.", "Noa mange du fromage végétal."),
    ("I'm vegetarian.", "I eat eggs most days."),
    ("Bilal is in his late twenties.", "Bilal is 28."),
    ("Thérèse est catholique.", "Thérèse a déménagé il y a cinq ans."),
    ("Henri habite à Rouen.", "Le frère d'Henri habite au Havre."),
    ("Elif is Turkish.", "Elif has a new phone."),
]


@pytest.mark.parametrize(("old", "new"), CONTRADICTIONS)
def test_a_contradiction_is_read(old, new):
    assert contradiction(read(new), read(old)) is not None, (read(old), read(new))


@pytest.mark.parametrize(("old", "new"), COMPATIBLE)
def test_a_compatible_pair_is_not(old, new):
    assert contradiction(read(new), read(old)) is None, contradiction(read(new), read(old))
