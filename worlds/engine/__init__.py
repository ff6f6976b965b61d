"""The shared micro-world engine: runtime, workflow configuration, episodes, policies, cohorts."""
