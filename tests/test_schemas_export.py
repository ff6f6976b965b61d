"""The committed JSON Schema files must match the pydantic models."""

from schemas.export import EXPORTED, SCHEMA_DIR, json_schemas, render


def test_committed_json_schemas_match_models():
    schemas = json_schemas()
    assert set(schemas) == set(EXPORTED)
    for name, schema in schemas.items():
        path = SCHEMA_DIR / f"{name}.schema.json"
        assert path.exists(), f"{path} missing: run 'auditor schemas export'"
        assert path.read_text(encoding="utf-8") == render(schema), (
            f"{path} drifted: run 'auditor schemas export'"
        )
