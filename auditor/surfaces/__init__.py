"""The top floor, where users meet the service: the ``auditor`` command, ``auditor serve`` and the
regenerated evidence report. Everything below may be imported here; nothing imports these."""
