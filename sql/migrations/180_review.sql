-- People measure the judge (issue 44): the items of a build pushed to a Label Studio project, the annotations
-- pulled back from it, and the annotations refused with their reasons. A pull replaces a project's annotations
-- and refusals as a whole (an edited annotation replaces its earlier version, a deleted one is gone).
CREATE SCHEMA IF NOT EXISTS review;

-- One Label Studio project per benchmark and server: the labelling view it was made with (sha256 of its XML).
CREATE TABLE IF NOT EXISTS review.projects (
    benchmark  VARCHAR NOT NULL,
    server     VARCHAR NOT NULL,          -- the Label Studio base URL
    project_id BIGINT NOT NULL,
    view_sha   VARCHAR NOT NULL,
    overlap    INTEGER NOT NULL,          -- annotators per item the project asks for
    PRIMARY KEY (benchmark, server)
);

-- An item pushed for review: what the judge said of it (hidden from the annotators) and its stratum.
CREATE TABLE IF NOT EXISTS review.items (
    benchmark  VARCHAR NOT NULL,
    item_id    VARCHAR NOT NULL,
    ref        VARCHAR NOT NULL,          -- what the task carries instead of the item id (which may tell a label)
    project_id BIGINT NOT NULL,
    task_id    BIGINT NOT NULL,
    stratum    VARCHAR NOT NULL,          -- label | score band | source year
    judge      JSON NOT NULL,             -- the judge's verdict: {field: value}
    PRIMARY KEY (benchmark, item_id)
);

-- An annotation accepted from Label Studio: one row per (annotation, field of the view).
CREATE TABLE IF NOT EXISTS review.annotations (
    benchmark     VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,
    task_id       BIGINT NOT NULL,
    annotation_id BIGINT NOT NULL,
    annotator     BIGINT NOT NULL,        -- the Label Studio user who posted it (updated_by = completed_by)
    field         VARCHAR NOT NULL,
    value         VARCHAR NOT NULL,
    updated_at    VARCHAR,                -- as Label Studio gives it
    PRIMARY KEY (benchmark, annotation_id, field)
);

-- An annotation refused, with the reason (completed_by is not updated_by; an answer outside the view; an
-- annotation beyond the items' overlap).
CREATE TABLE IF NOT EXISTS review.refusals (
    benchmark     VARCHAR NOT NULL,
    item_id       VARCHAR,
    task_id       BIGINT NOT NULL,
    annotation_id BIGINT NOT NULL,
    completed_by  BIGINT,
    updated_by    BIGINT,
    reason        VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, annotation_id)
);
