"""HotpotQA fallback rules for bridge answers with no same-type entity among the distractors: counts whose distractor
figures are all unusable, ordinals standing alone, US television networks and channels, people named with a cue in distractor text, names sharing a head word ('... War', 'USS ...', '...saurus'), first names, periodicals, quoted works, and the coverage they add on
the shared slice."""

from __future__ import annotations

import pytest

from core.protocols.misleading_evidence.builder import (
    BROADCAST_NETWORKS,
    CABLE_CHANNELS,
    indefinite_article,
    one_span_diff,
)
from core.protocols.misleading_evidence.builder_plans import build_stress, plan_for
from tests.misleading_evidence.conftest import source_specs
from tests.misleading_evidence.test_edit_rules import _item

SINGER = ("Jane Roe", "Jane Roe (born 1950) is an English singer who toured France.")
SCORES = ("Gamma Delta", "Gamma Delta scored 25 goals.")
ORDINALS = {f"{n}th" for n in range(4, 21)} | {"2nd", "3rd"}


@pytest.mark.parametrize(("question", "answer", "sentence", "noise", "wrong"), [
    # the distractors' only count, 25, stands inside '250' of the evidence: the count is scaled instead
    pytest.param("How many copies did it sell?", "250 million", "His books sold more than 250 million copies.",
                 [SCORES], {f"{n} million" for n in (125, 150, 188, 325, 375, 500)},
                 id="count-scaled-when-distractor-figures-unusable"),
    pytest.param("What number largest airline is it?", "8th", "It is the 8th largest airline in the US.",
                 [SINGER], ORDINALS - {"8th"}, id="ordinal-alone"),
    pytest.param("What rank did it reach?", "12th", "It reached the 12th place in 1990.",
                 [SINGER], ORDINALS - {"12th"}, id="ordinal-alone-teens-suffix"),
])
def test_figure_fallbacks(question, answer, sentence, noise, wrong) -> None:
    plan = plan_for(_item(question, answer, [("Alpha Beta", sentence)], noise))
    assert plan.wrong_answer in wrong and plan.edit.before == answer
    clean, misleading = plan.evidence.text(), plan.misleading.text()
    start, end, new_end = one_span_diff(clean, misleading)
    assert clean[start:end] in answer
    assert plan.wrong_answer in misleading and plan.wrong_answer not in clean


@pytest.mark.parametrize(("answer", "sentence", "noise", "wrong"), [
    pytest.param("CBS", "It aired as a CBS series from 1987.", [SINGER], set(BROADCAST_NETWORKS) - {"CBS"},
                 id="broadcast-network-from-the-list"),
    # 'an HBO' -> 'a Showtime': the article inside the edited span follows the new word
    pytest.param("HBO", "It aired as an HBO series from 1987.", [("Gamma", "Gamma is a Showtime drama.")],
                 {"Showtime"}, id="cable-channel-named-by-a-distractor"),
    pytest.param("Nickelodeon", "It was based on the Nickelodeon series.", [SINGER],
                 set(CABLE_CHANNELS) - {"Nickelodeon"}, id="cable-channel-from-the-list"),
    pytest.param("Norbertine", "It was first made by Norbertine monks.", [("Gamma", "Gamma lies near a Jesuit abbey.")],
                 {"Jesuit"}, id="religious-order-named-by-a-distractor"),
])
def test_closed_list_answers(answer, sentence, noise, wrong) -> None:
    plan = plan_for(_item("On which network did it air?", answer, [("Alpha Beta", sentence)], noise))
    assert plan.wrong_answer in wrong
    edited = plan.misleading.text()
    article = " a " in sentence or " an " in sentence
    assert f"{indefinite_article(plan.wrong_answer)} {plan.wrong_answer}" in edited if article \
        else plan.wrong_answer in edited
    assert answer not in edited


PERSON_SENTENCE = "Mollie Elizabeth King (born 4 June 1987) is an English singer-songwriter."
TOWN = ("Alpha Town", "Alpha Town is a town in Kent.")


@pytest.mark.parametrize(("noise", "wrong"), [
    pytest.param([("DFS 193", "The DFS 193 was an aircraft. Designed by Professor Alexander Lippisch, it flew.")],
                 "Alexander Lippisch", id="after-a-title"),
    pytest.param([("Old Mill", "The mill opened in 1900. It was designed by noted architect Richard C. Biberstein.")],
                 "Richard C. Biberstein", id="after-an-occupation"),
    pytest.param([("Evernight", "Evernight is a series of novels. Its author, Claudia Gray, is an American novelist.")],
                 "Claudia Gray", id="before-is-an-occupation"),
    pytest.param([("Old Mill", "The mill was sold in 1950. Ann Lee (born 1921) bought it.")], "Ann Lee",
                 id="opening-a-sentence-before-a-birth"),
])
def test_person_named_with_a_cue(noise, wrong) -> None:
    spec = _item("The group included what girl born in 1987?", "Mollie Elizabeth King",
                 [("Mollie King", PERSON_SENTENCE)], [TOWN, *noise])
    plan = plan_for(spec)
    assert plan.wrong_answer == wrong and plan.entity_type == "person"
    assert plan.misleading.text() == PERSON_SENTENCE.replace("Mollie Elizabeth King", wrong)


