"""The judge card: who judged (the model as served, else as configured, said which), on how many items people
reviewed, how many people per item, how well the judge agrees with them (figures with 95% intervals, the confusion
matrix as a picture), and what the release policy says of it. One shape for a review on Label Studio and for the
papers' published labels (`caseforge eval aquaechr-filter`: one expert per item)."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from caseforge.release.layout import JUDGE_PICTURE as PICTURE
from caseforge.review.agreement import FieldAgreement, field_agreement
from caseforge.review.views import view_of

JUDGE_STEPS = {"casefacts": "casefacts.factuality", "aquaechr": "aquaechr-judge", "casegen": "casegen-judge"}


@dataclass
class JudgeCard:
    benchmark: str
    judge: str                        # the judge's step (ops.llm_calls.step)
    models: list[dict]                # {model, served_model, answers}, most answers first
    reviewers: str                    # who reviewed: "people on Label Studio", "the paper's expert", ...
    pushed: int                       # items put before the reviewers
    annotators_per_item: int
    fields: list[FieldAgreement] = field(default_factory=list)
    sample: str = ""                  # how the items were chosen
    verdict: str | None = None        # the release policy's reason when the card is below it (None: it meets it)
    policy: str = ""                  # the policy, in words
    picture: bytes | None = None      # the confusion matrices, PNG

    @property
    def reviewed(self) -> int:
        """Items with an answer from every annotator asked for, on every required field (the least of the fields)."""
        return min((f.items for f in self.fields), default=0)

    def model_line(self) -> str:
        if not self.models:
            return f"no answer of the judge ({self.judge}) is recorded in this warehouse"
        parts = []
        for m in self.models:
            if m.get("served_model"):
                parts.append(f"{m['served_model']} as served (configured as {m['model']}; {m['answers']} answers)")
            else:
                parts.append(f"{m['model']} as configured; the server did not say which model served it "
                             f"({m['answers']} answers)")
        return "; ".join(parts)

    def markdown(self, heading: str = "##") -> str:
        status = ("Reviewed: meets the release policy" if self.verdict is None else f"**Unreviewed**: {self.verdict}")
        lines = [f"{heading} Judge card", "",
                 f"- Judge: step `{self.judge}`, {self.model_line()}.",
                 f"- Reviewed by {self.reviewers}: {self.reviewed} items with every answer of "
                 f"{self.annotators_per_item} annotator(s) per item, of {self.pushed} put before them"
                 + (f" ({self.sample})" if self.sample else "") + ".",
                 *([f"- Release policy: {status} ({self.policy})."] if self.policy else []), "",
                 "| field | between | figure | value | 95% interval | items | interval |",
                 "| --- | --- | --- | --- | --- | --- | --- |"]
        for f in self.fields:
            for between, figures in (("annotators", f.annotators), ("judge vs consensus", f.judge)):
                for fig in figures:
                    value = "n/a" if fig.value is None else f"{fig.value:.3f}"
                    interval = "n/a" if fig.low is None else f"[{fig.low:.3f}, {fig.high:.3f}]"
                    lines.append(f"| {f.field} | {between} | {fig.name} | {value} | {interval} | {fig.n} | "
                                 f"{fig.interval} |")
        lines.append("")
        for f in self.fields:
            if not f.confusion:
                continue
            lines += [f"Confusion matrix of {f.field} (rows: the judge; columns: the consensus"
                      + (f"; {f.no_consensus} items without consensus left out" if f.no_consensus else "") + "):", "",
                      "| judge \\ consensus | " + " | ".join(f.categories) + " |",
                      "| --- |" + " --- |" * len(f.categories)]
            lines += [f"| {c} | " + " | ".join(str(v) for v in row) + " |" for c, row in zip(f.categories, f.confusion)]
            lines.append("")
        if self.picture:
            lines += [f"![confusion matrices of the judge against the consensus]({PICTURE})", ""]
        return "\n".join(lines)

    def lines(self) -> list[str]:
        """The card for a terminal: one line per figure."""
        out = [f"judge {self.judge}: {self.model_line()}",
               f"reviewed by {self.reviewers}: {self.reviewed} items, {self.annotators_per_item} annotator(s) per "
               f"item, of {self.pushed} put before them",
               *(["release policy: " + ("met" if self.verdict is None else f"below: {self.verdict}")]
                 if self.policy else [])]
        for f in self.fields:
            out += [f"{f.field} annotators {fig.text()}" for fig in f.annotators]
            out += [f"{f.field} judge vs consensus {fig.text()}" for fig in f.judge]
            if f.confusion:
                out.append(f"{f.field} confusion (rows judge, columns consensus; {', '.join(f.categories)}): "
                           + json.dumps(f.confusion))
        return out

    def as_dict(self) -> dict:
        return {"benchmark": self.benchmark, "judge": self.judge, "models": self.models, "reviewers": self.reviewers,
                "pushed": self.pushed, "reviewed": self.reviewed, "annotators_per_item": self.annotators_per_item,
                "sample": self.sample, "policy": self.policy, "verdict": self.verdict,
                "fields": [f.as_dict() for f in self.fields]}

    def rai(self) -> dict:
        """Croissant's Responsible-AI fields for how the judge was reviewed."""
        figures = "; ".join(fig.text() for f in self.fields for fig in f.judge)
        return {
            "rai:dataAnnotationProtocol": (
                f"Every item was labelled by the LLM judge (step {self.judge}, {self.model_line()}). {self.reviewers} "
                f"reviewed {self.reviewed} of them ({self.sample or 'as listed'}), each answering the judge's own "
                f"question without seeing its verdict or the other annotators' answers. Judge against the "
                f"annotators' consensus: {figures or 'no figure'}."),
            "rai:dataAnnotationPlatform": "Label Studio" if "Label Studio" in self.reviewers else self.reviewers,
            "rai:annotationsPerItem": str(self.annotators_per_item),
            "rai:dataAnnotationAnalysis": ("Agreement by krippendorff (alpha), irrCAC (Gwet's AC1/AC2), scikit-learn "
                                           "(Cohen's kappa, confusion matrix) and scipy (Spearman), with 95% intervals."
                                           + ("" if self.verdict is None else f" Unreviewed: {self.verdict}")),
        }


