"""The review loop against a real Label Studio server (issue 44): 40 CaseFacts claims of a build on the samples
(replayed model answers) pushed; two annotators, each a Label Studio user with their own token, annotate through
the API from a fixture of labels; pulls are idempotent, an edit replaces, a deletion is gone, a forged and a third
annotation are refused with their reasons; the report's figures are the libraries' own on the same table; Label
Studio stopped during a pull fails that stage alone and the next pull completes; a release carries the judge card,
its Croissant validates, and the policy holds a release back below min_agreement. First, in a real browser, an
annotator's labelling page shows a pushed claim and the choices (the screenshot is kept in out/ci-artifacts/)."""
from __future__ import annotations

import json
from collections import Counter

import pytest
from review_support import labels

from caseforge.warehouse.connection import connect

pytestmark = [pytest.mark.samples, pytest.mark.slow, pytest.mark.timeout(2400)]

ANNOTATOR_A, ANNOTATOR_B, ANNOTATOR_C = ("annotator-a@example.org", "annotator-b@example.org",
                                         "annotator-c@example.org")


def verdict(label: str) -> list[dict]:
    return [{"from_name": "verdict", "to_name": "claim", "type": "choices", "value": {"choices": [label]}}]


def caseforge(env, monkeypatch, capsys, *args) -> tuple[int, str, str]:
    from caseforge.cli import main

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def rows(db, sql: str) -> list[tuple]:
    with connect(db, read_only=True) as con:
        return con.execute(sql).fetchall()


def post(client, task_id: int, result: list[dict], **extra) -> int:
    response = client.post(f"/api/tasks/{task_id}/annotations", json={"result": result, **extra})
    assert response.status_code == 201, response.text[:500]
    return response.json()["id"]


