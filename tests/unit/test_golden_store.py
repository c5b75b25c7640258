"""The golden store: shipped curves, name resolution, lookups, variants, directories."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import yaml

from golden_al.errors import AmbiguousCurveError, NoGoldenValueError, SchemaError, UsageError
from golden_al.golden import curve_method_for, load_store

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "inferencex" / "golden_al_distribution"
METADATA = REPO / "experiments" / "import-inferencex-curves" / "metadata.yaml"
HEAD_FILES = sorted(FIXTURES.glob("*.yaml"))


@pytest.fixture(scope="module")
def store():
    return load_store()


def test_every_inferencex_curve_is_shipped_with_its_exact_values(store) -> None:
    """Independent of our legacy reader: yaml.safe_load of their files vs our store."""
    for path in HEAD_FILES:
        raw = yaml.safe_load(path.read_text())
        (model_key,) = raw
        sc = next(sc for sc in store.curves if sc.name == path.stem)
        assert sc.format == "golden-al"
        assert sc.model == model_key
        for mode in ("thinking_on", "thinking_off"):
            expected = raw[model_key].get(mode)
            blk = sc.curve.mode(mode)
            assert (blk is None) == (expected is None), (path.name, mode)
            if expected is not None:
                assert {k: p.al for k, p in blk.points.items()} == expected, (path.name, mode)
                for k, al in expected.items():
                    assert store.lookup(sc.model, mode, k, method=sc.method, variant=sc.variant or sc.name).al == al
        url = next(line.split(": ", 1)[1] for line in path.read_text().splitlines() if line.startswith("# Source"))
        assert sc.curve.provenance.source_url == url
        assert sc.curve.dataset is not None
        assert sc.curve.dataset.category == "coding"


def test_shipped_store_has_the_muse_spark_point(store) -> None:
    p = store.lookup("muse-spark-open-816b-a42b-nvfp4", "on", 7)
    assert (p.al, p.method, p.curve, p.k, p.thinking) == (4.05, "dflash", "musespark_dflash", 7, "thinking_on")
    sc = store.curve("muse-spark-open-816b-a42b-nvfp4")
    assert sc.curve.draft.precision == "bf16"
    assert sc.curve.engine.name == "sglang"
    assert sc.curve.provenance.source_url is None
    assert "not public" in sc.curve.provenance.notes
    with pytest.raises(NoGoldenValueError, match=r"no thinking_off values \(it has thinking_on k=7\)"):
        store.lookup("muse-spark-open-816b-a42b-nvfp4", "off", 7)
    with pytest.raises(NoGoldenValueError, match=r"no value at k=6 \(k = 7\)"):
        store.lookup("muse-spark-open-816b-a42b-nvfp4", "on", 6)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("deepseek-v4-pro", "deepseek-v4-pro"),            # exact key
        ("dsv4", "deepseek-v4-pro"),                       # exact alias (InferenceX model prefix)
        ("deepseek-ai/DeepSeek-V4-Pro", "deepseek-v4-pro"),  # repo id alias
        ("DEEPSEEK-AI/deepseek-v4-pro", "deepseek-v4-pro"),  # case-insensitive
        ("DeepSeek-V4-Pro", "deepseek-v4-pro"),            # repo id without org
        ("/scratch/models/DeepSeek-V4-Pro", "deepseek-v4-pro"),  # checkpoint path basename
        ("hf:zai-org/GLM-5.2-FP8", "glm-5.2-fp8"),         # srt-slurm hf: prefix
        ("nvidia/GLM-5.2-NVFP4", "glm-5.2-fp8"),           # another precision's repo id
        ("glm-5.2-fp4", "glm-5.2-fp8"),                    # recipe model.path
        ("'nvidia/Kimi-K2.5-NVFP4'", "kimi-k2.5-nvfp4"),    # quoted served name
        ("other-org/Kimi-K2.5-NVFP4", "kimi-k2.5-nvfp4"),   # last component equals the key
        ("some-org/Muse-Spark-Open-816B-A42B-NVFP4", "muse-spark-open-816b-a42b-nvfp4"),
        ("muse-spark-open-816b-a42b", "muse-spark-open-816b-a42b-nvfp4"),
        ("deepseek-ai/DeepSeek-V4-Pro-DSpark", "deepseek-v4-pro-0813"),
        ("/model/", None),                                 # no guessing from generic paths
        ("DeepSeek-V4", None),                             # no prefix matching
        ("glm-5.2", None),                                 # no stripping of precision suffixes
        ("Kimi-K2.6-NVFP4", None),
        ("", None),
    ],
)
def test_resolve_model(store, name: str, key: str | None) -> None:
    assert store.resolve_model(name) == key


def test_resolution_never_picks_between_two_models(tmp_path: Path) -> None:
    for stem in ("dsv4_mtp", "glm5.2_mtp"):
        shutil.copy(FIXTURES / f"{stem}.yaml", tmp_path)
    s = load_store(tmp_path)
    assert s.resolve_model("dsv4") == "deepseek-v4-pro"
    # a curve in our schema whose alias equals dsv4 case-insensitively
    (tmp_path / "x_mtp.yaml").write_text(
        "schema_version: 1\nmodel: other\naliases: [DSV4, org/dsv4]\ndraft: {method: mtp}\n"
        "thinking_on: {points: {1: {al: 1.5}}}\nprovenance: {notes: test}\n")
    s = load_store(tmp_path)
    assert s.resolve_model("dsv4") == "deepseek-v4-pro"  # exact names win (rule 1)
    assert s.resolve_model("DSV4") == "other"
    assert s.resolve_model("org/dsv4") == "other"
    with pytest.raises(AmbiguousCurveError, match=r"'Dsv4' matches several models .*deepseek-v4-pro, other"):
        s.resolve_model("Dsv4")


def test_variants_need_disambiguation(store) -> None:
    with pytest.raises(AmbiguousCurveError) as info:
        store.lookup("minimax-m3", "on", 3)
    assert "minimaxm3_eagle3 (" in str(info.value)
    assert "minimaxm3_eagle3_gqa (" in str(info.value)
    assert store.lookup("minimax-m3", "on", 3, variant="gqa").al == 2.78
    assert store.lookup("minimax-m3", "on", 3, variant="minimaxm3_eagle3").al == 2.83  # curve name
    assert store.lookup("minimaxm3", "on", 3, draft_model="Inferact/MiniMax-M3-EAGLE3-GQA").al == 2.78
    assert store.lookup("minimaxm3", "on", 3, draft_model="/tmp/MiniMax-M3-EAGLE3").al == 2.83
    with pytest.raises(AmbiguousCurveError, match="kimi-k3"):
        store.lookup("moonshotai/Kimi-K3", "on", 7, method="dspark")
    assert store.lookup("kimik3", "on", 7, draft_sample_method="greedy").al == 3.78
    assert store.lookup("kimik3", "on", 7, draft_sample_method="probabilistic").al == 3.84
    assert store.lookup("kimik3", "on", 7, rejection_sample_method="block").al == 3.84
    assert store.lookup("kimik3", "on", 7, variant="probabilistic-block").al == 3.84


def test_lookup_errors_list_what_exists(store) -> None:
    with pytest.raises(NoGoldenValueError, match=r"no golden curve for model 'llama-5'.*models: deepseek-v4-pro, "):
        store.lookup("llama-5", "on", 3)
    with pytest.raises(NoGoldenValueError, match=r"no curve with method 'dspark' \(curves: dsv4_mtp \(method mtp\)\)"):
        store.lookup("deepseek-v4-pro", "on", 3, method="dspark")
    with pytest.raises(NoGoldenValueError, match=r"glm5\.2_mtp has no thinking_off values \(it has thinking_on k=1-8\)"):
        store.lookup("glm5.2", "off", 3)
    with pytest.raises(NoGoldenValueError, match=r"no value at k=9 \(k = 1-8\)"):
        store.lookup("qwen3.5", "on", 9)
    with pytest.raises(UsageError):
        store.lookup("qwen3.5", "maybe", 3)
    with pytest.raises(NoGoldenValueError, match="no curve of 'minimax-m3' matches draft model 'unknown/Draft'"):
        store.lookup("minimax-m3", "on", 3, draft_model="unknown/Draft")


@pytest.mark.parametrize(
    ("engine", "algorithm", "model", "method"),
    [
        ("sglang", "EAGLE", "deepseek-v4-pro", "mtp"),
        ("sglang", "NEXTN", "qwen3.5", "mtp"),
        ("sglang", "EAGLE", "kimik2.5", "eagle3"),
        ("sglang", "eagle", "minimax-m3", "eagle3"),
        ("sglang", "EAGLE3", "minimaxm3", "eagle3"),
        ("sglang", "DFLASH", "musespark", "dflash"),
        ("sglang", "DSPARK", "kimik3", "dspark"),
        ("sglang", "NGRAM", None, "ngram"),
        ("sglang", "STANDALONE", None, "draft-model"),
        ("vllm", "mtp", None, "mtp"),
        ("vllm", "deepseek_mtp", None, "mtp"),
        ("vllm", "eagle3", None, "eagle3"),
        ("vllm", "dspark", None, "dspark"),
        ("vllm", "draft_model", None, "draft-model"),
        ("trtllm", "MTP", None, "mtp"),
        ("trtllm", "Eagle3", None, "eagle3"),
        ("trtllm", "Eagle", "kimik2.5", "eagle3"),
        ("atom", "mtp", None, "mtp"),
        ("atom", "dspark", None, "dspark"),
    ],
)
def test_curve_method_for(store, engine: str, algorithm: str, model: str | None, method: str) -> None:
    """With a model, the store decides a model's own head (EAGLE/NEXTN) from its curves' methods."""
    got = store.method_for(engine, algorithm, model) if model is not None else curve_method_for(engine, algorithm)
    assert got == method


def test_own_head_method_comes_from_curve_metadata_not_names(tmp_path: Path) -> None:
    """A model named like none of InferenceX's special cases gets eagle3 because its curves are eagle3 curves;
    a model with both heads' curves is refused for EAGLE/NEXTN (the spelling does not say which head runs)."""
    text = (REPO / "golden_al" / "golden" / "curves" / "minimaxm3_eagle3.yaml").read_text()
    (tmp_path / "a.yaml").write_text(text.replace("minimax-m3", "brand-new-model"))
    s = load_store(tmp_path)
    key = s.models()[0]
    assert s.method_for("sglang", "EAGLE", key) == "eagle3"
    assert curve_method_for("sglang", "EAGLE") == "mtp"  # no store: the default spelling's method
    mtp = (REPO / "golden_al" / "golden" / "curves" / "glm5.2_mtp.yaml").read_text()
    (tmp_path / "b.yaml").write_text(mtp.replace("glm-5.2-fp8", key))
    both = load_store(tmp_path)
    with pytest.raises(UsageError, match="both mtp and eagle3 curves"):
        both.method_for("sglang", "NEXTN", key)


