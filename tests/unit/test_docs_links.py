"""Every relative link of README.md and docs/*.md leads somewhere: its file exists and its #anchor is a heading of
that page by GitHub's rule (issue 40, item 7: README's long sections moved into docs/, and a link left pointing at
the old place fails here). README's Documentation section links every page of docs/."""
from __future__ import annotations

from doc_pages import anchors, broken_links, pages, read, relative_links, slug


def test_every_relative_link_and_anchor_of_the_docs_resolves():
    checked = sum(len(relative_links(page.read_text(encoding="utf-8"))) for page in pages())
    assert checked > 50                                  # the pattern finds the pages' links
    assert [line for page in pages() for line in broken_links(page)] == []


def test_readme_links_every_page_of_docs():
    linked = {target.partition("#")[0] for _, target in relative_links(read("README.md"))}
    assert sorted(f"docs/{page.name}" for page in pages()[1:]) == sorted(name for name in linked
                                                                           if name.startswith("docs/"))


def test_anchors_follow_githubs_rule():
    assert slug("Watching runs in the Prefect UI") == "watching-runs-in-the-prefect-ui"
    assert slug("What is scored, and how it differs from `caseforge eval`") == \
        "what-is-scored-and-how-it-differs-from-caseforge-eval"
    assert slug("llamacpp and SmolLM2 — for trying the pipeline only") == \
        "llamacpp-and-smollm2--for-trying-the-pipeline-only"
    assert slug("Fan-out: shards on the GPU pool") == "fan-out-shards-on-the-gpu-pool"
    assert anchors("# A\n\n```\n# not a heading\n```\n## A\n") == {"a", "a-1"}


def test_a_missing_page_a_missing_heading_and_a_stale_readme_anchor_are_each_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "nightly.md").write_text("# Nightly operations\n\n## Run states\n")
    (tmp_path / "README.md").write_text(
        "# caseforge\n\n[ok](docs/nightly.md#run-states), [gone](docs/deploying.md), "
        "[stale](#run-states), [no heading](docs/nightly.md#releases), `[code](#not-a-link)`\n"
        "```\n[fenced](#not-a-link-either)\n```\n[site](https://example.org/#x) [self](#caseforge)\n")
    assert broken_links(tmp_path / "README.md", tmp_path) == [
        "README.md:3: docs/deploying.md (no such file)",
        "README.md:3: #run-states (no heading #run-states in README.md)",
        "README.md:3: docs/nightly.md#releases (no heading #releases in nightly.md)",
    ]
