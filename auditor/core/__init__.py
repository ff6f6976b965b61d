"""The ground floor: the event store (with traces and reports as stored), errors, the model gateway
and the local model, text utilities and the lazy registry. It imports only ``schemas``; everything
else stands on it."""
