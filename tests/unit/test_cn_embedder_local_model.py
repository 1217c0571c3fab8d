"""The sentence-transformers embedder with a tiny randomly initialised model saved to a local folder.

Importing torch takes close to a minute on a busy machine, so this runs only with CASEFORGE_SLOW_TESTS=1.
"""
import os

import numpy as np
import pytest

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("CASEFORGE_SLOW_TESTS") != "1",
                                 reason="imports torch; set CASEFORGE_SLOW_TESTS=1 to run")]


def _tiny_local_model(folder):
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizer

    chars = sorted(set("本院认为原告被告诉称辩称借款合同经审理查明事实判决如下一二三"))
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars]), encoding="utf-8")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    config = BertConfig(vocab_size=5 + len(chars), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64)
    BertModel(config).save_pretrained(folder)
    word = models.Transformer(str(folder), max_seq_length=64)
    dimension = getattr(word, "get_embedding_dimension", None) or word.get_word_embedding_dimension
    SentenceTransformer(modules=[word, models.Pooling(dimension())]).save(str(folder / "st"))
    return folder / "st"


def test_sentence_transformers_embedder_reads_a_local_folder(tmp_path):
    from caseforge.tasks.cn.select import embed

    path = _tiny_local_model(tmp_path)
    vectors = embed(["原告诉称借款", "被告辩称", "本院认为"], f"sentence-transformers:{path}")
    assert vectors.shape == (3, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
