"""People measure the judge (docs/review.md): a stratified sample of a build's items goes to a Label Studio project,
the annotations come back into the warehouse (schema review), agreement is computed by the field's libraries, and
every release of a benchmark an LLM judge filtered carries a judge card under a release policy.

The modules (each imports only those listed before it, and caseforge's core):

    views.py        View, Field, VIEWS, view_of: each benchmark's labelling view and the check of an answer
    sample.py       Item, stratified_sample: the sample by label, score band and source year
    labelstudio.py  LabelStudio (a small REST client), ReviewUnreachable
    agreement.py    field_agreement, Figure, FieldAgreement: α, AC1/AC2, κ, accuracy, ρ, confusion, intervals
    loop.py         push, pull, NothingToReview: the items out, the annotations in
    card.py         JudgeCard, review_card, table_card, apply_policy, release_judge: the judge card and the policy
    server.py       the documented Label Studio server (`make review-server`)
"""
