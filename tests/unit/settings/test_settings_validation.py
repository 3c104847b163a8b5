"""Every setting has a range, checked at start-up: a bad value stops the service with a message
naming the variable, the value and what it may be, instead of a ready service whose searches fail."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from click.testing import CliRunner

from searchsvc import create_app
from searchsvc.cli import main
from searchsvc.core.errors import ConfigurationError
from searchsvc.settings import Settings, load_settings
from searchsvc.settings.rules import Integer
from tests.helpers.paths import REPO
from tests.helpers.servers import gunicorn_refusing

INTEGER_SETTINGS = [f for f in dataclasses.fields(Settings) if isinstance(f.metadata["rule"], Integer)]


def variable(name: str) -> str:
    return f"SEARCHSVC_{name.upper()}"


def refusal(environ: dict[str, str]) -> str:
    with pytest.raises(ConfigurationError) as refused:
        load_settings(environ=environ)
    return refused.value.message


def test_every_setting_declares_what_it_may_be() -> None:
    for f in dataclasses.fields(Settings):
        assert f.metadata["why"] and str(f.metadata["rule"]), f.name
        assert f.metadata["rule"].read(f.default) == f.default, f"the default of {f.name} is outside its range"


@pytest.mark.parametrize("setting", INTEGER_SETTINGS, ids=lambda f: f.name)
def test_an_integer_setting_outside_its_range_or_not_a_number_is_refused(setting: dataclasses.Field) -> None:
    rule: Integer = setting.metadata["rule"]
    name = variable(setting.name)
    allowed = f"must be an integer from {rule.low} to {rule.high}"
    for value in (str(rule.low - 1), str(rule.high + 1), "ten", "1.5", "", "9" * 40):
        assert refusal({name: value}) == f"{name}={value}: {allowed}"
    for value in (rule.low, rule.high):  # the ends of the range are allowed (unless another setting forbids)
        try:
            assert getattr(load_settings(environ={name: str(value)}), setting.name) == value
        except ConfigurationError as exc:
            assert "must not exceed" in exc.message


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("index_dir", "", "must be a non-empty path"),
        ("index_dir", "   ", "must be a non-empty path"),
        ("sources", "", "must be one or more non-empty paths"),
        ("sources", "seeds::more", "must be one or more non-empty paths"),
        ("semantic_ranking", "maybe", "must be true or false"),
        ("opensearch_verify_certs", "", "must be true or false"),
        ("backend", "elastic", "must be one of whoosh, opensearch"),
        ("opensearch_url", "", "must be one or more http:// or https:// URLs"),
        ("opensearch_url", "ftp://cluster:9200", "must be one or more http:// or https:// URLs"),
        ("opensearch_url", "http://cluster:port", "must be one or more http:// or https:// URLs"),
        ("opensearch_index", "", "must be lowercase letters"),
        ("opensearch_index", "Papers/../x", "must be lowercase letters"),
    ],
)
def test_other_settings_outside_what_they_may_be_are_refused(name: str, value: str, allowed: str) -> None:
    assert refusal({variable(name): value}).startswith(f"{variable(name)}={value}: {allowed}")


def test_a_misspelt_variable_is_refused_naming_the_closest_setting() -> None:
    assert refusal({"SEARCHSVC_MAX_PER_PAG": "5"}) == (
        "SEARCHSVC_MAX_PER_PAG is not a setting: did you mean SEARCHSVC_MAX_PER_PAGE?"
    )
    assert "SEARCHSVC_INDEXDIR is not a setting: did you mean SEARCHSVC_INDEX_DIR?" == refusal(
        {"SEARCHSVC_INDEXDIR": "x"}
    )
    assert "`searchsvc settings` lists every setting" in refusal({"SEARCHSVC_ZZZ": "1"})
    assert load_settings(environ={"SEARCHSVC_CONFIG": str(REPO / "config" / "searchsvc.toml")})  # not a setting, known


def test_a_misspelt_key_in_the_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "searchsvc.toml"
    config.write_text("max_per_pgae = 10\n", encoding="utf-8")
    message = refusal({"SEARCHSVC_CONFIG": str(config)})
    assert message == f"max_per_pgae in {config} is not a setting: did you mean max_per_page?"
    config.write_text("max_per_page = -1\n", encoding="utf-8")
    expected = f"max_per_page=-1 in {config}: must be an integer from 1 to 1000"
    assert refusal({"SEARCHSVC_CONFIG": str(config)}) == expected


def test_settings_that_depend_on_each_other_are_checked_together() -> None:
    assert refusal({"SEARCHSVC_DEFAULT_PER_PAGE": "200"}) == (
        "SEARCHSVC_DEFAULT_PER_PAGE=200 is more than max_per_page=100 (default): "
        "default_per_page must not exceed max_per_page"
    )
    message = refusal({"SEARCHSVC_MAX_PER_PAGE": "500", "SEARCHSVC_MAX_RESULT_WINDOW": "100"})
    assert message.startswith("SEARCHSVC_MAX_PER_PAGE=500 is more than SEARCHSVC_MAX_RESULT_WINDOW=100")
    assert load_settings(environ={"SEARCHSVC_MAX_PER_PAGE": "500", "SEARCHSVC_DEFAULT_PER_PAGE": "500"})


def test_the_app_factory_refuses_to_start(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SEARCHSVC_MAX_PER_PAGE", "-1")
    with pytest.raises(ConfigurationError, match=r"SEARCHSVC_MAX_PER_PAGE=-1: must be an integer from 1 to 1000"):
        create_app({"index_dir": tmp_path})


@pytest.mark.parametrize("command", [["settings"], ["rebuild"], ["serve"], ["status"], ["search", "x"]])
def test_every_command_stops_with_one_line_and_exit_status_2(command: list[str], tmp_path: Path) -> None:
    env = {"SEARCHSVC_RELATED_PAPERS": "-1", "SEARCHSVC_INDEX_DIR": str(tmp_path / "index")}
    result = CliRunner().invoke(main, command, env=env)
    assert result.exit_code == 2, result.output
    assert result.stderr == "error: SEARCHSVC_RELATED_PAPERS=-1: must be an integer from 1 to 100\n"
    assert not (tmp_path / "index").exists(), "nothing was built"


def test_gunicorn_stops_before_any_worker_boots(tmp_path: Path) -> None:
    result = gunicorn_refusing(SEARCHSVC_SEARCH_TIME_LIMIT_MS="0", PORT="0", HOST="127.0.0.1")
    assert result.returncode == 2, result.stderr
    assert "error: SEARCHSVC_SEARCH_TIME_LIMIT_MS=0: must be an integer from 10 to 30000" in result.stderr
    assert "Traceback" not in result.stderr and "Booting worker" not in result.stderr


def test_settings_never_prints_the_password() -> None:
    env = {
        "SEARCHSVC_OPENSEARCH_PASSWORD": "hunter2-secret",
        "SEARCHSVC_OPENSEARCH_URL": "https://svc:url-secret@search-1:9200,http://search-2:9200",
    }
    result = CliRunner().invoke(main, ["settings"], env=env)
    assert result.exit_code == 0, result.output
    assert "hunter2-secret" not in result.output and "url-secret" not in result.output
    assert "opensearch_password = (set)" in result.output
    assert "https://svc:***@search-1:9200, http://search-2:9200" in result.output
    assert "allowed: an integer from 1 to 1000" in result.output  # each setting says what it may be


def test_a_refused_secret_is_not_echoed() -> None:
    message = refusal({"SEARCHSVC_OPENSEARCH_URL": "ftp://svc:url-secret@search-1"})
    assert "url-secret" not in message and "ftp://svc:***@search-1" in message


# Write tokens: only hashes, checked line by line at start-up ---------------------------

HASH = "a" * 64


def tokens_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "write-tokens"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_tokens_file_is_read_with_comments_and_blank_lines(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, f"# writers\n\nci-bot:{HASH}   # the nightly import\nalice@example.org:{'b' * 64}\n")
    settings = load_settings(environ={"SEARCHSVC_WRITE_TOKENS_FILE": str(path)})
    assert [writer.name for writer in settings.write_tokens()] == ["ci-bot", "alice@example.org"]
    assert settings.write_tokens()[0].digest == bytes.fromhex(HASH)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("ci-bot", "expected NAME:SHA256"),
        (f"ci bot:{HASH}", "'ci bot' is not a token name"),
        (f":{HASH}", "'' is not a token name"),
        ("ci-bot:abc123", "the hash of 'ci-bot' is not 64 lowercase hex digits"),
        (f"ci-bot:{HASH.upper()}", "the hash of 'ci-bot' is not 64 lowercase hex digits"),
        (f"ci-bot:{HASH}:extra", "the hash of 'ci-bot' is not 64 lowercase hex digits"),
    ],
)
def test_a_malformed_tokens_file_line_stops_the_start_naming_file_and_line(
    tmp_path: Path, line: str, problem: str
) -> None:
    path = tokens_file(tmp_path, f"# writers\nfirst:{HASH}\n{line}\n")
    message = refusal({"SEARCHSVC_WRITE_TOKENS_FILE": str(path)})
    assert message.startswith(f"SEARCHSVC_WRITE_TOKENS_FILE={path}: {path}:3: {problem}"), message


def test_a_tokens_file_that_is_missing_or_not_text_stops_the_start(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert "cannot be read" in refusal({"SEARCHSVC_WRITE_TOKENS_FILE": str(missing)})
    binary = tmp_path / "binary"
    binary.write_bytes(f"ok:{HASH}\n".encode() + b"\xff\xfe\n")
    assert refusal({"SEARCHSVC_WRITE_TOKENS_FILE": str(binary)}).endswith(f"{binary}:2: not UTF-8 text")


def test_write_token_hashes_are_checked_never_shown_and_names_are_unique(tmp_path: Path) -> None:
    message = refusal({"SEARCHSVC_WRITE_TOKEN_HASHES": f"ok:{HASH},bad:{'c' * 63}"})
    assert message.startswith("SEARCHSVC_WRITE_TOKEN_HASHES=(hidden): entry 2: the hash of 'bad'")
    assert "c" * 63 not in message
    path = tokens_file(tmp_path, f"ci-bot:{HASH}\n")
    twice = refusal({"SEARCHSVC_WRITE_TOKENS_FILE": str(path), "SEARCHSVC_WRITE_TOKEN_HASHES": f"ci-bot:{'b' * 64}"})
    assert "'ci-bot' is given twice" in twice
    settings = load_settings(environ={"SEARCHSVC_WRITE_TOKEN_HASHES": f"one:{HASH}, two:{'b' * 64}"})
    assert [writer.name for writer in settings.write_tokens()] == ["one", "two"]
    result = CliRunner().invoke(main, ["settings"], env={"SEARCHSVC_WRITE_TOKEN_HASHES": f"one:{HASH}"})
    assert result.exit_code == 0 and HASH not in result.output and "write_token_hashes = (set)" in result.output


def test_gunicorn_stops_on_a_malformed_tokens_file(tmp_path: Path) -> None:
    path = tokens_file(tmp_path, "ci-bot:not-a-hash\n")
    result = gunicorn_refusing(SEARCHSVC_WRITE_TOKENS_FILE=str(path), PORT="0", HOST="127.0.0.1")
    assert result.returncode == 2, result.stderr
    assert f"{path}:1: the hash of 'ci-bot' is not 64 lowercase hex digits" in result.stderr
    assert "Traceback" not in result.stderr and "Booting worker" not in result.stderr


def test_meaning_candidates_are_a_bounded_count_on_either_engine() -> None:
    assert "SEARCHSVC_MEANING_CANDIDATES" in refusal({variable("meaning_candidates"): "1001"})
    for backend in ("whoosh", "opensearch"):
        environ = {variable("backend"): backend, variable("meaning_candidates"): "100"}
        assert load_settings(environ=environ).meaning_candidates == 100
