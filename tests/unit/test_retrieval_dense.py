import pytest

from caseforge.retrieval import Corpus, build_retriever
from caseforge.retrieval.dense import DenseRetriever, default_model_path


def _model_or_skip() -> str:
    try:
        return default_model_path()
    except RuntimeError as exc:
        pytest.skip(str(exc))


def test_dense_missing_model_folder_is_a_clear_error(tmp_path):
    retriever = DenseRetriever(Corpus.from_pairs("x", [("a", "text")]), model_path=str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="model folder not found"):
        retriever.build()


@pytest.mark.slow
def test_dense_and_hybrid_find_the_paraphrase(tmp_path):
    _model_or_skip()
    corpus = Corpus.from_pairs("law", [
        ("speech", "The First Amendment protects freedom of expression from government censorship."),
        ("search", "Police need a warrant to search a home under the Fourth Amendment."),
        ("tax", "Congress may levy taxes to provide for the general welfare."),
    ])
    dense = build_retriever("dense", corpus, tmp_path)
    assert dense.search(["Can officers enter my house without judicial permission?"], k=1)[0][0][0] == "search"
    hybrid = build_retriever("hybrid", corpus, tmp_path)
    assert hybrid.search(["government censorship of speech"], k=3)[0][0][0] == "speech"
    assert (tmp_path / "law" / "dense" / "embeddings.npy").exists()