def judge_models(con, benchmark: str) -> list[dict]:
    """The judge's models with their answers: as served where ops.llm_calls records it (issue 41), else as
    configured."""
    from caseforge.warehouse.statements import run_sql

    served = con.execute("SELECT count(*) FROM information_schema.columns WHERE table_schema = 'ops' AND "
                         "table_name = 'llm_calls' AND column_name = 'served_model'").fetchone()[0]
    statement = "review/judge_models_served.sql" if served else "review/judge_models.sql"
    return [{"model": m, "served_model": s, "answers": int(n)}
            for m, s, n in run_sql(con, statement, {"step": JUDGE_STEPS[benchmark]}).fetchall()]


def table_card(benchmark: str, judge: str, models: list[dict], reviewers: str, overlap: int,
               answers: dict[str, dict[str, list[str | None]]], verdicts: dict[str, dict[str, str]], pushed: int,
               seed: int, resamples: int, fields=None, sample: str = "") -> JudgeCard:
    """A card from plain tables: `answers` item -> field -> the annotators' values (padded with None to `overlap`),
    `verdicts` item -> field -> the judge's value. `fields`: the view's (default: the benchmark's view)."""
    fields = list(fields if fields is not None else view_of(benchmark).fields)
    card = JudgeCard(benchmark, judge, models, reviewers, pushed, overlap, sample=sample)
    for f in fields:
        per_item = {item: (values.get(f.name) or [None] * overlap) for item, values in answers.items()}
        if not f.required:
            per_item = {i: v for i, v in per_item.items() if any(x is not None for x in v)}
        judge_of = {item: verdicts.get(item, {}).get(f.name) for item in per_item}
        card.fields.append(field_agreement(f.name, f.categories, f.ordinal, per_item, judge_of, seed, resamples))
    panels = [(f.field, f.categories, f.confusion) for f in card.fields if f.confusion]
    if panels:
        from caseforge.plots import confusion_matrices

        card.picture = confusion_matrices(panels, f"{benchmark}: the judge against {reviewers}",
                                          xlabel="consensus")
    return card


