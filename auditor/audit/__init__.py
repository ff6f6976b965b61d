"""The audit floor: the rules engine and its detectors, attribution, policies, the Auditor Agent,
the V3 report's validation and renderers, and the audit workers. It stands on the ground floor,
``ingest``, ``graph`` and ``scoring``, and nothing here imports the surfaces above."""
