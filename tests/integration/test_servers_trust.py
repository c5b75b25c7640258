"""Measurements that trust no server (issue 23): a cell is one server configuration, ``--resume``
reads and checks every cell file before anything is sent, and nothing is appended elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _servers import cli, record, serve_reference, write_prompts

pytestmark = pytest.mark.hostile


@pytest.fixture
def prompts(tmp_path):
    return write_prompts(tmp_path / "prompts.jsonl", 6)


def _args(prompts: Path, url: str, out: Path, *extra: str) -> list[str]:
    return ["measure", "--engine", "sglang", "--server", url, "--draft-len", "3", "--prompts", f"chat-jsonl:{prompts}",
            "--num-prompts", "6", "--max-tokens", "32", "--retries", "0", "--out", str(out), *extra]


def _requests_seen(url: str) -> float:
    """Finished requests the (SGLang-flavoured) server counted: ``sglang:num_requests_total``."""
    import httpx

    from golden_al.engines import sglang

    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(sglang.METRIC_NUM_REQUESTS))


def test_a_resume_against_another_draft_method_is_refused_naming_both(tmp_path, prompts, capsys):
    """Killed after some requests, the server comes back with another algorithm at the same k and name."""
    out = tmp_path / "cell"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--algorithm", "standalone"],
                         tmp_path / "a.log") as url:
        assert cli(_args(prompts, url, out), capsys)[0] == 0
    lines = (out / "requests.jsonl").read_text().splitlines()
    (out / "requests.jsonl").write_text("\n".join(lines[:3]) + "\n")  # as if killed after 3 requests
    (out / "measurement.json").unlink()
    log = tmp_path / "b.log"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--algorithm", "eagle"], log) as url:
        code, _, err = cli(_args(prompts, url, out, "--resume"), capsys)
    assert code == 2, err
    assert "the server is not the one measured before" in err
    assert "draft_method: was 'standalone', now 'eagle'" in err
    assert len((out / "requests.jsonl").read_text().splitlines()) == 3  # nothing appended


def test_a_resume_with_a_garbage_line_is_refused_before_any_request(tmp_path, prompts, capsys):
    out = tmp_path / "cell"
    out.mkdir()
    (out / "requests.jsonl").write_text("this is not a result\n")
    log = tmp_path / "s.log"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], log) as url:
        code, _, err = cli(_args(prompts, url, out, "--resume"), capsys)
        seen = _requests_seen(url)
    assert code == 2, err
    assert "requests.jsonl:1" in err
    assert seen == 0  # nothing was sent
    assert (out / "requests.jsonl").read_text() == "this is not a result\n"  # nothing appended


def test_a_requests_file_linked_out_of_out_is_refused(tmp_path, prompts, capsys):
    out = tmp_path / "cell"
    out.mkdir()
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text("")
    (out / "requests.jsonl").symlink_to(elsewhere)
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "s.log") as url:
        code, _, err = cli(_args(prompts, url, out, "--resume"), capsys)
    assert code == 2, err
    assert "outside" in err
    assert elsewhere.read_text() == ""


def test_a_torn_last_line_is_still_redone(tmp_path, prompts, capsys):
    """A crash mid-write leaves a last line without its newline: that one is cut and redone, nothing else."""
    out = tmp_path / "cell"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "a.log") as url:
        assert cli(_args(prompts, url, out), capsys)[0] == 0
        first = record(out)
        lines = (out / "requests.jsonl").read_text().splitlines()
        (out / "requests.jsonl").write_text("\n".join(lines[:4]) + "\n" + lines[4][: len(lines[4]) // 2])
        (out / "measurement.json").unlink()
        code, _, err = cli(_args(prompts, url, out, "--resume"), capsys)
    assert code == 0, err
    again = record(out)
    assert (again["num_verify_steps"], again["num_requests"]) == (first["num_verify_steps"], 6)
    assert json.loads((out / "cell.json").read_text())["fingerprint"]["server_identity"][0]["draft_method"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("fault", "code", "said"), [
    ("redirect", 2, "redirect to http://127.0.0.1:9/elsewhere"),
    ("claim-all", 1, "emit"),                       # every draft accepted: more tokens than generated
    ("tokens-1", 1, "generated 1"),                 # completion_tokens: 1 with many verify steps
    ("claim-all-no-usage", 1, "carry no completion token count"),  # issue 38: the check was skipped (AL 4.000)
    ("tokens-text", 1, "usage.completion_tokens is "),  # issue 38: a count sent as a string skipped the check
    ("fewer-drafts+", 1, "proposed drafts"),  # drafts k-1 on every request while /server_info says k
    ("no-proposed", 1, "no proposed-draft count (spec_num_proposed_drafts)"),  # issue 38: k went unchecked
    ("gzip-bomb", 2, "inflates (gzip) to more than 1,048,576 bytes"),  # issue 38: 1 KB on the wire, 64 MiB inflated
    ("duplicate-usage", 2, "the key 'usage' twice"),  # issue 38: the second, lying count was the one read
    ("model-swap", 1, "the server changed (or another one answered) during the run"),  # issue 38: never read
    ("no-model", 1, "the answer's model is None"),
    ("list", 2, "answered a JSON list"),
    ("endless", 2, "more than 1,048,576 bytes"),
    ("trickle", 1, "timed out: no complete answer within 2 s"),
])
def test_a_lying_or_endless_server_is_refused_and_nothing_is_recorded(tmp_path, prompts, capsys, fault, code, said):
    out = tmp_path / "cell"
    spec = f"{fault[:-1]}@1+" if fault.endswith("+") else f"{fault}@2"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--fault", spec],
                         tmp_path / "s.log") as url:
        got, _, err = cli(_args(prompts, url, out, "--request-timeout", "2", "--max-response-bytes", "1M"), capsys)
    assert got == code, err
    assert said in err
    assert not (out / "measurement.json").exists()
    rows = (out / "requests.jsonl").read_text().splitlines() if (out / "requests.jsonl").exists() else []
    assert all(json.loads(r)["index"] != 1 for r in rows)  # request 2 (prompt 1) never recorded


def test_synthetic_acceptance_hidden_in_a_string_is_refused(tmp_path, prompts, capsys):
    """A launch command line or an environment list in what the server reports, not only its keys."""
    log = tmp_path / "s.log"
    log.write_text("started: python -m sglang.launch_server --model-path m  env=['SGLANG_SIMULATE_ACC_LEN=2.5']\n")
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "server.log") as url:
        code, _, err = cli(_args(prompts, url, tmp_path / "cell", "--server-log", str(log)), capsys)
    assert code == 2, err
    assert "SGLANG_SIMULATE_ACC_LEN=2.5" in err


def test_one_server_log_per_server(tmp_path, prompts, capsys):
    log = tmp_path / "s.log"
    log.write_text("")
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "a.log") as a, \
            serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "b.log") as b:
        code, _, err = cli([*_args(prompts, a, tmp_path / "cell", "--server-log", str(log)), "--server", b], capsys)
    assert code == 2, err
    assert "1 --server-log for 2 --server" in err


def test_a_server_that_changes_mid_run_is_not_recorded(tmp_path, prompts, capsys):
    """Issue 38: the probe is repeated after the last unit; a server restarted on another release is refused."""
    out = tmp_path / "cell"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--fault", "upgrade@3"],
                         tmp_path / "s.log") as url:
        code, _, err = cli(_args(prompts, url, out), capsys)
    assert code == 1, err
    assert "changed during the run: version 'golden-al-reference' -> 'golden-al-reference+upgraded'" in err
    assert not (out / "measurement.json").exists()
    assert len((out / "requests.jsonl").read_text().splitlines()) == 6  # the rows stay, for the reviewer


def test_the_record_says_which_checks_ran(tmp_path, prompts, capsys):
    """Issue 38: a record lists the guards that passed, with how often; each one ran on every unit."""
    out = tmp_path / "cell"
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "s.log") as url:
        code, stdout, err = cli(_args(prompts, url, out), capsys)
    assert code == 0, err
    assert "checks passed: " in stdout
    assert "completion-tokens x6" in stdout
    checks = json.loads((out / "measurement.json").read_text())["checks"]
    assert checks["completion-tokens"] == 6
    for per_unit in ("k-bound", "proposed-exact", "tokens-upper-bound", "tokens-lower-bound"):
        assert checks[per_unit] == 6, per_unit
    assert checks["server-unchanged-at-end"] == 1
    assert checks["lossless-thresholds"] == 2  # at the start and again at the end
    assert checks["synthetic-off"] >= 2


def _word_tokenizer(path: Path) -> Path:
    """A word-level tokenizer folder for the fake engine's text (one word ``wN`` per generated token), with a
    chat template (``--tokenizer`` also renders the prompts)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    path.parent.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.WordLevel({f"w{i}": i for i in range(997)} | {"[UNK]": 997}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(path))
    (path.parent / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast",
        "chat_template": "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"}))
    return path.parent


