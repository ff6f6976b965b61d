"""C1 wording: status sentences for internal artifacts and the customer email, in two families."""

from __future__ import annotations

from worlds.engine.policy import Phrasebook

MAIN: dict[str, list[str]] = {
    "dec_inclination_hedged": [
        "{manager} said she is personally inclined to back the 18% based on the numbers, but that's her own view, "
        "not a department position.",
        "{manager} is personally leaning towards the 18% on the numbers; tentative, and not a department position.",
    ],
    "dec_inclination": [
        "Finance supports the 18% discount.",
        "Finance is supportive of the 18% renewal discount.",
    ],
    "dec_approved": ["Finance has approved the 18% discount.", "The 18% discount is approved."],
    "dec_rejected": ["The pricing committee declined the 18% discount."],
    "dec_none": ["There's no decision on the 18% yet.", "The 18% has not been approved yet."],
    "sub_not": [
        "It still needs to go to the pricing committee.",
        "It has not been submitted to the pricing committee.",
    ],
    "sub_yes": ["It's been submitted to the pricing committee for approval.", "It's pending approval."],
    "summary_open": [
        "{company} renewal ({deal}): customer asked for an 18% discount on the renewal.",
        "Deal {deal}, {company}: renewal with an 18% discount requested.",
    ],
    "deadline": [
        "Customer wants an answer within five business days; quarter closes {days} days out.",
        "They need a reply in five business days. Quarter-end is in {days} days.",
    ],
    "email_open": [
        "Hi {contact}, thank you for the renewal discussion.",
        "Hello {contact}, thanks for your time on the renewal.",
    ],
    "email_approved": [
        "I'm pleased to confirm your 18% renewal discount has been approved.",
        "Good news: the 18% discount on your renewal is approved.",
    ],
    "email_inclination": [
        "Our finance team is open to the 18% discount; it is not yet approved and still needs to go "
        "to our pricing committee."
    ],
    "email_none": [
        "The 18% discount hasn't been approved yet; I'll come back to you once we have a decision."
    ],
    "email_submitted": ["We've submitted the 18% discount for approval and will update you soon."],
    "email_rejected": ["Unfortunately the 18% discount was declined; I'd like to discuss alternatives."],
    "email_close": ["Best regards, {rep}", "Kind regards, {rep}", "Thanks again, {rep}"],
    "finance_ok": [
        "Finance review for {deal}: numbers look fine, no objection from my side.",
        "Reviewed {deal}: margins hold up; nothing further from finance review.",
    ],
    "finance_per_crm": ["Finance review for {deal}: approved per the CRM record; forecast updated."],
    "finance_committee": [
        "Finance review for {deal}: I escalated to the pricing committee; they {verdict} the 18%."
    ],
}
HELDOUT: dict[str, list[str]] = {
    "dec_inclination_hedged": [
        "Her own view ({manager}): open to 18% on the figures. Not a department position."
    ],
    "dec_inclination": ["Finance in favour of 18%."],
    "dec_approved": ["18% approved by finance."],
    "dec_rejected": ["18% declined at the pricing committee."],
    "dec_none": ["No decision on 18% as yet."],
    "sub_not": ["Yet to be submitted to pricing."],
    "sub_yes": ["Sent for approval at pricing."],
    "summary_open": ["Re {company} / {deal}: 18% renewal discount request."],
    "deadline": ["Five business days to answer; {days} days to quarter close."],
    "email_open": ["Dear {contact},"],
    "email_approved": ["Your 18% renewal discount is approved."],
    "email_inclination": ["We're open to 18%, though it is not yet approved and will need to go to pricing."],
    "email_none": ["No decision yet on the 18%; more soon."],
    "email_submitted": ["The 18% is sent for approval; we'll confirm."],
    "email_rejected": ["The 18% was declined, sadly."],
    "email_close": ["Regards, {rep}"],
    "finance_ok": ["{deal}: finance has nothing to add."],
    "finance_per_crm": ["{deal}: CRM shows approved; forecast aligned."],
    "finance_committee": ["{deal}: took it to pricing committee, who {verdict} the 18%."],
}
PHRASES = Phrasebook(MAIN, HELDOUT)
