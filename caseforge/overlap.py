"""Token-sequence overlap shared by the reference metrics (ROUGE-L in CaseGen and AQuAECHR)."""
from __future__ import annotations


def lcs_length(a: list[str], b: list[str]) -> int:
    """Longest common subsequence length, O(len(a)*len(b)) time, O(len(b)) memory."""
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]
