from caseforge.tasks.casefacts.eval.casenames import CaseNameIndex, normalise_case_name

NAMES = [("1", "Turner v. Murray"), ("2", "Hardt v. Reliance Standard Life Insurance Co."),
         ("3", "Brown v. Board of Education of Topeka"), ("4", "Brown v. Board of Education of Topeka"),
         ("5", "Paris Adult Theatre I v. Slaton"), ("6", "Roe v. Wade")]


def test_normalisation_removes_formatting_differences():
    same = {"turner v murray"}
    assert {normalise_case_name(n) for n in ["Turner v. Murray", "TURNER VS. MURRAY", "Turner versus Murray",
                                             "Turner v Murray (1)", "Turner et al. v. Murray"]} == same
    assert normalise_case_name("Café & Co. v. Smith") == "cafe and v smith"


def test_exact_then_fuzzy_matching():
    index = CaseNameIndex(NAMES)
    assert index.resolve("Roe vs. Wade").case_ids == {"6"} and index.resolve("Roe vs. Wade").how == "exact"
    # the same caption under two ids resolves to both
    assert index.resolve("Brown v. Board of Education of Topeka (2)").case_ids == {"3", "4"}
    assert index.resolve("Hardt v. Reliance Standard Life Ins. Co.").how == "exact"   # abbreviation expanded
    fuzzy = index.resolve("Hardt v. Reliance Standard Life Insurence Co.")             # misspelt
    assert fuzzy.how == "fuzzy" and fuzzy.case_ids == {"2"} and fuzzy.similarity >= 0.9
    # one party differing by a letter or two is a different case, however alike the whole names are
    gordon = CaseNameIndex(NAMES + [("7", "Gordon v. United States")])
    assert gordon.resolve("Borden v. United States").how == "none"
    assert gordon.resolve("Gordon v. U.S.").case_ids == {"7"}
    missing = index.resolve("Marbury v. Madison")
    assert missing.how == "none" and not missing.case_ids


def test_fuzzy_threshold_is_respected():
    strict = CaseNameIndex(NAMES, threshold=0.99)
    assert strict.resolve("Hardt v. Reliance Standard Life Insurence Co.").how == "none"


def test_eval_name_normaliser_decodes_literal_unicode_escapes():
    # the released files carry "\u00e9"-style escapes as text; the builder's normaliser decodes them too
    assert normalise_case_name("Caf\\u00e9 v. Smith") == normalise_case_name("Café v. Smith") == "cafe v smith"
    index = CaseNameIndex([("8", "Mart\u00ednez v. Court of Appeal of California")])
    match = index.resolve("Mart\\u00ednez v. Court of Appeal of California")
    assert match.how == "exact" and match.case_ids == {"8"}