WRITERS = [("Milt Roe", "Milt Roe (1911 – 1987) was a radio writer. He wrote for radio."),
           ("Ann Poe", "Ann Poe (1911 – 1987) was a radio writer. She wrote for radio.")]


@pytest.mark.parametrize(("question", "answer", "sentence", "noise", "wrong"), [
    # 'World War' inside 'World War II' is not a name of its own
    pytest.param("During what wars did it take place?", "Scanian War", "It took place as part of the Scanian War.",
                 [("Treaty", "The treaty ended World War II and the Bjelke War in Norway.")], {"Bjelke War"},
                 id="war-named-in-distractor-text"),
    pytest.param("To which aircraft carrier was it assigned?", "USS Essex", "It was assigned to the USS Essex (CV-9).",
                 [("Air Group", "Air Group 5 flew from USS Franklin and USS Hornet (CV-12).")],
                 {"USS Franklin", "USS Hornet"}, id="ship-named-in-distractor-text"),
    pytest.param("What is the first name of Jack Binion's father?", "Lester",
                 'Lester Ben "Benny" Binion (born 1904) was a casino owner.', WRITERS, {"Milt"},
                 id="first-name-of-a-father"),
    pytest.param("What is the first name of the singer's teacher?", "Narcissa",
                 "Narcissa Foster (born 1868) was a soprano and she sang badly.", WRITERS, {"Ann"},
                 id="first-name-by-the-paragraph-pronoun"),
    pytest.param("Which magazine ranked him?", "India Today", "The magazine India Today featured him.",
                 [("Gamma", "Gamma lies in Ohio; Fortune magazine praised it.")], {"Fortune"},
                 id="periodical-named-by-a-distractor"),
    pytest.param("Which Grammy nominated album was made by the band?", "Nature's Symphony",
                 "Nature's Symphony is an album by The Isaacs.",
                 [("Gamma", 'Gamma sang on the album "Made In Jamaica" and the song "Drive".')], {"Made In Jamaica"},
                 id="album-quoted-by-a-distractor"),
    # a movie question takes a quoted film; a quote ending in a lowercase word is not a title
    pytest.param("What movie was he in in 1972?", "Five Summer Stories", "Five Summer Stories is a 1972 surf film.",
                 [("Gamma", 'Gamma acted in the film "Blink" and the film "Jayam Manade Raa and" in 1990.')],
                 {"Blink"}, id="film-quoted-by-a-distractor"),
    pytest.param("Which collection story did she write first?", "The Ones Who Walk Away",
                 'The story "The Ones Who Walk Away" won the Hugo Award.',
                 [("Gamma", 'Gamma reprinted the story "The Rule of Names" in 1975.')], {"The Rule of Names"},
                 id="story-quoted-by-a-distractor"),
    pytest.param("What kind of dinosaur is Arlo?", "Apatosaurus", 'The film follows a young "Apatosaurus" named Arlo.',
                 [("Gamma", "Gamma lies near a Tyrannosaurus skeleton.")], {"Tyrannosaurus"},
                 id="dinosaur-genus-named-by-a-distractor"),
])
def test_names_found_in_distractor_text(question, answer, sentence, noise, wrong) -> None:
    plan = plan_for(_item(question, answer, [("Alpha Beta", sentence)], [TOWN, *noise]))
    assert plan.wrong_answer in wrong
    assert plan.misleading.text() == sentence.replace(answer, plan.wrong_answer)


@pytest.mark.parametrize(("word", "article"), [
    pytest.param("HBO", "an", id="acronym-vowel-sound"),
    pytest.param("NBC", "an", id="acronym-n"),
    pytest.param("CBS", "a", id="acronym-consonant"),
    pytest.param("Argentine", "an", id="word-vowel"),
    pytest.param("Showtime", "a", id="word-consonant"),
])
def test_indefinite_article(word, article) -> None:
    assert indefinite_article(word) == article


def test_hotpotqa_coverage_with_fallbacks() -> None:
    assert len(build_stress(source_specs("hotpotqa"), seed=0).instances) >= 235  # issue 43: gold stated again -> skipped