def test_an_annotator_sees_a_pushed_claim_and_the_choices_in_a_browser(pushed_casefacts, label_studio):
    """Runs before the annotations below: the annotator's labelling stream hands out a pushed task."""
    from browser import browser_missing, headless_browser, screenshot

    missing = browser_missing()
    if missing:
        pytest.skip(missing)
    db, _ = pushed_casefacts
    claims = {claim for (claim,) in rows(db, "SELECT c.claim FROM curated.casefacts_claims c JOIN review.items i "
                                             "ON i.item_id = c.claim_id")}
    with headless_browser() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{label_studio.url}/user/login/")
        page.fill("input[name=email]", ANNOTATOR_A)
        page.fill("input[name=password]", label_studio.passwords[ANNOTATOR_A])
        page.click("button[type=submit]")
        page.wait_for_load_state("networkidle")
        project = label_studio.as_user(label_studio.admin).get("/api/projects").json()["results"][0]["id"]
        page.goto(f"{label_studio.url}/projects/{project}/data?labeling=1")
        page.wait_for_selector("text=Is the claim supported by these cases?", timeout=120_000)
        page.wait_for_selector("text=Cases (facts, question, conclusion)", timeout=60_000)
        shot = screenshot(page, "review-labelling.png")
        text = page.inner_text("body")
    assert any(claim in text for claim in claims), "the page shows none of the pushed claims"
    for choice in ("SUPPORTED", "REFUTED", "OVERRULED", "UNUSABLE"):
        assert choice in text
    assert "Facts:" in text and "Conclusion:" in text          # the cases the judge saw
    assert "Submit" in text and "admin@" not in text            # a fresh answer, no one else's annotation
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_push_annotate_pull_report_release(pushed_casefacts, label_studio, review_env, monkeypatch, capsys,
                                           tmp_path):
    db, pushed = pushed_casefacts
    fixture = labels()
    run = lambda *args: caseforge(review_env, monkeypatch, capsys, *args)   # noqa: E731

    # --- the push: 40 items, stratified, blind to the judge; a second push adds nothing ---
    assert "40 items in review" in pushed and "40 pushed now, 0 already there" in pushed
    items = dict(rows(db, "SELECT item_id, task_id FROM review.items WHERE benchmark = 'casefacts'"))
    assert sorted(items) == sorted(fixture["first"])
    code, out, _ = run("review", "push", "casefacts", "--db", str(db))
    assert code == 0 and "0 pushed now, 40 already there" in out
    admin = label_studio.as_user(label_studio.admin)
    project = admin.get("/api/projects").json()["results"][0]
    assert project["maximum_annotations"] == 2 and project["show_annotation_history"] is False
    task = admin.get(f"/api/tasks/{items[sorted(items)[0]]}").json()
    assert set(task["data"]) == {"ref", "claim", "cases"}        # no item id, no label: blind to the judge

    # --- the documented server: signup closed (a sign-up without an invitation link is refused, makes no user) ---
    import re

    import httpx

    with httpx.Client(follow_redirects=True, timeout=60) as browser:
        form = browser.get(f"{label_studio.url}/user/signup/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        signup = browser.post(str(form.url), headers={"Referer": str(form.url)}, data={
            "csrfmiddlewaretoken": token, "email": "intruder@example.org", "password": "intruder-password-1"})
    assert signup.status_code == 403
    assert "intruder@example.org" not in {u["email"] for u in admin.get("/api/users").json()}

    # --- two annotators, each with their own token, from the fixture ---
    clients = {email: label_studio.as_user(email) for email in (ANNOTATOR_A, ANNOTATOR_B, ANNOTATOR_C)}
    ids = {email: clients[email].get("/api/current-user/whoami").json()["id"] for email in clients}
    annotation_of = {}
    for item, (first, second) in sorted(fixture["first"].items()):
        annotation_of[item, 0] = post(clients[ANNOTATOR_A], items[item], verdict(first))
        annotation_of[item, 1] = post(clients[ANNOTATOR_B], items[item], verdict(second))

    code, out, err = run("review", "pull", "casefacts", "--db", str(db))
    assert code == 0, err
    assert "80 annotations of 40 tasks" in out and "80 new, 0 edited, 0 gone" in out
    before = rows(db, "SELECT * FROM review.annotations ORDER BY annotation_id")
    code, out, _ = run("review", "pull", "casefacts", "--db", str(db))
    assert code == 0 and "0 new, 0 edited, 0 gone" in out
    assert rows(db, "SELECT * FROM review.annotations ORDER BY annotation_id") == before     # twice: nothing added

    # --- an edited annotation replaces its earlier version ---
    edit = fixture["edit"]
    edited = annotation_of[edit["item"], edit["annotator"]]
    assert clients[ANNOTATOR_B].patch(f"/api/annotations/{edited}", json={"result": verdict(edit["to"])}).is_success
    code, out, _ = run("review", "pull", "casefacts", "--db", str(db))
    assert code == 0 and "0 new, 1 edited, 0 gone" in out
    assert rows(db, f"SELECT value FROM review.annotations WHERE annotation_id = {edited}") == [(edit["to"],)]
    assert rows(db, "SELECT count(*) FROM review.annotations")[0][0] == 80

    # --- a deleted annotation is gone; annotated again, it is back ---
    gone_item = sorted(items)[5]
    assert clients[ANNOTATOR_A].delete(f"/api/annotations/{annotation_of[gone_item, 0]}").is_success
    code, out, _ = run("review", "pull", "casefacts", "--db", str(db))
    assert code == 0 and "0 new, 0 edited, 1 gone" in out
    assert rows(db, f"SELECT count(*) FROM review.annotations WHERE annotation_id = {annotation_of[gone_item, 0]}") \
        == [(0,)]
    annotation_of[gone_item, 0] = post(clients[ANNOTATOR_A], items[gone_item], verdict(fixture["first"][gone_item][0]))

    # --- a completed_by forgery and a third annotation are refused, with their reasons ---
    forged = post(clients[ANNOTATOR_B], items[fixture["forged"]], verdict("OVERRULED"), completed_by=ids[ANNOTATOR_A])
    third = post(clients[ANNOTATOR_C], items[fixture["third"]], verdict("OVERRULED"))
    code, out, err = run("review", "pull", "casefacts", "--db", str(db))
    assert code == 1                                    # the pull did its work and reports what it refused
    assert "1 new, 0 edited, 0 gone, 0 skipped, 2 refused" in out
    refused = dict(rows(db, "SELECT annotation_id, reason FROM review.refusals"))
    assert refused[forged] == (f"completed_by {ids[ANNOTATOR_A]} is not updated_by {ids[ANNOTATOR_B]}: one user's "
                               "token credited another user")
    assert refused[third] == "beyond the overlap: the item already has 2 annotations"
    assert f"annotation {forged} of task {items[fixture['forged']]} refused: completed_by" in err
    assert rows(db, f"SELECT count(*) FROM review.annotations WHERE annotation_id IN ({forged}, {third})") == [(0,)]

    # --- Label Studio stopped during a pull: that stage fails in one line, nothing is written; the next completes ---
    from caseforge.flows.nightly_review import review_stage
    from caseforge.review.commands import client_of
    from caseforge.settings import load_settings

    for name, value in review_env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(db)
    stopped_at = []

    def stop_on_page_three(page: int) -> None:
        if page == 3:
            stopped_at.append(page)
            label_studio.stop()

    with connect(db) as con:
        report = review_stage(settings, con, "casefacts", client_of(settings, before_page=stop_on_page_three))
    assert stopped_at == [3] and report.status == "failed"
    assert len(report.failures) == 1 and report.failures[0].startswith(
        f"Label Studio at {label_studio.url} did not answer GET /api/tasks: ConnectError")
    assert label_studio.admin_token not in report.failures[0]
    assert rows(db, "SELECT count(*) FROM review.annotations")[0][0] == 80
    label_studio.start()
    code, out, _ = run("review", "pull", "casefacts", "--db", str(db))
    assert code == 1 and "80 annotations of 40 tasks" in out and "0 new, 0 edited, 0 gone, 0 skipped, 2 refused" in out

    # --- the report: the libraries' own figures on the same table, the fixture's confusion matrix ---
    final = {item: list(pair) for item, pair in fixture["first"].items()}
    final[edit["item"]][edit["annotator"]] = edit["to"]
    judge = dict(rows(db, "SELECT item_id, judge->>'verdict' FROM review.items"))
    table = [final[item] for item in sorted(final)]
    categories = ["SUPPORTED", "REFUTED", "OVERRULED", "UNUSABLE"]
    code, out, _ = run("review", "report", "casefacts", "--format", "json", "--db", str(db))
    assert code == 0
    card = json.loads(out)
    field = card["fields"][0]
    figures = {f["name"]: f for f in field["annotators"]}
    import krippendorff
    import numpy as np
    import pandas as pd
    from irrCAC.raw import CAC

    alpha = krippendorff.alpha(reliability_data=np.array([[categories.index(v) for v in row] for row in table]).T,
                               level_of_measurement="nominal", value_domain=[0, 1, 2, 3])
    ac1 = CAC(pd.DataFrame(table), categories=categories).gwet()["est"]["coefficient_value"]
    assert figures["alpha"]["value"] == round(alpha, 6) and figures["ac1"]["value"] == round(float(ac1), 6)
    assert figures["alpha"]["low"] < figures["alpha"]["value"] < figures["alpha"]["high"]
    assert field["items"] == 40 and card["reviewed"] == 40 and card["annotators_per_item"] == 2
    agreed = Counter((judge[item], a) for item, (a, b) in final.items() if a == b)
    assert field["confusion"] == [[agreed[(j, c)] for c in categories] for j in categories]
    assert field["no_consensus"] == sum(a != b for a, b in final.values())
    code, out, _ = run("review", "report", "casefacts", "--db", str(db))
    assert f"verdict annotators alpha {alpha:.3f} [" in out and f"verdict annotators ac1 {ac1:.3f} [" in out

    # --- a release after the pull carries the judge card; its Croissant validates ---
    from caseforge.release import validate_croissant, verify_release

    release = tmp_path / "release"
    code, out, err = run("export", "casefacts", "--out", str(release), "--db", str(db))
    assert code == 0, err
    readme = (release / "README.md").read_text()
    assert "## Judge card" in readme and "Reviewed: meets the release policy" in readme
    assert "step `casefacts.factuality`, google/gemma-3-27b-it as configured" in readme
    assert "40 items with every answer of 2 annotator(s) per item, of 40 put before them" in readme
    assert f"| verdict | annotators | alpha | {alpha:.3f} |" in readme
    assert (release / "judge" / "confusion.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert verify_release(release) == [] and validate_croissant(release) == []
    croissant = json.loads((release / "croissant.json").read_text())
    assert croissant["rai:annotationsPerItem"] == "2" and "Label Studio" in croissant["rai:dataAnnotationPlatform"]
    assert "without seeing its verdict" in croissant["rai:dataAnnotationProtocol"]

    # --- the release policy holds a release back below min_agreement, in one line ---
    strict = tmp_path / "strict.toml"
    strict.write_text(open(review_env["CASEFORGE_CONFIG"]).read().replace("min_agreement = 0.3", "min_agreement = 0.95")
                      .replace('below = "mark"', 'below = "hold"'))
    held = tmp_path / "held"
    code, out, err = caseforge({**review_env, "CASEFORGE_CONFIG": str(strict)}, monkeypatch, capsys,
                               "export", "casefacts", "--out", str(held), "--db", str(db))
    assert code == 1 and not (held / "README.md").exists()
    lines = [line for line in err.splitlines() if line.startswith("caseforge:")]
    assert len(lines) == 1 and "the casefacts release is held back by the release policy" in lines[0]
    assert "below min_agreement 0.95" in lines[0]
