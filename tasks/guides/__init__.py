"""ECHR case-law guides: page text, paragraphs, citations and their resolution."""