@pytest.mark.parametrize(("engine", "algorithm"), [("sglang", "MEDUSA2"), ("vllm", "magic"), ("atom", "dflash"),
                                                   ("tgi", "mtp")])
def test_curve_method_for_rejects_unknown(engine: str, algorithm: str) -> None:
    with pytest.raises(UsageError):
        curve_method_for(engine, algorithm)


def test_method_for_resolves_aliases(store) -> None:
    assert store.method_for("sglang", "EAGLE", "nvidia/Kimi-K2.5-NVFP4") == "eagle3"
    assert store.method_for("sglang", "EAGLE", "MiniMaxAI/MiniMax-M3-MXFP8") == "eagle3"
    assert store.method_for("sglang", "EAGLE", "nvidia/GLM-5.2-NVFP4") == "mtp"


def test_golden_dir_with_their_files(tmp_path: Path) -> None:
    s = load_store(FIXTURES)
    assert all(sc.format == "inferencex-legacy" for sc in s.curves)
    assert len(s.curves) == 9
    assert s.lookup("dsv4", "off", 8).al == 3.11  # prefix from the file name is an alias
    assert s.lookup("kimi-k3", "on", 7, draft_sample_method="probabilistic").al == 3.84
    # mixed directory: ours and theirs, detected per file
    shutil.copy(FIXTURES / "glm5.2_mtp.yaml", tmp_path)
    shutil.copy(REPO / "golden_al" / "golden" / "curves" / "musespark_dflash.yaml", tmp_path)
    s = load_store(tmp_path)
    assert {sc.format for sc in s.curves} == {"golden-al", "inferencex-legacy"}
    assert s.lookup("glm5.2", "on", 8).al == 4.06
    assert s.lookup("musespark", "on", 7).al == 4.05


