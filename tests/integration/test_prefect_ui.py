"""The Prefect UI tells the night's story (issue 45), read in a real browser (Playwright driving Debian's chromium-
headless-shell) on the loopback server docs/deploying.md's UI command serves (conftest runs it as written), after
the nightly on real samples with a failed builder and skipped exports: the runs page shows `nightly-<id>`; the run's
timeline lists every stage of the summary, the failed one Failed, the skipped ones Completed; the failed stage's
page shows its one line; the summary is the first artifact; the problems artifact's first row shows the value beside
its rule within 1,440 pixels; no console error from caseforge's artifacts; and what docs/deploying.md says the V1
and V2 UIs request outside the server. Screenshots are kept in out/ci-artifacts/ for a person to look at."""
import json
import os
import re

import pytest

from prefect_runs import CI_ARTIFACTS, SCREEN

# the first test to use nightly_flow_run waits for the whole nightly (conftest's NIGHTLY_DEADLINE_S) inside
# pytest-timeout's budget
NIGHTLY_BUDGET_S = int(os.environ.get("CASEFORGE_TEST_NIGHTLY_DEADLINE_S", "900")) + 300
pytestmark = [pytest.mark.samples, pytest.mark.slow, pytest.mark.timeout(NIGHTLY_BUDGET_S)]

PLOT_BLUE = (0x3B, 0x6E, 0xA5)          # caseforge.plots.bar_chart's bars


def plot_pixels(png) -> tuple[int, int]:
    """(pixels of the bar colour, distinct colours) of a screenshot: a page showing the plot has bars."""
    from PIL import Image

    with Image.open(png) as image:
        pixels = list(image.convert("RGB").getdata())
    near = sum(1 for p in pixels if all(abs(a - b) <= 6 for a, b in zip(p, PLOT_BLUE)))
    return near, len(set(pixels))


def _rows(artifact: dict) -> list[dict]:
    return json.loads(artifact["data"]) if isinstance(artifact["data"], str) else artifact["data"]