def test_counts_inflated_with_the_claim_are_found_by_re_tokenizing_the_text(tmp_path, prompts, capsys):
    """Issue 38: a server that claims every draft and raises its token counts to match passes every count check;
    the text it wrote, re-tokenized (--tokenizer), does not grow with the lie."""
    tokenizer = _word_tokenizer(tmp_path / "tok" / "tokenizer.json")
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3", "--fault", "inflate-usage@1+"],
                         tmp_path / "s.log") as url:
        code, _, err = cli(_args(prompts, url, tmp_path / "blind"), capsys)
        assert code == 0, err  # without the text as evidence the lie is consistent: AL k + 1 recorded
        assert json.loads((tmp_path / "blind" / "measurement.json").read_text())["al"] == pytest.approx(4.0)
        code, _, err = cli(_args(prompts, url, tmp_path / "cell", "--tokenizer", str(tokenizer), "--retokenize"),
                           capsys)
    assert code == 1, err
    assert "completion tokens, but the answer's text re-tokenizes to" in err
    assert not (tmp_path / "cell" / "measurement.json").exists()


def test_an_honest_server_passes_the_re_tokenized_count(tmp_path, prompts, capsys):
    tokenizer = _word_tokenizer(tmp_path / "tok" / "tokenizer.json")
    with serve_reference(["--flavor", "sglang", "--fake", "--draft-len", "3"], tmp_path / "s.log") as url:
        code, _, err = cli(_args(prompts, url, tmp_path / "cell", "--tokenizer", str(tokenizer), "--retokenize"),
                           capsys)
    assert code == 0, err
    checks = json.loads((tmp_path / "cell" / "measurement.json").read_text())["checks"]
    assert checks["tokens-retokenized"] == 6


def test_a_tokenizer_that_is_not_there_is_refused_before_any_request(tmp_path, prompts, capsys):
    code, _, err = cli(_args(prompts, "http://127.0.0.1:9", tmp_path / "cell", "--tokenizer", str(tmp_path),
                             "--retokenize"), capsys)
    assert code == 2
    assert f"{tmp_path}" in err
    assert "tokenizer" in err
    code, _, err = cli(_args(prompts, "http://127.0.0.1:9", tmp_path / "cell2", "--retokenize"), capsys)
    assert code == 2
    assert "--retokenize needs --tokenizer" in err
