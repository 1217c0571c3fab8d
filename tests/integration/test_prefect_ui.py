"""Headless Chromium loads the Prefect UI of the loopback server on the nightly flow run's page: the page
names the flow run and shows the summary artifact. The screenshot is kept as a CI artifact."""
import os
import re
import subprocess
from pathlib import Path

import pytest

# the first test to use nightly_flow_run waits for the whole nightly (conftest's NIGHTLY_DEADLINE_S) inside
# pytest-timeout's budget
NIGHTLY_BUDGET_S = int(os.environ.get("CASEFORGE_TEST_NIGHTLY_DEADLINE_S", "900")) + 300
pytestmark = [pytest.mark.samples, pytest.mark.slow, pytest.mark.timeout(NIGHTLY_BUDGET_S)]

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS_DIR = Path(__file__).resolve().parent.parent.parent / "out" / "ci-artifacts"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000"]


def chromium(url: str, profile: Path, *extra: str, budget_ms: int = 20000) -> subprocess.CompletedProcess:
    return subprocess.run([str(CHROMIUM), *FLAGS, f"--virtual-time-budget={budget_ms}", f"--user-data-dir={profile}",
                           *extra, url],
                          capture_output=True, text=True, timeout=120)


def visible_text(dom: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", dom))


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install -y chromium)")
def test_ui_shows_the_nightly_run_and_its_summary_artifact(samples_dir, prefect_server, nightly_flow_run, tmp_path):
    run = nightly_flow_run
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)

    # The flow run's page. (Its Artifacts tab cannot be opened by URL: the UI falls back to Logs while the
    # run loads, so the artifact is checked on its own page below.)
    run_page = f"{prefect_server.url}/runs/flow-run/{run['id']}"
    dom = chromium(run_page, tmp_path / "profile-run", "--dump-dom")
    (ARTIFACTS_DIR / "prefect-ui-flow-run.html").write_text(dom.stdout)
    assert dom.returncode == 0, dom.stderr[-2000:]
    text = visible_text(dom.stdout)
    assert f"Flow Run: {run['name']}" in text, "the flow run page does not name the run"
    assert run["state"]["name"] in text and "caseforge-test-pool" in text     # Completed, or Failed (see
    # test_prefect_server: the content gate may quarantine what the packaged model writes for CaseFacts)
    assert "nightly run " in text and "summary in" in text, "the run's own log lines are not on the page"

    screenshot = ARTIFACTS_DIR / "prefect-ui.png"
    screenshot.unlink(missing_ok=True)
    shot = chromium(run_page, tmp_path / "profile-shot", f"--screenshot={screenshot}")
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 20_000, "the screenshot looks blank"

    # The summary artifact's page names its key and the flow run that published it.
    artifact_page = f"{prefect_server.url}/artifacts/key/nightly-summary"
    for attempt in range(4):  # the page fetches the artifact, then its run; a busy machine may need a reload
        dom = chromium(artifact_page, tmp_path / f"profile-artifact-{attempt}", "--dump-dom", budget_ms=30000)
        text = visible_text(dom.stdout)
        if run["name"] in text and "Nightly run" in text:
            break
    (ARTIFACTS_DIR / "prefect-ui-artifact.html").write_text(dom.stdout)
    assert "Artifact: nightly-summary" in text
    assert run["name"] in text, "the artifact page does not link the flow run"
    verdict = ": ok" if run["state"]["type"] == "COMPLETED" else ": FAILED: builder casefacts ("
    assert "Nightly run" in text and verdict in text, "the artifact's description (the verdict) is missing"
    shot = chromium(artifact_page, tmp_path / "profile-artifact-shot",
                    f"--screenshot={ARTIFACTS_DIR / 'prefect-ui-artifact.png'}")
    assert shot.returncode == 0, shot.stderr[-2000:]


PLOT_BLUE = (0x3B, 0x6E, 0xA5)          # caseforge.plots.bar_chart's bars


def plot_pixels(png: Path) -> tuple[int, int]:
    """(pixels of the bar colour, distinct colours) of a screenshot: a page showing the plot has bars."""
    from PIL import Image

    with Image.open(png) as image:
        rgb = image.convert("RGB")
        pixels = list(rgb.getdata())
    near = sum(1 for p in pixels if all(abs(a - b) <= 6 for a, b in zip(p, PLOT_BLUE)))
    return near, len(set(pixels))


@pytest.mark.skipif(not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (apt-get install -y chromium)")
def test_ui_shows_a_plot_on_the_plots_artifact_page(samples_dir, prefect_server, nightly_flow_run, nightly_artifacts,
                                                    tmp_path):
    """The nightly-plots markdown artifact as the UI renders it (the artifact's own page; the key's page
    lists its versions only): the plots (PNG data URIs) are drawn."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    page = f"{prefect_server.url}/artifacts/artifact/{nightly_artifacts['nightly-plots']['id']}"
    screenshot = ARTIFACTS_DIR / "prefect-ui-plot.png"
    for attempt in range(4):     # the page fetches the artifact after it loads; a busy machine may need a reload
        screenshot.unlink(missing_ok=True)
        shot = chromium(page, tmp_path / f"profile-plot-{attempt}", f"--screenshot={screenshot}", budget_ms=30000)
        assert shot.returncode == 0, shot.stderr[-2000:]
        near, colours = plot_pixels(screenshot)
        if near > 500:
            break
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert colours > 50, "the screenshot is blank"
    assert near > 500, f"no plot drawn on the artifact page ({near} bar-coloured pixels, {colours} colours)"
