"""The release card says what its items cost when they were made, with the models that served them as recorded
(issue 43, item 4; issue 41, item 1): the cached answers of the stages, models and prompt versions the card
names, once each, whenever they were asked."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_benchmark_releases import fill  # noqa: E402

from caseforge.tasks.casefacts import release as casefacts_release  # noqa: E402
from caseforge.warehouse.connection import connect  # noqa: E402

CALLS = """
INSERT INTO ops.llm_calls (identity, step, backend, model, template_id, template_sha, request, status, attempts,
                           prompt_tokens, completion_tokens, latency_ms, created_at, served_model, run_id) VALUES
  ('g1', 'casefacts.generate', 'openai', 'gen-model', 'casefacts/generate_claims.j2', 'sha-gen', '{}', 'ok', 1,
   100, 20, 1500.4, now(), 'gen-model', 7),
  ('g2', 'casefacts.generate', 'openai', 'gen-model', 'casefacts/generate_claims.j2', 'sha-gen', '{}', 'failed', 2,
   110, 40, 2000.2, now(), 'gen-model', 6),
  ('g3', 'casefacts.generate', 'openai', 'gen-model', 'casefacts/generate_claims.j2', 'sha-gen', '{}', 'ok', 1,
   90, 10, 999.6, now(), NULL, NULL),
  ('g4', 'casefacts.generate', 'openai', 'gen-model', 'casefacts/generate_claims.j2', 'sha-old', '{}', 'ok', 1,
   500, 500, 9000, now(), 'gen-model', 3),
  ('g5', 'casefacts.generate', 'openai', 'gen-model', 'casefacts/generate_claims.j2', 'sha-gen', '{}',
   'unanswered', 3, NULL, NULL, 60000, now(), NULL, 7),
  ('f1', 'casefacts.factuality', 'llamacpp', 'check-model', 'casefacts/check_factuality.j2', 'sha-check', '{}',
   'ok', 1, 50, 5, 300, now(), 'gemma-3-270m-it-Q4_K_M.gguf', 7);
"""


def test_the_casefacts_card_says_what_its_answers_cost_and_which_models_served(db_path, tmp_path):
    con = connect(db_path)
    try:
        fill(con)
        con.execute(CALLS)         # ops.casefacts_build_steps names steps without the prefix their LLM calls have
        first = casefacts_release.write(con, tmp_path / "a")
        second = casefacts_release.write(con, tmp_path / "b")
    finally:
        con.close()
    card = (first.path / "README.md").read_text()
    assert card == (second.path / "README.md").read_text()           # same cache, same bytes
    section = card[card.index("### What it cost to make"):]
    section = section[:section.index("\n### ", 5)]
    # the current prompt's answers (ok and failed), not the old prompt's, not the request no endpoint answered
    assert "| casefacts.generate | gen-model | gen-model | 2 | 210 | 60 | 3.5 |" in section
    assert "| casefacts.generate | gen-model | not recorded | 1 | 90 | 10 | 1.0 |" in section
    assert "| casefacts.factuality | check-model | gemma-3-270m-it-Q4_K_M.gguf | 1 | 50 | 5 | 0.3 |" in section
    assert ("Altogether 4 calls, 350 prompt and 75 completion tokens, 4.8 model-seconds: per released item (2), "
            "212 tokens and 2.40 model-seconds.") in section
