"""Compiled prompt templates are reused, but an edit (of the file or of an include) is always seen."""
from caseforge.llm import render


def test_rapid_same_size_edits_are_seen(tmp_path):
    for version in range(10):
        (tmp_path / "t.j2").write_text(f"{{% block user %}}v{version} {{{{ x }}}}{{% endblock %}}")
        prompt = render("t.j2", root=tmp_path, x=1)
        assert prompt.messages == [{"role": "user", "content": f"v{version} 1"}]


def test_editing_an_include_changes_text_and_hash(tmp_path):
    (tmp_path / "rules.j2").write_text("Rule A.")
    (tmp_path / "t.j2").write_text("{% block user %}{% include 'rules.j2' %} {{ x }}{% endblock %}")
    first = render("t.j2", root=tmp_path, x=1)
    assert render("t.j2", root=tmp_path, x=1).template_sha == first.template_sha
    (tmp_path / "rules.j2").write_text("Rule B.")
    second = render("t.j2", root=tmp_path, x=1)
    assert second.messages[0]["content"] == "Rule B. 1"
    assert second.template_sha != first.template_sha
