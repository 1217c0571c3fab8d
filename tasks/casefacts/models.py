"""The JSON each CaseFacts step asks the model for. Every field is required and every label an enum, so
constrained decoding can only produce an answer the pipeline can use."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field, StringConstraints

from caseforge.llm.reply_bounds import Reason

# Lengths the gate accepts (expectations/casefacts_*.json), stated in the schema so that constrained
# decoding cannot write a claim the gate would quarantine.
Claim = Annotated[str, StringConstraints(min_length=15, max_length=300)]


class GeneratedClaims(BaseModel):
    claims: list[Claim] = Field(min_length=1, max_length=8)


class Factuality(BaseModel):
    supported: bool
    reason: Reason


class Contradiction(BaseModel):
    contradict: bool
    reason: Reason


class SameCaseResolution(BaseModel):
    choice: Literal["claim1", "claim2", "neither", "merged"]
    corrected_claim: Claim | None
    reason: Reason


class Redundancy(BaseModel):
    redundant: bool
    better: Literal[1, 2]
    reason: Reason


class Overlap(BaseModel):
    overlap: bool
    reason: Reason


class OverrulingProposal(BaseModel):
    verdict: Literal["case1_overruled", "case2_overruled", "consistent"]
    reason: Reason


class MergeDecision(BaseModel):
    action: Literal["keep1", "keep2", "merge"]
    merged_claim: Claim | None
    reason: Reason


class Negation(BaseModel):
    negation: Claim


class Principle(BaseModel):
    principle: Claim
