SELECT count(*) FROM curated.guide_paragraphs;