def review_card(con, benchmark: str, review) -> JudgeCard:
    """The judge card of `benchmark` from the warehouse's review tables; `review`: the settings' [review] table."""
    from caseforge.warehouse.statements import run_sql

    overlap = review.annotators_per_item
    answers: dict[str, dict[str, list]] = {}
    verdicts: dict[str, dict[str, str]] = {}
    order: dict[str, list[int]] = {}
    for item_id, judge, annotation_id, _annotator, name, value in run_sql(
            con, "review/reviewed.sql", {"benchmark": benchmark}).fetchall():
        verdicts[item_id] = json.loads(judge)
        answers.setdefault(item_id, {})
        if annotation_id is None:
            continue
        seen = order.setdefault(item_id, [])
        if annotation_id not in seen:
            seen.append(annotation_id)
        slot = seen.index(annotation_id)
        if slot < overlap:
            answers[item_id].setdefault(name, [None] * overlap)[slot] = value
    sample = (f"a stratified sample by label, score band and source year, seed {review.seed}, "
              f"{review.sample_size} items asked")
    card = table_card(benchmark, JUDGE_STEPS[benchmark], judge_models(con, benchmark), "people on Label Studio",
                      overlap, answers, verdicts, len(verdicts), review.seed, review.bootstrap_resamples, sample=sample)
    return apply_policy(card, review.policy)


def apply_policy(card: JudgeCard, policy) -> JudgeCard:
    """Set the card's verdict: None when it meets `policy` ([review.policy]), else the reason in one line."""
    card.policy = (f"at least {policy.min_reviewed} reviewed items and the judge's {policy.agreement} against the "
                   f"consensus at least {policy.min_agreement} at the low end of its 95% interval; below it the release "
                   f"is {'held back' if policy.below == 'hold' else 'marked unreviewed'}")
    if card.reviewed < policy.min_reviewed:
        card.verdict = f"{card.reviewed} reviewed items, fewer than min_reviewed {policy.min_reviewed}"
        return card
    for f in card.fields:
        figure = f.judge_figure(policy.agreement)
        low = None if figure is None else figure.low
        if low is None or low < policy.min_agreement:
            shown = "n/a" if low is None else f"{low:.3f}"
            card.verdict = (f"the judge's {policy.agreement} on {f.field} is {shown} at the low end of its 95% interval, "
                            f"below min_agreement {policy.min_agreement}")
            return card
    card.verdict = None
    return card


def release_judge(con, benchmark: str) -> JudgeCard:
    """The judge card a release of `benchmark` carries, under the release policy ([review.policy]): ReleaseHeld
    when the card is below it and the policy holds such a release back."""
    from caseforge.release.writer import ReleaseHeld
    from caseforge.settings import load_settings
    from caseforge.warehouse.statements import table_exists

    review = load_settings().file.review
    if table_exists(con, "review.items"):
        card = review_card(con, benchmark, review)
    else:                  # a warehouse read before migration 180: nothing was reviewed
        card = apply_policy(table_card(benchmark, JUDGE_STEPS[benchmark], judge_models(con, benchmark),
                                       "people on Label Studio", review.annotators_per_item, {}, {}, 0, review.seed,
                                       review.bootstrap_resamples), review.policy)
    if card.verdict is not None and review.policy.below == "hold":
        raise ReleaseHeld(f"the {benchmark} release is held back by the release policy ([review.policy] below = "
                          f"\"hold\"): {card.verdict}")
    return card
