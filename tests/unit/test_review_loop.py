"""The review loop without a server: the labelling views and their check of an answer, the stratified sample, the
refusals of a pull, the [review] settings table, and the nightly's review stage failing alone when Label Studio
does not answer (a test double stands in for the client)."""
from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import pytest

from caseforge.review.loop import judge_annotations
from caseforge.review.sample import Item, stratified_sample
from caseforge.review.views import VIEWS, view_of


def choice(label: str) -> list[dict]:
    return [{"from_name": "verdict", "to_name": "claim", "type": "choices", "value": {"choices": [label]}}]


def test_every_view_is_label_studio_xml_that_shows_what_the_judge_saw_and_asks_its_own_scale():
    for name, view in VIEWS.items():
        root = ET.fromstring(view.label_config())
        shown = [t.get("value") for t in root.iter("Text") if t.get("value", "").startswith("$")]
        assert shown == [f"${key}" for key, _ in view.shown], name
        assert {t.get("name") for t in root if t.tag in ("Choices", "Rating")} == {f.name for f in view.fields}
    casefacts = ET.fromstring(view_of("casefacts").label_config())
    assert [c.get("value") for c in casefacts.iter("Choice")] == ["SUPPORTED", "REFUTED", "OVERRULED", "UNUSABLE"]
    aquaechr = ET.fromstring(view_of("aquaechr").label_config())
    assert {r.get("name"): r.get("maxRating") for r in aquaechr.iter("Rating")} == {
        "comprehensiveness": "5", "conciseness": "5", "answer_fluency": "5"}      # the paper's 1-5 scale
    with pytest.raises(ValueError, match="no review for benchmark 'scotus'"):
        view_of("scotus")


def test_an_answer_outside_the_view_is_refused_with_its_reason():
    casefacts, aquaechr = view_of("casefacts"), view_of("aquaechr")
    assert casefacts.answers(choice("REFUTED")) == ({"verdict": "REFUTED"}, None)
    assert casefacts.answers(choice("MAYBE"))[1] == ("answer outside the labelling view: verdict ['MAYBE'] is not one "
                                                     "of SUPPORTED, REFUTED, OVERRULED, UNUSABLE")
    assert casefacts.answers([])[1] == "answer outside the labelling view: no verdict"
    stray = [{"from_name": "mood", "value": {"choices": ["happy"]}}]
    assert casefacts.answers(stray)[1] == "answer outside the labelling view: no field 'mood'"
    ratings = [{"from_name": d, "type": "rating", "value": {"rating": r}}
               for d, r in (("comprehensiveness", 4), ("conciseness", 5), ("answer_fluency", 9))]
    assert aquaechr.answers(ratings)[1] == "answer outside the labelling view: answer_fluency 9 is not a rating 1-5"


def items(n_per_stratum: dict[tuple[str, int], int]) -> list[Item]:
    out = []
    for (label, year), count in n_per_stratum.items():
        out += [Item(f"{label}-{year}-{k}", label, "", year, {"verdict": label}, {}) for k in range(count)]
    return out


def test_the_sample_is_stratified_and_depends_on_the_items_and_the_seed_alone():
    pool = items({("SUPPORTED", 1960): 30, ("REFUTED", 1960): 20, ("OVERRULED", 1990): 2, ("REFUTED", 2001): 8})
    sample = stratified_sample(pool, 20, seed=13)
    strata = {i.stratum for i in sample}
    assert len(sample) == 20 and len(strata) == 4                   # every stratum, even the smallest
    counts = {s: sum(i.stratum == s for i in sample) for s in strata}
    assert counts["SUPPORTED | - | 1960"] > counts["REFUTED | - | 1960"] > counts["REFUTED | - | 2001"]
    shuffled = pool[:]
    random.Random(1).shuffle(shuffled)
    assert stratified_sample(shuffled, 20, seed=13) == sample       # row order does not matter
    assert stratified_sample(pool, 20, seed=14) != sample           # the seed does
    assert len(stratified_sample(pool, 100, seed=13)) == 60         # fewer items than asked: all of them


def task(task_id: int, ref: str, *annotations: dict) -> dict:
    return {"id": task_id, "data": {"ref": ref}, "annotations": list(annotations)}


def note(annotation_id: int, by: int, label: str, updated_by: int | None = None, **extra) -> dict:
    return {"id": annotation_id, "completed_by": by, "updated_by": by if updated_by is None else updated_by,
            "result": choice(label), "updated_at": "2026-11-28T10:00:00Z", **extra}


