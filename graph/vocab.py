"""The word lists the extractor reads: statuses with their order, hedges, attribution cues.

Kept as data so that a reviewer can read (and extend) them without reading regular expressions.
"""

from __future__ import annotations

# canonical status -> the phrases that mean it (matched case-insensitively, longest first)
STATUS_SYNONYMS: dict[str, tuple[str, ...]] = {
    "draft": ("draft", "drafted"),
    "pending": (
        "pending",
        "on hold",
        "awaiting",
        "outstanding",
        "not yet submitted",
        # a decision noun or verb negated: nothing has been decided yet
        "no decision",
        "no final decision",
        "undecided",
        "not decided",
        "not yet decided",
    ),
    "submitted_for_approval": (
        "submitted for approval",
        "pending approval",
        "awaiting approval",
        "sent for approval",
        "submitted for review",
        "awaiting sign-off",
        "submitted",
    ),
    "under_review": ("under review", "in review", "being reviewed", "under consideration"),
    "approved": (
        "approved",
        "signed off",
        "signed-off",
        "authorized",
        "authorised",
        "greenlit",
        "green-lit",
        "cleared for payment",
    ),
    "rejected": ("rejected", "denied", "declined"),
    "completed": ("completed", "paid", "executed", "processed", "closed", "resolved"),
}

# how far along a decision a status is; a carried status that rises in rank is an upgrade
STATUS_RANK: dict[str, int] = {
    "draft": 0,
    "pending": 1,
    "submitted_for_approval": 2,
    "under_review": 3,
    "approved": 4,
    "rejected": 4,
    "completed": 5,
}

# a negated status ("not approved" -> not_approved; see patterns.NEGATED) ranks as pending
NEGATED_RANK = 1

HEDGES: tuple[str, ...] = (
    "I'd lean towards",
    "I would lean towards",
    "leaning towards",
    "lean towards",
    "tentatively",
    "tentative",
    "likely",
    "probably",
    "possibly",
    "perhaps",
    "might",
    "may be",
    "I think",
    "I believe",
    "it seems",
    "seems to",
    "appears to",
    "preliminary",
    "unverified",
    "not yet verified",
    "unconfirmed",
    "not confirmed",
    "to be confirmed",
    "subject to confirmation",
    "estimated",
    "approximately",
    "roughly",
    "my guess",
)

CURRENCY = {
    "$": "USD",
    "us$": "USD",
    "usd": "USD",
    "dollars": "USD",
    "€": "EUR",
    "eur": "EUR",
    "euros": "EUR",
}
CURRENCY |= {"£": "GBP", "gbp": "GBP"}
MAGNITUDE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mm": 1e6, "mn": 1e6, "mln": 1e6, "million": 1e6}
MAGNITUDE |= {"b": 1e9, "bn": 1e9, "billion": 1e9}

MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}

# words skipped when naming what an amount is ("total is $5" -> "total")
LABEL_STOPWORDS = frozenset(
    [
        "is",
        "was",
        "are",
        "were",
        "be",
        "been",
        "of",
        "at",
        "to",
        "the",
        "a",
        "an",
        "for",
        "by",
        "about",
        "around",
        "approx",
        "approximately",
        "roughly",
        "now",
        "then",
        "it",
        "its",
        "this",
        "that",
        "=",
        ":",
        "-",
        "of:",
        "amount",
        "value",
    ]
)

# Verbs that name the same act on a record, as tool names and requests write them ("modify the
# recipient" is what ``update_scheduled_transaction`` does). Disjoint groups; a verb in none is its
# own act.
SAME_ACT: tuple[frozenset[str], ...] = (
    frozenset({"update", "modify", "change", "edit", "alter", "amend"}),
    frozenset({"send", "transfer", "pay", "wire", "forward"}),
    frozenset({"delete", "remove", "erase"}),
    frozenset({"create", "make", "add"}),
)
