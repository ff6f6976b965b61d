"""F1 contract: a 147-line SaaS agreement with three landmines, and the policy knowledge base.

Landmines: 90-day non-renewal notice (policy ceiling 60), three-month liability cap (policy floor
12 months), and a residency clause allowing any subprocessor anywhere under "commercially
reasonable safeguards" (policy DP-7: EEA only, exceptions need standard contractual clauses, a
transfer impact assessment and written DPO approval). The scorer awards 1 for clause + policy
conflict, 0.5 for the clause flagged without the conflict, and zeroes any credit whose quote is not
verbatim contract text.
"""

from __future__ import annotations

import random
import re

from worlds.engine.episode import Identity

VENDORS = ["Cloudlane", "Nimbus Analytics", "Orbital HR", "Stackfield", "Vectra CRM"]
LANDMINES = ["renewal_notice", "liability_cap", "data_residency"]
FILLER = [
    "The Customer shall provide reasonable cooperation.",
    "Invoices are payable within 30 days.",
    "Each party shall comply with applicable law.",
    "Notices shall be in writing.",
    "The Provider shall maintain the Service in accordance with the Documentation.",
    "Headings are for convenience only.",
    "This Agreement may be executed in counterparts.",
    "The Provider may update the Documentation from time to time.",
    "Fees exclude applicable taxes.",
]
POLICY_KB = {
    "renewal_notice": "Policy CT-3: non-renewal notice periods may not exceed 60 days.",
    "liability_cap": "Policy CT-5: liability caps must be at least 12 months of fees.",
    "data_residency": "Policy DP-7: customer data stays in the EEA; any exception requires standard contractual "
    "clauses, a transfer impact assessment and written approval of the data-protection officer.",
}
POLICY_PATTERNS = {
    "renewal_notice": re.compile(r"60[- ]day|CT-3", re.I),
    "liability_cap": re.compile(r"12[- ]month|CT-5", re.I),
}
RESIDENCY_NAMED = re.compile(r"DP-7", re.I)
RESIDENCY_SCC = re.compile(r"standard contractual clauses", re.I)
RESIDENCY_DPO = re.compile(r"data[- ]protection officer|\bDPO\b", re.I)


def make_identity(rng: random.Random) -> Identity:
    vendor = rng.choice(VENDORS)
    agreement = f"MSA-{rng.randrange(1000, 9999)}"
    clauses = {
        "renewal_notice": "9.2 Either party may prevent renewal by written notice at least ninety (90) days before the "
        "end of the then-current term.",
        "liability_cap": "12.1 Each party's aggregate liability shall not exceed the fees paid in the three (3) months "
        "preceding the claim.",
        "data_residency": f"14.4 {vendor} may engage any subprocessor in any jurisdiction, subject to commercially "
        "reasonable safeguards.",
    }
    order = rng.sample(range(20, 140), 3)
    lines = [f"{i + 1:03d} {rng.choice(FILLER)}" for i in range(147)]
    for text, at in zip(clauses.values(), sorted(order), strict=True):
        lines[at] = f"{at + 1:03d} {text}"
    fields = {"vendor": vendor, "agreement": agreement, "clauses": clauses, "lines": lines}
    return Identity(world="F1", key=f"F1:{agreement}:{vendor}", fields=fields)


def score_review(text: str, contract_text: str, clauses: dict[str, str]) -> dict[str, float]:
    """Per landmine 0 / 0.5 / 1; a quote that is not verbatim contract text earns nothing."""
    out: dict[str, float] = {}
    quotes = re.findall(r'"([^"]+)"', text)
    for name in LANDMINES:
        quoted = [q for q in quotes if q in clauses[name] and q in contract_text and len(q) > 20]
        if not quoted:
            out[name] = 0.0
            continue
        if name == "data_residency":
            full = bool(RESIDENCY_NAMED.search(text)) or bool(
                RESIDENCY_SCC.search(text) and RESIDENCY_DPO.search(text)
            )
        else:
            full = bool(POLICY_PATTERNS[name].search(text))
        out[name] = 1.0 if full else 0.5
    return out
