"""The inputs a result read (golden_al.safeio.inputs)."""

from __future__ import annotations

from golden_al.safeio.inputs import Input, digest_of, text_input, value_input


def test_a_text_input_changes_with_its_content_and_its_absence() -> None:
    absent = text_input("file", "r.yaml", None)
    assert absent == Input("file", "r.yaml", None)
    one, two = text_input("file", "r.yaml", "a: 1\n"), text_input("file", "r.yaml", b"a: 2\n")
    assert None not in (one.digest, two.digest)
    assert len({absent, one, two}) == 3


def test_the_digest_of_inputs_is_order_free_and_sees_every_field() -> None:
    a, b = value_input("THINKING_MODE", "thinking_on"), text_input("curve", "c.yaml", "x")
    assert digest_of([a, b]) == digest_of([b, a, a])
    assert digest_of([a, b]) != digest_of([value_input("THINKING_MODE", "thinking_off"), b])
    assert digest_of([a]) != digest_of([Input("file", a.name, a.digest)])
    assert a.to_dict() == {"kind": "env", "name": "THINKING_MODE", "digest": a.digest}
