"""The template hash covers every file a template can include, whatever branch a render takes."""
from caseforge.llm.prompts import render


def test_hash_does_not_depend_on_which_include_rendered_first(tmp_path):
    (tmp_path / "a.j2").write_text("A")
    (tmp_path / "b.j2").write_text("B")
    (tmp_path / "main.j2").write_text(
        "{% block user %}{% if x %}{% include 'a.j2' %}{% else %}{% include 'b.j2' %}{% endif %}{% endblock %}")
    first_b = render("main.j2", root=tmp_path, x=False)
    then_a = render("main.j2", root=tmp_path, x=True)
    again_b = render("main.j2", root=tmp_path, x=False)
    assert first_b.template_sha == then_a.template_sha == again_b.template_sha
    assert [first_b.messages[0]["content"], then_a.messages[0]["content"]] == ["B", "A"]


def test_editing_an_include_that_did_not_render_still_changes_the_hash(tmp_path):
    (tmp_path / "a.j2").write_text("A")
    (tmp_path / "b.j2").write_text("B")
    (tmp_path / "main.j2").write_text(
        "{% block user %}{% if x %}{% include 'a.j2' %}{% else %}{% include 'b.j2' %}{% endif %}{% endblock %}")
    before = render("main.j2", root=tmp_path, x=False).template_sha
    (tmp_path / "a.j2").write_text("A, edited")
    assert render("main.j2", root=tmp_path, x=False).template_sha != before
