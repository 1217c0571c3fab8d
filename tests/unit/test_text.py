from caseforge.text import html_to_text


def test_words_are_not_glued_where_tags_meet():
    assert html_to_text("<p>established in<i>Roth v. United States</i>and<i>Memoirs</i>.</p>") == \
        "established in Roth v. United States and Memoirs."


def test_markup_escaped_twice_upstream_is_stripped():
    assert html_to_text("&lt;p&gt;Does the &lt;i&gt;pretrial&lt;/i&gt; restraint?&lt;/p&gt;") == \
        "Does the pretrial restraint?"


def test_literal_unicode_escapes_and_entities_are_decoded():
    assert html_to_text("Caf\\u00e9 &amp; bar, x < y") == "Café & bar, x < y"


def test_blocks_become_lines_and_empty_is_none():
    assert html_to_text("<p>One.</p><p>Two, <b>bold</b> (see <i>X</i>).</p>") == "One.\nTwo, bold (see X)."
    assert html_to_text("<p> </p>") is None and html_to_text(None) is None


def test_cell_text_treats_missing_and_blank_cells_as_none():
    from caseforge.text import cell_text

    assert [cell_text(v) for v in (None, float("nan"), "  ", " 70-18 ", 1973)] == [None, None, None, "70-18", "1973"]