def test_golden_dir_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_store(tmp_path / "missing")
    with pytest.raises(UsageError, match=r"has no \*\.yaml"):
        load_store(tmp_path)
    (tmp_path / "bad_mtp.yaml").write_text("m:\n  thinking_on:\n    1: 2.5\n")
    with pytest.raises(SchemaError, match=r"bad_mtp\.yaml:3: m\.thinking_on\.1: AL must be in \[1, 2\]"):
        load_store(tmp_path)


def test_import_legacy_reproduces_the_shipped_curves(tmp_path: Path) -> None:
    sys.path.insert(0, str(REPO / "experiments" / "import-inferencex-curves"))
    from import_legacy import convert_file, load_metadata
    from import_legacy import main as import_main

    meta = load_metadata(METADATA)
    shipped = {sc.name: sc.curve for sc in load_store().curves}
    for path in HEAD_FILES:
        assert convert_file(path, meta) == shipped[path.stem], path.name
    out = REPO / "golden_al" / "golden" / "curves"
    assert import_main([str(FIXTURES), "--metadata", str(METADATA), "--out", str(out), "--check"]) == 0
    assert import_main([str(FIXTURES), "--metadata", str(METADATA), "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in HEAD_FILES)


_ROUNDTRIP_CORPUS = [  # plain scalars YAML 1.1 (PyYAML) and 1.2 (ruamel) read differently, and what ruamel refuses
    "a: yes", "a: On", "a: off", "a: 012", "a: 0o12", "a: 1_000", "a: 1e3", "a: 1.5e3", "a: 1:30", "a: 0x1F",
    "a: 2026-05-01", "a: .inf", "a: 1.", "a: .5", "b: &x {c: 1}\nd:\n  <<: *x", "a: !!str 1", "%YAML 1.1\n---\na: yes",
    "a: 1\na: 2", "a: 1\n---\nb: 2", "", "a: [[[[[[[[[[1]]]]]]]]]]", "{[1]: 2}", "a: '1'\nb: \"yes\"\nc: -3\nd: 2.50",
    "thinking_on:\n  3: {al: 2.49}\n  4: 2.6\nn: null\nt: true\nm: ~\ns: onward", "a: b: c", "a: 8xB200\nb: 1e",
    "a: 4.05e0", "a: +7\nb: -2.5\nc: 2026", "a: NO\nb: y",
]


@pytest.mark.parametrize("text", _ROUNDTRIP_CORPUS + [p.read_text() for p in sorted(
    (REPO / "golden_al" / "golden" / "curves").glob("*.yaml")) + HEAD_FILES])
def test_the_fast_curve_reader_reads_as_the_round_trip_reader_or_declines(text: str) -> None:
    """Issue 52: curve files are read by libyaml where it reads them as ruamel.yaml does (the same plain data), and
    declined (None: the round-trip reader reads them) wherever YAML 1.1 and 1.2 may differ or ruamel refuses."""
    from golden_al.errors import UnreadableInputError
    from golden_al.golden.schema import to_plain
    from golden_al.safeio import load_yaml_as_roundtrip, load_yaml_roundtrip

    fast = load_yaml_as_roundtrip(text)
    try:
        slow = to_plain(load_yaml_roundtrip(text))
    except UnreadableInputError:
        assert fast is None
        return
    assert fast is None or fast == slow
    assert fast is not None or text in _ROUNDTRIP_CORPUS  # committed curves take the fast path


def test_loading_the_store_needs_no_round_trip_reader() -> None:
    """The store loads its curves without importing ruamel.yaml (a tenth of select's start-up)."""
    import subprocess

    code = "import sys; from golden_al.golden import load_store; load_store(); print('ruamel' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert done.stdout.strip() == "False"


def test_read_al_table_reads_plain_curves_and_raises_specific_errors(tmp_path: Path) -> None:
    """``draft-lengths --curve-file``'s reader lives with the curve files: K=AL lines, a ``{K: AL}`` mapping (also
    JSON's string keys), a golden file picked by model and mode; each refusal is a specific error, never UsageError."""
    from golden_al.golden import parse_al_pairs, read_al_table

    (lines := tmp_path / "c.txt").write_text("# k=AL\n1=1.83\n2: 2.43\n")
    assert read_al_table(lines) == {1: 1.83, 2: 2.43}
    (mapping := tmp_path / "c.json").write_text('{"1": 1.83, "2": 2.43}')
    assert read_al_table(mapping) == {1: 1.83, 2: 2.43}
    (bad := tmp_path / "bad.txt").write_text("1=1.8\n2=abc\n")
    with pytest.raises(SchemaError, match="not a number") as err:
        read_al_table(bad)
    assert err.value.line == 2
    assert parse_al_pairs("1=1.83,,2:2.43".split(",")) == {1: 1.83, 2: 2.43}  # --curve's pairs, the same parser
    with pytest.raises(SchemaError, match=r"^malformed entry '1=1\.8;2=2'"):
        parse_al_pairs(["1=1.8;2=2"])
    (both := tmp_path / "m_mtp.yaml").write_text("m:\n  thinking_on: {1: 1.8}\n  thinking_off: {1: 1.7}\n")
    with pytest.raises(AmbiguousCurveError, match="--thinking"):
        read_al_table(both)
    assert read_al_table(both, thinking="off") == {1: 1.7}
    with pytest.raises(NoGoldenValueError, match="no model 'x'"):
        read_al_table(both, model="x")