def test_a_pull_refuses_forgeries_answers_outside_the_view_repeats_and_annotations_beyond_the_overlap():
    tasks = [
        task(1, "r1", note(10, 1, "SUPPORTED"), note(11, 2, "REFUTED"), note(12, 3, "SUPPORTED")),   # a third
        task(2, "r2", note(20, 1, "SUPPORTED", updated_by=2), note(21, 2, "MAYBE")),      # forged; outside the view
        task(3, "r3", note(30, 1, "SUPPORTED"), note(31, 1, "REFUTED")),                  # the same annotator twice
        task(4, "r4", note(40, 1, "SUPPORTED", was_cancelled=True), note(41, 2, "UNUSABLE")),   # a skip
        task(5, "elsewhere", note(50, 1, "SUPPORTED")),                                   # not caseforge's task
    ]
    refs = {"r1": "claim-1", "r2": "claim-2", "r3": "claim-3", "r4": "claim-4"}
    accepted, refused, skipped = judge_annotations(view_of("casefacts"), "casefacts", tasks, refs, overlap=2)
    assert [(r["annotation_id"], r["item_id"], r["annotator"], r["value"]) for r in accepted] == [
        (10, "claim-1", 1, "SUPPORTED"), (11, "claim-1", 2, "REFUTED"), (30, "claim-3", 1, "SUPPORTED"),
        (41, "claim-4", 2, "UNUSABLE")]
    assert {r["annotation_id"]: r["reason"] for r in refused} == {
        12: "beyond the overlap: the item already has 2 annotations",
        20: "completed_by 1 is not updated_by 2: one user's token credited another user",
        21: "answer outside the labelling view: verdict ['MAYBE'] is not one of SUPPORTED, REFUTED, OVERRULED, "
            "UNUSABLE",
        31: "annotator 1 already answered this item",
        50: "the task is not among the pushed items (another project's, or a push stopped midway: `caseforge review "
            "push` records it)"}
    assert skipped == 1


def test_the_review_table_refuses_an_unknown_key_and_an_overlap_below_two(tmp_path, monkeypatch):
    from caseforge.settings import SettingsError, load_settings

    config = tmp_path / "caseforge.toml"
    monkeypatch.setenv("CASEFORGE_CONFIG", str(config))
    config.write_text("[review]\nsample_sise = 10\n")
    with pytest.raises(SettingsError, match=r"unknown setting \[review\] sample_sise; did you mean sample_size\?"):
        load_settings()
    config.write_text("[review]\nannotators_per_item = 1\n")
    with pytest.raises(SettingsError, match=r"\[review\] annotators_per_item"):
        load_settings()
    config.write_text('[review.policy]\nbelow = "hide"\n')
    with pytest.raises(SettingsError, match=r"\[review.policy\] below"):
        load_settings()
    from caseforge.flows.settings_check import settings_problems

    config.write_text('[review]\nnightly = ["casefact"]\n')
    assert settings_problems() == [
        "settings file: [review] nightly names 'casefact', which has no review; did you mean casefacts?"]


def test_the_review_token_is_never_shown_by_the_settings(monkeypatch):
    from caseforge.settings import load_settings

    monkeypatch.setenv("CASEFORGE_REVIEW_TOKEN", "secret-token-1234")
    settings = load_settings()
    assert settings.review_token.get_secret_value() == "secret-token-1234"
    assert "secret-token-1234" not in repr(settings) and "secret-token-1234" not in str(settings.model_dump())


class UnreachableLabelStudioDouble:
    """Test double of the Label Studio client: every call fails as a server that does not answer does."""

    url = "http://127.0.0.1:9"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def project(self, benchmark):
        from caseforge.review.labelstudio import ReviewUnreachable

        raise ReviewUnreachable(f"Label Studio at {self.url} did not answer GET /api/projects: ConnectError: refused")


def test_a_label_studio_that_does_not_answer_fails_the_review_stage_alone(tmp_path, monkeypatch):
    from registry_doubles import ReleaseDouble

    from caseforge.flows import nightly_review, nightly_runner
    from caseforge.settings import load_settings

    config = tmp_path / "caseforge.toml"
    config.write_text('[review]\nurl = "http://127.0.0.1:9"\nnightly = ["casefacts"]\n')
    monkeypatch.setenv("CASEFORGE_CONFIG", str(config))
    monkeypatch.setenv("CASEFORGE_REVIEW_TOKEN", "a-token")
    monkeypatch.setattr(nightly_review, "client_of", lambda settings: UnreachableLabelStudioDouble())
    written = []

    def export_double(con, folder):
        written.append(folder)
        return None

    releases = {"alpha": ReleaseDouble("alpha", "alpha (double)", None, inputs=("ops.runs",), writer=export_double)}
    result = nightly_runner.run_nightly(load_settings(tmp_path / "cf.duckdb"), None, sources={}, builders={},
                                        evaluations={}, releases=releases, plots={})
    stages = {(o.stage, o.name): o for o in result.outcomes}
    assert stages[("review", "casefacts")].status == "failed"
    assert result.failures() == ["review casefacts: Label Studio at http://127.0.0.1:9 did not answer GET "
                                 "/api/projects: ConnectError: refused"]
    assert stages[("export", "alpha")].status == "succeeded" and len(written) == 1    # the night went on
