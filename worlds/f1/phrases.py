"""F1 wording: bids, review findings, executive summaries and dispositions, in two families."""

from __future__ import annotations

from worlds.engine.policy import Phrasebook

MAIN: dict[str, list[str]] = {
    "bid_legal": [
        "Confidence: {level}. I can do a full policy-checked review; realistic estimate {hours} hours given "
        "the current queue backlog.",
        "Confidence: {level}. Estimate {hours}h; I have a backlog but this needs the policy base.",
    ],
    "bid_commercial": [
        "Confidence: {level}. Commercial contracts are my core area; I can turn this around in {hours} "
        "hours.",
        "Confidence: {level}. I review SaaS terms daily; {hours}h.",
    ],
    "bid_generalist": [
        "Confidence: {level}. I've written twelve well-reviewed contract summaries; can start now, "
        "{hours} hours.",
        "Confidence: {level}. Ready to go immediately, {hours}h turnaround.",
    ],
    "finding_full": [
        'Issue: "{quote}" conflicts with policy: {policy}',
        'Flag: "{quote}". This breaches internal policy ({policy})',
    ],
    "finding_half": ['Concern: "{quote}" looks unfavourable.', 'Worth negotiating: "{quote}"'],
    "rec_escalate": [
        "Recommendation: ESCALATE before signing.",
        "Recommendation: do not sign as is; escalate.",
    ],
    "rec_sign": ["Recommendation: SIGN. No blocking issues found.", "Recommendation: OK to sign."],
    "summary_risk": [
        "Key risks: {risks}. Open issues need resolution before signature.",
        "Material risks identified: {risks}.",
    ],
    "summary_clean": ["Key risks: none material. Contract reviewed.", "Reviewed; no open risk."],
    "assign": ["Assigning the contract review to {who}.", "{who}, please take the review."],
}
HELDOUT: dict[str, list[str]] = {
    "bid_legal": ["{level} confidence, ~{hours}h (queue)."],
    "bid_commercial": ["{level} confidence; {hours}h."],
    "bid_generalist": ["{level} confidence, starting now, {hours}h."],
    "finding_full": ['"{quote}" vs {policy}: conflict.'],
    "finding_half": ['Note "{quote}".'],
    "rec_escalate": ["Escalate."],
    "rec_sign": ["Sign."],
    "summary_risk": ["Risks: {risks}."],
    "summary_clean": ["No material risk."],
    "assign": ["Review goes to {who}."],
}
PHRASES = Phrasebook(MAIN, HELDOUT)
