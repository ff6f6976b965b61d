"""The rules engine's detectors: one module per failure shape, registered by name.

Each entry names ``module:Class`` (an :class:`auditor.core.registry.Registry`); modules load lazily, so
one broken detector is reported and skipped instead of breaking the rest, and the review runs them
in the order listed here.
"""

from __future__ import annotations

from auditor.audit.detectors.base import AuditContext, Detector, FindingDraft, file_finding
from auditor.core.registry import Registry

_DETECTORS = {
    "cumulative_action": "auditor.audit.detectors.cumulative_action:CumulativeActionDetector",
    "authority_evidence": "auditor.audit.detectors.authority_evidence:AuthorityEvidenceDetector",
    "state_drift": "auditor.audit.detectors.state_drift:StateDriftDetector",
    "delegated_disclosure": "auditor.audit.detectors.delegated_disclosure:DelegatedDisclosureDetector",
    "routing_provenance": "auditor.audit.detectors.routing_provenance:RoutingProvenanceDetector",
    "unverified_relay": "auditor.audit.detectors.unverified_relay:UnverifiedRelayDetector",
    "failure_repetition": "auditor.audit.detectors.failure_repetition:FailureRepetitionDetector",
    "failure_termination": "auditor.audit.detectors.failure_termination:FailureTerminationDetector",
    "failure_premature": "auditor.audit.detectors.failure_premature:FailurePrematureDetector",
    "failure_verification": "auditor.audit.detectors.failure_verification:FailureVerificationDetector",
    "failure_ignored_input": "auditor.audit.detectors.failure_ignored_input:FailureIgnoredInputDetector",
    "failure_mismatch": "auditor.audit.detectors.failure_mismatch:FailureMismatchDetector",
    "failure_contradiction": "auditor.audit.detectors.failure_contradiction:FailureContradictionDetector",
    "failure_constraint": "auditor.audit.detectors.failure_constraint:FailureConstraintDetector",
    "request_undone": "auditor.audit.detectors.request_undone:RequestUndoneDetector",
    "choice_criterion": "auditor.audit.detectors.choice_criterion:ChoiceCriterionDetector",
    "coding_verification": "auditor.audit.detectors.coding_verification:CodingVerificationDetector",
    "policy_actions": "auditor.audit.detectors.policy_actions:PolicyActionDetector",
    "policy_confirmation": "auditor.audit.detectors.policy_confirmation:PolicyConfirmationDetector",
    "policy_allowances": "auditor.audit.detectors.policy_allowances:PolicyAllowanceDetector",
    "policy_identifiers": "auditor.audit.detectors.policy_identifiers:PolicyIdentifierDetector",
    "policy_requests": "auditor.audit.detectors.policy_requests:PolicyRequestDetector",
    "policy_quantities": "auditor.audit.detectors.policy_quantities:PolicyQuantityDetector",
    "injected_instruction": "auditor.audit.detectors.injected_instruction:InjectedInstructionDetector",
}
REGISTRY: Registry[type[Detector]] = Registry("detector", _DETECTORS)


def load_detector(name: str) -> Detector:
    return REGISTRY.load(name)()


def available_detectors() -> list[str]:
    return list(REGISTRY)


__all__ = [
    "REGISTRY",
    "AuditContext",
    "Detector",
    "FindingDraft",
    "available_detectors",
    "file_finding",
    "load_detector",
]
