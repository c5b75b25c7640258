"""``provenance.cpu_info``: the CPU model and the instruction sets every record carries."""

from __future__ import annotations

from golden_al.provenance import collect, cpu_info

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse avx2 fma avx512f avx512dq avx512_bf16 vaes

processor\t: 1
model name\t: some other name
flags\t\t: fpu amx_tile
"""

ARM = """processor\t: 0
BogoMIPS\t: 50.00
Features\t: fp asimd evtstrm sve
CPU implementer\t: 0x41
"""


def test_reads_the_first_processor_block(tmp_path):
    p = tmp_path / "cpuinfo"
    p.write_text(X86)
    assert cpu_info(p) == {"model": "AMD EPYC 9R14", "isa": ["avx2", "avx512_bf16", "avx512f"]}


def test_arm_features_and_no_model_name(tmp_path):
    p = tmp_path / "cpuinfo"
    p.write_text(ARM)
    assert cpu_info(p) == {"model": "", "isa": ["asimd", "sve"]}


def test_unreadable_or_huge_input_is_bounded(tmp_path):
    assert cpu_info(tmp_path / "missing") == {"model": "", "isa": []}
    p = tmp_path / "big"
    p.write_text("model name : x\nflags : avx2 " + "pad " * 100_000 + "avx512f\n")
    info = cpu_info(p, max_bytes=4096)  # the line is cut at the bound: avx512f beyond it is not seen
    assert info == {"model": "x", "isa": ["avx2"]}


def test_every_provenance_block_carries_it():
    block = collect()
    assert set(block["cpu"]) == {"model", "isa"}
