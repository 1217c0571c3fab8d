"""The labelling view of each reviewed benchmark: what the annotator sees (what the judge saw, never the judge's
verdict), the fields they answer (the judge's own scale), and the check that an answer fits the view."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr


@dataclass(frozen=True)
class Field:
    """One answer of the view: a choice among `choices` (nominal), or a rating from 1 to `scale` (ordinal)."""
    name: str
    title: str
    choices: tuple[str, ...] = ()
    scale: int = 0
    required: bool = True
    hint: str = ""

    @property
    def ordinal(self) -> bool:
        return self.scale > 0

    @property
    def categories(self) -> list[str]:
        """Every value the field can take, in the order of its scale."""
        return [str(v) for v in range(1, self.scale + 1)] if self.ordinal else list(self.choices)

    def xml(self, to_name: str) -> str:
        required = ' required="true"' if self.required else ""
        if self.ordinal:
            return (f'<Header value={quoteattr(self.title)}/>\n  <Rating name="{self.name}" toName="{to_name}" '
                    f'maxRating="{self.scale}"{required}/>')
        choices = "".join(f'\n    <Choice value={quoteattr(c)}/>' for c in self.choices)
        hint = f'\n  <Text name="{self.name}_hint" value={quoteattr(self.hint)}/>' if self.hint else ""
        return (f'<Header value={quoteattr(self.title)}/>{hint}\n  <Choices name="{self.name}" toName="{to_name}" '
                f'choice="single" showInLine="true"{required}>{choices}\n  </Choices>')


@dataclass(frozen=True)
class View:
    """A benchmark's labelling view: the texts shown (task data keys, in order, with their headers) and the
    fields answered."""
    benchmark: str
    title: str
    instructions: str
    shown: tuple[tuple[str, str], ...]       # (data key, header)
    fields: tuple[Field, ...]

    def label_config(self) -> str:
        """Label Studio's labelling configuration (XML)."""
        parts = ["<View>", f'  <Header value={quoteattr(self.title)} size="3"/>',
                 f'  <Text name="instructions" value={quoteattr(self.instructions)}/>']
        for key, header in self.shown:
            parts += [f"  <Header value={quoteattr(header)} size=\"5\"/>", f'  <Text name="{key}" value="${key}"/>']
        target = self.shown[0][0]
        parts += ["  " + f.xml(target) for f in self.fields]
        return "\n".join(parts + ["</View>"])

    def sha(self) -> str:
        return hashlib.sha256(self.label_config().encode()).hexdigest()

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def answers(self, result: list) -> tuple[dict[str, str], str | None]:
        """An annotation's result as {field: value}, or the reason it does not fit the view."""
        found: dict[str, str] = {}
        for region in result if isinstance(result, list) else [result]:
            name = region.get("from_name") if isinstance(region, dict) else None
            field = self.field(name) if isinstance(name, str) else None
            if field is None:
                return {}, f"answer outside the labelling view: no field {name!r}"
            value = region.get("value") or {}
            if field.ordinal:
                rating = value.get("rating")
                if not isinstance(rating, int) or isinstance(rating, bool) or not 1 <= rating <= field.scale:
                    return {}, f"answer outside the labelling view: {field.name} {rating!r} is not a rating 1-{field.scale}"
                found[field.name] = str(rating)
            else:
                picked = value.get("choices")
                if not isinstance(picked, list) or len(picked) != 1 or picked[0] not in field.choices:
                    return {}, (f"answer outside the labelling view: {field.name} {picked!r} is not one of "
                                f"{', '.join(field.choices)}")
                found[field.name] = picked[0]
        missing = [f.name for f in self.fields if f.required and f.name not in found]
        if missing:
            return {}, f"answer outside the labelling view: no {', '.join(missing)}"
        return found, None


CASEFACTS_LABELS = ("SUPPORTED", "REFUTED", "OVERRULED")
UNUSABLE = "UNUSABLE"

VIEWS: dict[str, View] = {v.benchmark: v for v in (
    View("casefacts", "Is the claim supported by these cases?",
         "Read the claim and the cases. SUPPORTED: the cases hold what the claim says. REFUTED: they hold the "
         "opposite. OVERRULED: a case held it, and a later case listed here overruled that holding. UNUSABLE: the "
         "claim is unusable (unclear, not a legal rule, or not checkable against these cases).",
         (("claim", "Claim"), ("cases", "Cases (facts, question, conclusion)")),
         (Field("verdict", "Verdict", (*CASEFACTS_LABELS, UNUSABLE)),)),
    View("aquaechr", "How good is this answer to the question?",
         "Score the answer from 1 (poor) to 5 (excellent) on each dimension. Comprehensiveness: it answers the whole "
         "question. Conciseness: nothing superfluous. Fluency: it reads well. The cited paragraphs are what the "
         "answer relies on.",
         (("question", "Question"), ("answer", "Answer"), ("paragraphs", "Cited paragraphs")),
         (Field("comprehensiveness", "Comprehensiveness", scale=5), Field("conciseness", "Conciseness", scale=5),
          Field("answer_fluency", "Fluency", scale=5))),
    View("casegen", "How good is this draft?",
         "Score the draft from 1 to 10 on the dimensions its task lists (leave the others empty), and overall. The "
         "source sections are what the drafting system was given.",
         (("draft", "Draft"), ("dimensions", "Dimensions of this task"), ("sources", "Source sections")),
         tuple(Field(name, name.replace("_", " "), scale=10, required=name == "overall") for name in (
             "factuality", "legal_accuracy", "logical_coherence", "completeness", "relevance", "issue_accuracy",
             "ethics", "judgment_accuracy", "provision_accuracy", "overall"))),
)}


def view_of(benchmark: str) -> View:
    if benchmark not in VIEWS:
        raise ValueError(f"no review for benchmark {benchmark!r} (known: {', '.join(sorted(VIEWS))})")
    return VIEWS[benchmark]