def test_the_ui_tells_the_nightlys_story(prefect_server, nightly_flow_run, nightly_artifacts, browsing):
    server, run, page = prefect_server, nightly_flow_run, browsing.page
    summary = nightly_artifacts["nightly-summary"]
    run_id = int(re.match(r"Nightly run (\d+):", summary["description"])[1])
    keys = {f"{row['stage']}-{row['name']}".replace(" ", "-"): f"{row['stage']} {row['name']}"   # Stage.task_name
            for row in _rows(summary)}                                                        # → Stage.key
    stages = {name: row["status"] for name, row in zip(keys, _rows(summary))}
    task_runs = {t["name"]: t for t in server.api("POST", "/task_runs/filter", json={
        "flow_runs": {"id": {"any_": [run["id"]]}}}).json()}
    failed = [name for name, status in stages.items() if status in ("failed", "quarantined")]
    skipped = [name for name, status in stages.items() if status == "skipped"]
    assert failed == ["builder-casefacts"] and "export-casefacts" in skipped, stages

    # the runs page names the night
    page.goto(f"{server.url}/runs")
    page.get_by_text(f"nightly-{run_id}", exact=True).first.wait_for()
    assert run["name"] == f"nightly-{run_id}"
    browsing.shot("runs")

    # the run's timeline draws every stage of the summary (and the report task), each in the state it earned
    with page.expect_response(lambda r: r.url.endswith(f"/flow_runs/{run['id']}/graph-v2")) as drawn:
        page.goto(f"{server.url}/runs/flow-run/{run['id']}")
    # a stage that ran a flow of its own is drawn as that flow's run: "<flow> / nightly-<id> <stage>"
    nodes = {node["label"].rpartition(f"nightly-{run_id} ")[2]: node["state_type"]
             for _, node in drawn.value.json()["nodes"]}
    assert set(nodes) == set(stages) | {"report"}, (nodes, stages)
    assert all(nodes[name] == "FAILED" for name in failed), nodes
    assert all(nodes[name] == "COMPLETED" for name in stages if name not in failed), nodes
    page.get_by_text("Task Runs", exact=True).first.wait_for()
    page.wait_for_timeout(2000)                       # the canvas draws after its data arrives
    browsing.shot("nightly-timeline")
    for name in skipped:                                  # a skipped stage says why, as Completed
        assert task_runs[name]["state"]["message"].startswith(f"{keys[name]} skipped: "), task_runs[name]

    # the failed stage's page shows its one line, the state message (no repr, no "NoneType: None")
    line = task_runs["builder-casefacts"]["state"]["message"]
    assert line.startswith("builder casefacts ") and "\n" not in line and "Failed(" not in line, line
    page.goto(f"{server.url}/runs/task-run/{task_runs['builder-casefacts']['id']}")
    page.get_by_text(line, exact=False).first.wait_for()
    text = page.inner_text("body")
    assert "NoneType: None" not in text and "Failed(message=" not in text
    browsing.shot("failed-stage")

    # the Artifacts tab lists the nightly's summary first
    page.goto(f"{server.url}/runs/flow-run/{run['id']}")
    page.get_by_text("Artifacts", exact=True).first.click()
    page.get_by_text("nightly-summary", exact=True).first.wait_for()
    page.get_by_text("nightly-problems", exact=True).first.wait_for()
    keys = [key for key in re.findall(r"\bnightly-[a-z]+\b", page.inner_text("body"))
            if key in nightly_artifacts]
    assert keys and keys[0] == "nightly-summary", keys
    browsing.shot("artifacts")

    # the problems table: its first row's value beside its rule, on a 1,440-pixel screen
    page.goto(f"{server.url}/artifacts/artifact/{nightly_artifacts['nightly-problems']['id']}")
    header = page.locator("th").filter(has_text=re.compile(r"^\s*value\s*$")).first
    header.wait_for()
    first = page.locator("tbody tr").first
    cells = first.locator("td")
    columns = [th.strip() for th in page.locator("thead th").all_inner_texts()]
    assert columns == ["stage", "record", "value", "rule"], columns
    value, rule = cells.nth(2), cells.nth(3)
    assert value.inner_text().strip().startswith('"'), first.inner_text()       # a quoted value, not empty
    value_box, rule_box = value.bounding_box(), rule.bounding_box()
    assert value_box["x"] + value_box["width"] <= SCREEN["width"], value_box
    assert rule_box["x"] < SCREEN["width"] - 100, rule_box                  # the rule begins on the screen beside it
    assert rule.inner_text().strip().startswith("expect_"), rule.inner_text()
    browsing.shot("problems")

    # every artifact's own page renders without a browser error (the plots as images, the locations as text)
    for key in sorted(nightly_artifacts):
        page.goto(f"{server.url}/artifacts/artifact/{nightly_artifacts[key]['id']}")
        page.get_by_text(key, exact=True).first.wait_for()
        page.wait_for_timeout(1000)
        if key == "nightly-plots":
            page.locator("img[src^='data:image/png']").first.wait_for()
            page.wait_for_timeout(2000)
        if key in ("nightly-plots", "nightly-locations", "nightly-summary"):
            browsing.shot(key.removeprefix("nightly-"))
        if key == "nightly-plots":
            near, colours = plot_pixels(CI_ARTIFACTS / "prefect-ui-plots.png")
            assert colours > 50 and near > 500, f"no plot drawn ({near} bar-coloured pixels, {colours} colours)"
    assert browsing.errors == [], browsing.errors


def test_the_ui_prefect_serves_requests_nothing_outside_and_v2_only_amplitudes_configuration(prefect_server,
                                                                                            browsing):
    """docs/deploying.md "What the V2 UI sends where": with its command (analytics off, V1 at /), the V1 pages ask
    nothing of any other host; V2 asks Amplitude's configuration host and posts no analytics event."""
    page = browsing.page
    for path in ("/", "/runs"):
        page.goto(f"{prefect_server.url}{path}")
        page.get_by_text("Runs", exact=True).first.wait_for()
        page.wait_for_timeout(3000)
    assert "/v2" not in page.url and browsing.outside == [], browsing.outside
    page.goto(f"{prefect_server.url}/v2/runs")
    page.wait_for_timeout(8000)
    hosts = {request.split(" ")[1].split("/")[0] for request in browsing.outside}
    assert hosts == {"sr-client-cfg.amplitude.com"}, browsing.outside
    assert not [r for r in browsing.outside if "api2.amplitude.com" in r]
