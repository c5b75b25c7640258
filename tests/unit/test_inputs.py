"""The inputs a result read (golden_al.safeio.inputs)."""

from __future__ import annotations

from pathlib import Path

from golden_al.safeio.inputs import Input, digest_of, file_input, text_input, value_input


def test_a_file_input_changes_with_its_content_and_its_absence(tmp_path: Path) -> None:
    p = tmp_path / "r.yaml"
    absent = file_input("file", p, name="r.yaml")
    assert absent == Input("file", "r.yaml", None)
    p.write_text("a: 1\n")
    one = file_input("file", p, name="r.yaml")
    p.write_text("a: 2\n")
    two = file_input("file", p, name="r.yaml")
    assert None not in (one.digest, two.digest)
    assert len({absent, one, two}) == 3
    assert one == text_input("file", "r.yaml", "a: 1\n")


def test_the_digest_of_inputs_is_order_free_and_sees_every_field() -> None:
    a, b = value_input("THINKING_MODE", "thinking_on"), text_input("curve", "c.yaml", "x")
    assert digest_of([a, b]) == digest_of([b, a, a])
    assert digest_of([a, b]) != digest_of([value_input("THINKING_MODE", "thinking_off"), b])
    assert digest_of([a]) != digest_of([Input("file", a.name, a.digest)])
    assert a.to_dict() == {"kind": "env", "name": "THINKING_MODE", "digest": a.digest}
